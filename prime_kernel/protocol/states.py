"""Session states, the transitions between them, and session kinds: the lifecycle's vocabulary.

`ADMITTED → RUNNING → IDLE → INACTIVE`, plus the terminal `DONE / FAILED / CANCELLED`. Every
other module (the daemon's lifecycle, the kernel client, the CLI, the panel through the generated
TypeScript) reads the states from here; `check_transition` is the one gate every change passes.
"""

from __future__ import annotations

from enum import Enum


class SessionState(str, Enum):
    ADMITTED = "ADMITTED"  # accepted, waiting for a concurrency slot or a kernel
    RUNNING = "RUNNING"  # the loop is taking turns
    IDLE = "IDLE"  # no turn in progress, kernel alive, waiting for a message or a person
    INACTIVE = "INACTIVE"  # kernel shut down, REPL snapshot on disk; a message revives it
    DONE = "DONE"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    SessionState.ADMITTED: "accepted, waiting for a concurrency slot or a kernel",
    SessionState.RUNNING: "taking turns: model calls and cells",
    SessionState.IDLE: "no turn in progress, kernel alive; a message or a person wakes it",
    SessionState.INACTIVE: "kernel shut down, REPL saved to disk; a message revives it",
    SessionState.DONE: "ended with an answer",
    SessionState.FAILED: "ended without an answer; `error` says why",
    SessionState.CANCELLED: "cancelled by a person or an ancestor",
}

TERMINAL = frozenset({SessionState.DONE, SessionState.FAILED, SessionState.CANCELLED})

TRANSITIONS: dict[SessionState, frozenset[SessionState]] = {
    # -> INACTIVE: a restarted daemon that does not resume work at once (see recovery.py).
    SessionState.ADMITTED: frozenset({SessionState.RUNNING, SessionState.INACTIVE, *TERMINAL}),
    SessionState.RUNNING: frozenset({SessionState.IDLE, SessionState.INACTIVE, *TERMINAL}),
    SessionState.IDLE: frozenset({SessionState.RUNNING, SessionState.INACTIVE, *TERMINAL}),
    SessionState.INACTIVE: frozenset({SessionState.RUNNING, SessionState.IDLE, *TERMINAL}),
}


class InvalidTransition(RuntimeError):
    pass


def check_transition(old: SessionState, new: SessionState) -> None:
    if new not in TRANSITIONS.get(old, frozenset()):
        raise InvalidTransition(f"session cannot go from {old.value} to {new.value}")


class SessionKind(str, Enum):
    """Who drives a session: a model (an agent the daemon runs) or a person's notebook kernel."""

    AGENT = "agent"
    NOTEBOOK = "notebook"
