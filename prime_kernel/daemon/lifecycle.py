"""Every state change of every session, and what follows from it, in one place.

`Lifecycle.change` checks the transition against the protocol's table, stamps the record
(`started`, `ended`, `error`, usage), records a `state` event, wakes whoever waits on the
session, and then runs the effects registered for the new state (`on(state, effect)`): the
daemon registers kernel release on the terminal states, idle timers on IDLE, and so on, so no
other module changes a state or repeats its consequences.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from ..protocol.events import EventKind
from ..protocol.states import TERMINAL, SessionState, check_transition
from .accounting import Accounting
from .events import EventLog
from .records import SessionRecord
from .registry import SessionRegistry
from .session import LiveSession

log = logging.getLogger(__name__)

# An effect runs after a session entered a state: (record, live or None, the state it left).
Effect = Callable[[SessionRecord, LiveSession | None, SessionState], None]


class Lifecycle:
    def __init__(self, registry: SessionRegistry, events: EventLog, accounting: Accounting):
        self.registry = registry
        self.events = events
        self.accounting = accounting
        self._effects: dict[SessionState, list[Effect]] = {}

    def on(self, states: SessionState | frozenset[SessionState], effect: Effect) -> None:
        """Run `effect` whenever a session enters `states` (one state, or e.g. TERMINAL)."""
        for state in {states} if isinstance(states, SessionState) else states:
            self._effects.setdefault(state, []).append(effect)

    def change(
        self,
        record: SessionRecord,
        state: SessionState,
        *,
        error: str | None = None,
        reason: str = "",
    ) -> bool:
        """Move `record` to `state`; False (and nothing happens) if it is there already."""
        old = record.state
        if old == state:
            return False
        check_transition(old, state)
        now = time.time()
        fields: dict[str, Any] = {"state": state}
        if state == SessionState.RUNNING and not record.started:
            fields["started"] = now
        if state in TERMINAL:
            fields["ended"] = now
        if error is not None:
            fields["error"] = error
        record.update(**fields)
        record.update(usage=self.accounting.own(record))
        data: dict[str, Any] = {"state": state.value}
        if error or reason:
            data["reason"] = error or reason
        self.events.emit(record, EventKind.STATE, data)
        live = self.registry.live.get(record.id)
        if live is not None and state in TERMINAL:
            live.settled.set()
        for effect in self._effects.get(state, []):
            try:
                effect(record, live, old)
            except Exception:
                log.exception("an effect of %s entering %s failed", record.id, state.value)
        return True
