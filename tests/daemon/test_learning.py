"""The Learner over fakes (no server, no kernel, no model) and a harness in a temporary folder:
it reads its own settings (`c.Learner.*`): whether a verdict teaches, how long a worked
example's code may be, how many examples a prompt recalls and how alike they must be."""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from prime_kernel.daemon.learning import Learner
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.harness import Harness
from prime_kernel.protocol.events import EventKind
from prime_kernel.protocol.states import SessionState
from tests.daemon.conftest import agent_record, shared

TASK = "What is the sum of the squares of 1 to 100?"
CELLS = [
    {
        "code": "total = sum(i * i for i in range(1, 101))\nprint(total)",
        "status": "ok",
        "outputs": [{"output_type": "stream", "text": "338350\n"}],
    },
    {"code": "answer(total)", "status": "ok", "outputs": []},
]


class FakeStore:
    def __init__(self, blob_dir: Path | None = None) -> None:
        self.blob_dir = blob_dir

    async def events(self, session_id: str, *, kinds: list[str]) -> list[dict[str, Any]]:
        return [{"kind": "cell", "data": cell} for cell in CELLS]

    def blob_path(self, blob_id: str) -> Path:
        assert self.blob_dir is not None
        return self.blob_dir / f"{blob_id}.pkl"


@pytest.fixture
def harness(tmp_path: Path):
    h = Harness(project_dir=str(tmp_path / "project"), global_dir=str(tmp_path / "global"))
    h.review_policy = "auto"
    yield h
    h.close()


def learner(harness: Harness, **settings: Any) -> Learner:
    """A Learner over one DONE session `s` that answered TASK, with `c.Learner.<settings>`."""
    registry = SessionRegistry()
    done = agent_record("s", prompt=TASK, state=SessionState.DONE, answer_repr="338350")
    registry.add(done, lambda sid, fields: None)
    return Learner(
        shared(registry, store=FakeStore(), spawn=lambda coro, name: coro.close()),
        harness=harness,
        max_turns=lambda: 20,
        scrub=lambda value: value,
        config=Config({"Learner": settings}),
    )


def test_a_verdict_teaches_unless_learning_is_off(harness: Harness) -> None:
    off = learner(harness, learn=False)
    verification = asyncio.run(off.verify("s", correct=True))
    assert verification["correct"] and "learned" not in verification
    assert harness.list("example")[0] == []
    assert [k for _, k, _ in off.events.emitted] == [EventKind.VERIFIED]  # type: ignore[attr-defined]

    on = learner(harness)
    learned = asyncio.run(on.verify("s", correct=True))["learned"]
    assert learned["status"] == "applied" and learned["entry"].startswith("example/")


def test_code_longer_than_the_learners_limit_is_not_learned(harness: Harness) -> None:
    short = learner(harness, max_example_chars=20)
    verification = asyncio.run(short.verify("s", correct=True))
    assert "c.Learner.max_example_chars" in verification["refused"]
    assert harness.list("example")[0] == []


def test_recall_shows_as_many_examples_as_the_learner_says_if_they_cover_enough(
    harness: Harness,
) -> None:
    asyncio.run(learner(harness).verify("s", correct=True))
    alike = agent_record("t", prompt="What is the sum of the squares of 1 to 50?")
    assert [e.outcome for e in learner(harness).recall(alike)] == ["right"]
    assert learner(harness, examples_shown=0).recall(alike) == []
    # Two of its four terms are not the example's, and they weigh more: a sixth is covered.
    loose = agent_record("u", prompt="What is the sum of the squares of odd numbers to 50?")
    assert learner(harness).recall(loose) == []
    assert len(learner(harness, example_min_coverage=0.1).recall(loose)) == 1


def test_a_profile_asks_for_its_own_count_of_examples_within_its_length(
    harness: Harness,
) -> None:
    for n in (50, 60):
        harness.create(
            "example",
            f"squares-{n}",
            title=f"What is the sum of the squares of 1 to {n}?",
            content=f"```python\nanswer(sum(i * i for i in range(1, {n + 1})))\n```\n",
            metadata={"task": f"What is the sum of the squares of 1 to {n}?", "outcome": "right"},
        )
    alike = agent_record("t", prompt="What is the sum of the squares of 1 to 70?")
    assert len(learner(harness).recall(alike)) == 1  # examples_shown
    assert len(learner(harness).recall(alike, shown=2)) == 2
    assert learner(harness, examples_shown=0).recall(alike, shown=2) == []  # none for any model
    assert learner(harness).recall(alike, shown=2, max_chars=20) == []


def test_a_cautions_answer_is_said_to_the_same_task_on_the_same_context_only(
    harness: Harness, tmp_path: Path
) -> None:
    """A sibling asked in the very same words over other data is another task: the wrong answer
    of one can be the right answer of the other (the learning benchmark's CSV variants)."""
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    for blob, rows in (("b1", "name,city\nAda,Paris\n"), ("b2", "name,city\nBen,Lyon\n")):
        (blobs / f"{blob}.pkl").write_bytes(pickle.dumps(rows))
    (blobs / "b3.pkl").write_bytes(pickle.dumps("name,city\nAda,Paris\n"))  # b1's data again
    registry = SessionRegistry()
    wrong = agent_record(
        "s", prompt=TASK, state=SessionState.DONE, answer_repr="1", context_blob="b1"
    )
    registry.add(wrong, lambda sid, fields: None)
    learning = Learner(
        shared(registry, store=FakeStore(blobs), spawn=lambda coro, name: coro.close()),
        harness=harness,
        max_turns=lambda: 20,
        scrub=lambda value: value,
    )
    learned = asyncio.run(learning.verify("s", correct=False))["learned"]
    caution = harness.get("example", learned["entry"].split("/")[1])
    assert len(caution.metadata["context_digest"]) == 16

    def told(sid: str, **fields: Any) -> list[str]:
        return [e.caution() for e in learning.recall(agent_record(sid, prompt=TASK, **fields))]

    # A retry: the same words over the same data (stored again, as a new blob).
    assert told("t", context_blob="b3") == [
        "- This task was answered 1 before: verified wrong. Do not repeat that answer."
    ]
    assert told("u", context_blob="b2") == []  # other data: another task
    assert told("v") == []  # no data at all
    assert told("w", context_blob="gone") == []  # data that cannot be read: not known the same

    # A task without data is the same task in the same words (it replaces the caution above).
    bare = agent_record("x", prompt=TASK, state=SessionState.DONE, answer_repr="2")
    registry.add(bare, lambda sid, fields: None)
    asyncio.run(learning.verify("x", correct=False))
    assert told("v") == [
        "- This task was answered 2 before: verified wrong. Do not repeat that answer."
    ]
    assert told("t", context_blob="b3") == []
