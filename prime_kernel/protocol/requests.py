"""What starting a session takes, `SessionRequest`, and which sessions a list returns,
`SessionFilter`: each defined once for every side that speaks it.

A person's POST /api/prime/sessions (server/sessions.py), `rlm()` and `rlm.map()` in a kernel
(kernel/primitives.py, through POST /api/prime/kernel/sessions[/batch]), `prime-agent run`
(cli/run.py) and admission in the daemon (daemon/admission.py) all build or read this one
dataclass. The JSON Schemas of the request bodies (schemas/create_session.json,
create_child.json) list the same fields; tests/protocol/test_requests.py keeps them equal.

A list's filters (GET /api/prime/sessions's query) are read from the query by the handler
(server/sessions.py), written into one by the CLI's REST client (cli/sessions.py), and applied by
the daemon (daemon/listing.py, daemon/registry.py) and by the CLI's store reader (cli/offline.py).

They live in the protocol, not in the daemon, because a kernel builds a request too, and a kernel
imports the protocol but never the daemon.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidRequest
from .states import SessionState
from .wire import MAX_INT

# A JSON value given inline (a person's body, the CLI's --context file) instead of an uploaded
# blob: admission pickles and stores it. Kept out of the dataclass's fields so that "no
# context" and "the context None" stay apart: NO_CONTEXT is the former.
NO_CONTEXT: Any = type("NoContext", (), {"__repr__": lambda self: "NO_CONTEXT"})()


@dataclass(frozen=True)
class SessionRequest:
    """A new session's creation arguments (see schemas/create_session.json for each one).

    The context comes one of two ways: `context`, a JSON value given inline, which admission
    pickles and stores; or `context_blob`, the id of a pickle a kernel uploaded first
    (`rlm(context=...)`), with its Python type in `context_type`. `replay`, `until` and
    `subtree` replay an ended session (daemon/replay.py).
    """

    prompt: str | None = None
    model: str | None = None
    name: str | None = None
    budget: dict[str, Any] | None = None
    max_turns: int | None = None
    persistent: bool = False
    subagent: str | None = None
    autonomous: Any = None
    context: Any = NO_CONTEXT
    context_blob: str | None = None
    context_type: str | None = None
    replay: str | None = None
    until: int | None = None
    subtree: bool = False

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> SessionRequest:
        """A request from a JSON body (one its schema checked: no unknown field); a field under
        its old name (`RENAMED`) is read as the new one."""
        fields = dict(body)
        for old, new in RENAMED.items():
            if old in fields:
                if new in fields:
                    raise InvalidRequest(f"give {new!r} only ({old!r} is its deprecated name)")
                warnings.warn(
                    f"the request field {old!r} is deprecated: use {new!r} "
                    "(the old name goes in the next release)",
                    FutureWarning,
                    stacklevel=2,
                )
                fields[new] = fields.pop(old)
        return cls(**fields)

    def to_json(self) -> dict[str, Any]:
        """The request as a JSON body: only the fields it sets (a default is left out)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not f.default and getattr(self, f.name) != f.default
        }

    @property
    def has_context(self) -> bool:
        return self.context is not NO_CONTEXT


FIELDS = tuple(f.name for f in dataclasses.fields(SessionRequest))

# Fields renamed -> their names now: the old name is still accepted in a body (the schemas mark
# it deprecated) for one release.
RENAMED = {"spec": "subagent"}


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions a list returns: those matching every filter given, newest first (the order
    they were admitted in), at most `limit` of them.

    Each field says what it keeps in its metadata's "description" (the generator writes it into
    protocol.ts and docs/reference.md). In a query each is `QUERY[field]`, `state` repeated once
    per state. Made with a bad value, it raises InvalidRequest (a 400 from the API).
    """

    states: frozenset[SessionState] = dataclasses.field(
        default=frozenset(), metadata={"description": "In one of these states (empty: in any)."}
    )
    root_id: str | None = dataclasses.field(
        default=None, metadata={"description": "In the tree of this root (the root included)."}
    )
    parent_id: str | None = dataclasses.field(
        default=None, metadata={"description": "The children of this session."}
    )
    limit: int | None = dataclasses.field(
        default=None, metadata={"description": "At most this many (the newest)."}
    )
    changed_after: int | None = dataclasses.field(
        default=None,
        metadata={
            "description": "Those whose view changed after this `cursor` of an earlier list of "
            "the same `epoch` (see SessionList)."
        },
    )

    def __post_init__(self) -> None:
        # The lowest value each count may take; ints fit SQLite's 64-bit integers.
        for name, low in (("limit", 1), ("changed_after", 0)):
            value = getattr(self, name)
            if value is not None and not (
                isinstance(value, int) and not isinstance(value, bool) and low <= value <= MAX_INT
            ):
                raise InvalidRequest(f"{name} must be an integer from {low} to {MAX_INT}")

    @classmethod
    def from_query(cls, query: Mapping[str, Sequence[str]]) -> SessionFilter:
        """The filter a query asks for (each name's values, as `urllib.parse.parse_qs` gives
        them); an empty value is no filter, a name given twice its last value, other names are
        not ours (ignored)."""

        def last(field: str) -> str | None:
            values = [v.strip() for v in query.get(QUERY[field], ()) if v.strip()]
            return values[-1] if values else None

        def number(field: str) -> int | None:
            value = last(field)
            if value is None:
                return None
            try:
                return int(value)
            except ValueError:
                raise InvalidRequest(
                    f"{QUERY[field]} must be an integer, not {value[:40]!r}"
                ) from None

        names = [v.strip().upper() for v in query.get(QUERY["states"], ()) if v.strip()]
        known = {s.value for s in SessionState}
        bad = [n for n in names if n not in known]
        if bad:
            raise InvalidRequest(
                f"unknown state {bad[0][:40]!r}; a state is one of {', '.join(sorted(known))}"
            )
        return cls(
            states=frozenset(SessionState(n) for n in names),
            root_id=last("root_id"),
            parent_id=last("parent_id"),
            limit=number("limit"),
            changed_after=number("changed_after"),
        )

    def to_query(self) -> str:
        """The filter as a query string (without the `?`): `from_query(parse_qs(it))` is it."""
        pairs = [(QUERY["states"], s.value) for s in sorted(self.states)]
        for field in ("root_id", "parent_id", "limit", "changed_after"):
            value = getattr(self, field)
            if value is not None:
                pairs.append((QUERY[field], str(value)))
        return urllib.parse.urlencode(pairs)


# Each of SessionFilter's fields -> its name in a query (GET /api/prime/sessions, protocol/rest.py).
QUERY = {
    "states": "state",
    "root_id": "root",
    "parent_id": "parent",
    "limit": "limit",
    "changed_after": "changed_after",
}
