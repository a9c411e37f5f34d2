"""What starting a session takes: `SessionRequest`, defined once for every side that speaks it.

A person's POST /api/prime/sessions (server/sessions.py), `rlm()` and `rlm.map()` in a kernel
(kernel/primitives.py, through POST /api/prime/kernel/sessions[/batch]), `prime-agent run`
(cli/run.py) and admission in the daemon (daemon/admission.py) all build or read this one
dataclass. The JSON Schemas of the request bodies (schemas/create_session.json,
create_child.json) list the same fields; tests/protocol/test_requests.py keeps them equal.

It lives in the protocol, not in the daemon, because a kernel builds it too, and a kernel
imports the protocol but never the daemon.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any

from .errors import InvalidRequest

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
