"""Goals (daemon/goals.py) over an in-memory registry: set, progress, done and clear, each an
event; a person's change told to the model, its own not; bad input refused where it is made;
and the goal as the model sees it, after the stored conversation, never in it."""

from __future__ import annotations

from typing import Any

import pytest

from prime_kernel.daemon.goals import USER, Goals
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.session import LiveSession
from prime_kernel.protocol.errors import Conflict, InvalidRequest, TooLarge
from prime_kernel.protocol.states import SessionState
from tests.daemon.conftest import FakeEvents, agent_record


def world(**settings: Any) -> tuple[Goals, FakeEvents, LiveSession]:
    registry = SessionRegistry()
    record = registry.add(agent_record("s1"), lambda sid, fields: None)
    live = registry.live[record.id] = LiveSession(record)
    events = FakeEvents()
    return Goals(registry, events, **settings), events, live  # type: ignore[arg-type]


def test_a_goal_set_worked_on_and_done_by_the_session_itself() -> None:
    goals, events, live = world(max_progress=2)
    record = live.record
    goals.change(record, {"text": "  ship the report  "}, "s1")
    for note in ("outline", "draft", "figures"):
        goals.change(record, {"progress": note}, "s1")
    assert [p["note"] for p in record.goal["progress"]] == ["draft", "figures"]  # the latest
    assert goals.section(record) == (
        "## Your goal (set by you)\nship the report\nProgress so far:\n- draft\n- figures\n"
        "Work towards this goal; `goal.progress(note)` records progress and "
        "`goal.done(summary)` marks it achieved."
    )
    goals.change(record, {"status": "done", "summary": "sent"}, "s1")
    assert record.goal["status"] == "done" and goals.section(record) is None
    assert [e["event"] for e in events.of("goal")] == [
        "set",
        "progress",
        "progress",
        "progress",
        "done",
    ]
    assert live.notes == []  # its own changes are no news to it


def test_a_persons_change_is_told_to_the_model_and_shown_after_the_conversation() -> None:
    goals, events, live = world()
    record = live.record
    goals.set(record, "find the bug", USER)
    assert live.notes == [
        "[A person set your goal.] Your goal is shown after the latest message on every turn."
    ]
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    prefill = {"role": "assistant", "content": "```python\n"}
    sent = goals.decorate(record, [*messages, prefill], stable=2)
    assert sent[:2] == messages and sent[3] == prefill
    assert sent[2]["content"].startswith("## Your goal (set by a person)\nfind the bug")
    assert goals.clear(record, USER) and not goals.clear(record, USER)
    assert events.of("goal")[-1] == {"event": "cleared", "text": "find the bug", "by": USER}


def test_bad_changes_are_refused_and_change_nothing() -> None:
    goals, events, live = world(max_chars=10)
    record = live.record
    with pytest.raises(Conflict, match="has no goal"):
        goals.change(record, {"progress": "x"}, "s1")
    with pytest.raises(InvalidRequest, match="exactly one of"):
        goals.change(record, {"text": "a", "progress": "b"}, "s1")
    with pytest.raises(InvalidRequest, match="'summary' goes with 'status'"):
        goals.change(record, {"text": "a", "summary": "b"}, "s1")
    with pytest.raises(InvalidRequest, match="must be a string, not int"):
        goals.set(record, 5, "s1")
    with pytest.raises(InvalidRequest, match="must not be empty"):
        goals.set(record, "   ", "s1")
    with pytest.raises(TooLarge, match=r"11 characters; at most 10 \(c.Goals.max_chars\)"):
        goals.set(record, "x" * 11, "s1")
    assert record.goal is None and events.emitted == []
    goals.set(record, "short", "s1")
    record.update(state=SessionState.DONE)
    with pytest.raises(Conflict, match=r"has ended \(DONE\); its goal stays"):
        goals.set(record, "other", "s1")
    assert record.goal["text"] == "short"
