"""Session states and the transitions the daemon allows between them."""

from __future__ import annotations

from enum import Enum


class SessionState(str, Enum):
    ADMITTED = "ADMITTED"
    RUNNING = "RUNNING"
    IDLE = "IDLE"
    INACTIVE = "INACTIVE"
    DONE = "DONE"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({SessionState.DONE, SessionState.FAILED, SessionState.CANCELLED})

_ALLOWED: dict[SessionState, frozenset[SessionState]] = {
    SessionState.ADMITTED: frozenset({SessionState.RUNNING, *TERMINAL}),
    SessionState.RUNNING: frozenset({SessionState.IDLE, *TERMINAL}),
    SessionState.IDLE: frozenset({SessionState.RUNNING, SessionState.INACTIVE, *TERMINAL}),
    SessionState.INACTIVE: frozenset({SessionState.RUNNING, SessionState.IDLE, *TERMINAL}),
}


class InvalidTransition(RuntimeError):
    pass


def check_transition(old: SessionState, new: SessionState) -> None:
    if new not in _ALLOWED.get(old, frozenset()):
        raise InvalidTransition(f"session cannot go from {old.value} to {new.value}")
