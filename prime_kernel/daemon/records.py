"""A session's durable record, typed, writing through to the store.

`SessionRecord.update(**fields)` is the only way a record changes: the change is enqueued to the
store first and then applied in memory as the store wrote it (scrubbed of secrets), so the two
never disagree (the store's writer applies writes in order and never drops one; see
`daemon.store`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.states import SessionKind, SessionState

# Writes a record's changed fields; returns them as written (None: as given).
Sink = Callable[[str, dict[str, Any]], "dict[str, Any] | None"]


@dataclass(eq=False)
class SessionRecord:
    id: str
    prompt: str
    state: SessionState
    kind: SessionKind
    root_id: str
    created: float
    name: str = ""
    model: str | None = None
    parent_id: str | None = None
    depth: int = 0
    notebook_path: str | None = None
    kernel_id: str | None = None
    started: float | None = None
    ended: float | None = None
    error: str | None = None
    answer_repr: str | None = None
    answer_blob: str | None = None
    context_blob: str | None = None
    context_type: str | None = None
    budget: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    # What the session works towards (see daemon/goals.py); None: no goal.
    goal: dict[str, Any] | None = None
    # Whether its answer was verified right or wrong, and what was learned (daemon/learning.py).
    verified: dict[str, Any] | None = None
    # Where updates go (the store); None for a record read outside a daemon.
    sink: Sink | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_row(cls, row: dict[str, Any], sink: Sink | None = None) -> SessionRecord:
        known = {f.name for f in dataclasses.fields(cls)} - {"sink"}
        values = {k: v for k, v in row.items() if k in known}
        values["state"] = SessionState(values["state"])
        values["kind"] = SessionKind(values.get("kind") or SessionKind.AGENT)
        values["name"] = values.get("name") or ""
        values["options"] = values.get("options") or {}
        values["usage"] = values.get("usage") or {}
        return cls(**values, sink=sink)

    def adopt(self, row: dict[str, Any]) -> None:
        """Take the values of `row` (this record's row as the store wrote it, scrubbed)."""
        for key in FIELDS:
            if key in row and key not in ("state", "kind"):
                setattr(self, key, row[key])

    def to_row(self) -> dict[str, Any]:
        # Read straight from the instance dict: every list of sessions makes one per record.
        values = self.__dict__
        row = {f: values[f] for f in FIELDS}
        row["state"] = _plain(self.state)
        row["kind"] = _plain(self.kind)
        return row

    def update(self, **fields: Any) -> None:
        """Change fields: written to the store, then here."""
        unknown = set(fields) - set(FIELDS) - {"id"}
        if unknown or "id" in fields:
            raise AttributeError(f"not updatable session fields: {sorted(unknown | {'id'})}")
        if self.sink is not None:
            written = self.sink(self.id, {k: _plain(v) for k, v in fields.items()})
            if written is not None:
                fields = written
        for key, value in fields.items():
            if key == "state":
                value = SessionState(value)
            setattr(self, key, value)

    @property
    def is_agent(self) -> bool:
        return self.kind == SessionKind.AGENT

    @property
    def terminal(self) -> bool:
        return self.state.terminal


FIELDS = tuple(f.name for f in dataclasses.fields(SessionRecord) if f.name != "sink")


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, (SessionState, SessionKind)) else value
