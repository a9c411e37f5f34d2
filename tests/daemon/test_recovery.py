"""What a session is while no daemon runs (`unattended`, what the CLI shows of a stopped
root): an unfinished agent waits INACTIVE to be taken up, a notebook's session ended with its
kernel, and what already ended or rests stays as recorded. Restarts themselves are end to end
(tests/recovery/)."""

from __future__ import annotations

import pytest

from prime_kernel.daemon.recovery import NOTEBOOK_ENDED, unattended
from prime_kernel.protocol.states import TERMINAL, SessionKind, SessionState
from tests.daemon.conftest import agent_record

UNFINISHED = [SessionState.ADMITTED, SessionState.RUNNING, SessionState.IDLE]


@pytest.mark.parametrize("state", UNFINISHED)
def test_an_unfinished_agent_waits_inactive_for_a_daemon(state: SessionState) -> None:
    found = unattended(agent_record("s1", state=state))
    assert found is not None
    now, why = found
    assert now == SessionState.INACTIVE
    assert "`prime-agent resume s1`" in why and "no server runs it" in why


@pytest.mark.parametrize("state", UNFINISHED)
def test_a_notebooks_session_ended_with_its_kernel(state: SessionState) -> None:
    record = agent_record("nb", state=state, kind=SessionKind.NOTEBOOK)
    assert unattended(record) == (SessionState.DONE, NOTEBOOK_ENDED)


@pytest.mark.parametrize("state", [*TERMINAL, SessionState.INACTIVE])
@pytest.mark.parametrize("kind", list(SessionKind))
def test_an_ended_or_resting_session_is_as_recorded(state: SessionState, kind: SessionKind) -> None:
    assert unattended(agent_record("s1", state=state, kind=kind)) is None
