"""bench_learning's arms, with a fake daemon (no server, no model): training tries until the
checker verifies an attempt right, a teacher arm that trains with one model and scores the
held-out variants with another, and the table and summary lines they print."""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import bench_learning  # noqa: E402  (a bench script's module, found on the path above)
from learning_tasks import split  # noqa: E402

STUDENT, TEACHER = "local/smollm2", "local/qwen2.5-coder-0.5b"


class FakeDaemon:
    """Runs a session by asking `solves(model, kwargs)` whether its answer is right: the right
    answer is the task's expected value, a wrong one is None. Records every session's model
    and the request fields it ran with, and every verdict."""

    def __init__(self, solves: Any) -> None:
        self.solves = solves
        self.sessions: list[tuple[str, str, dict[str, Any]]] = []  # (prompt, model, kwargs)
        self.verdicts: list[tuple[str, bool, str]] = []
        self.expected: dict[str, Any] = {}
        self.host = SimpleNamespace(model_kwargs={"cache_prompt": False})
        self.admission = SimpleNamespace(create_session=self._create)
        self.runs = SimpleNamespace(wait=self._wait)
        self.answers = SimpleNamespace(answer_bytes=self._answer_bytes)
        self.learner = SimpleNamespace(verify=self._verify)
        self.harness = SimpleNamespace(list=lambda kind: ([], None))
        self._answers: dict[str, Any] = {}

    async def _create(self, request: Any) -> dict[str, Any]:
        sid = f"s{len(self.sessions)}"
        kwargs = dict(self.host.model_kwargs)
        self.sessions.append((request.prompt, request.model, kwargs))
        right = self.solves(request.model, kwargs)
        self._answers[sid] = self.expected[request.prompt] if right else None
        return {"id": sid}

    async def _wait(self, sid: str, timeout: Any) -> dict[str, Any]:
        return {"state": "DONE", "has_answer": True}

    async def _answer_bytes(self, sid: str) -> bytes:
        return pickle.dumps(self._answers[sid])

    async def _verify(self, sid: str, *, correct: bool, by: str) -> dict[str, Any]:
        self.verdicts.append((sid, correct, by))
        return {"refused": "a fake learns nothing"}


def daemon_for(families: list[str], solves: Any) -> FakeDaemon:
    daemon = FakeDaemon(solves)
    for family in families:
        for task in [*split(family)[0], *split(family)[1]]:
            daemon.expected[task.prompt] = task.expected
    return daemon


async def test_training_tries_until_an_attempt_is_verified_right() -> None:
    # Right only when sampled with seed 2: the third try.
    daemon = daemon_for(["strings"], lambda model, kw: kw.get("seed") == 2)
    sessions, learned, counts = await bench_learning.train(
        daemon, STUDENT, ["strings"], 4, quiet=True
    )
    variants = len(split("strings")[0])
    assert counts["tries"] == [3] * variants and counts["solved"] == [True] * variants
    assert (counts["attempts"], counts["right"], counts["wrong"]) == (
        3 * variants,
        variants,
        2 * variants,
    )
    assert len(sessions["strings"]) == 3 * variants and learned == []
    # The first try runs as the held-out passes do; the others sample, each with its own seed.
    first, second, third = (kw for _, _, kw in daemon.sessions[:3])
    assert first == {"cache_prompt": False}
    assert second == {"cache_prompt": False, "temperature": 0.7, "seed": 1}
    assert third["seed"] == 2
    assert daemon.host.model_kwargs == {"cache_prompt": False}  # restored after each
    assert all(by == bench_learning.CHECKER for _, _, by in daemon.verdicts)
    assert [ok for _, ok, _ in daemon.verdicts] == [False, False, True] * variants


async def test_a_variant_never_right_stops_after_its_tries() -> None:
    daemon = daemon_for(["lists"], lambda model, kw: False)
    _, _, counts = await bench_learning.train(daemon, STUDENT, ["lists"], 2, quiet=True)
    assert counts["tries"] == [2, 2, 2] and counts["solved"] == [False] * 3
    assert counts["wrong"] == counts["attempts"] == 6
    line = bench_learning.training_line("self", counts)
    assert "6 attempts at 3 variants" in line and "0 of 3 variants solved" in line


def args(**given: Any) -> argparse.Namespace:
    defaults = {
        "model": STUDENT,
        "teacher": None,
        "no_self": False,
        "families": ["word problems"],
        "train_tries": 2,
        "json": True,
    }
    return argparse.Namespace(**{**defaults, **given})


def test_arms_in_order() -> None:
    assert bench_learning.arms(args()) == [("self", STUDENT)]
    both = bench_learning.arms(args(teacher=TEACHER))
    assert both == [("self", STUDENT), ("teacher", TEACHER)]
    assert bench_learning.arms(args(teacher=TEACHER, no_self=True)) == [("teacher", TEACHER)]
    assert bench_learning.arms(args(no_self=True)) == []


async def test_the_teacher_arm_trains_with_the_teacher_and_scores_the_student() -> None:
    # The teacher is always right, the student never: the held-out passes must be the student's.
    daemon = daemon_for(["word problems"], lambda model, kw: model == TEACHER)
    daemon.host.model_kwargs = bench_learning.run_kwargs(STUDENT)
    phases: dict[str, Any] = {}
    answers: dict[str, list[str]] = {}
    sessions, counts = await bench_learning.learning_arm(
        daemon, args(teacher=TEACHER), "teacher", TEACHER, phases, answers
    )
    held_out = len(split("word problems")[1])
    trained = [m for _, m, _ in daemon.sessions[: len(split("word problems")[0])]]
    assert trained == [TEACHER] * 3 and counts["model"] == TEACHER
    assert counts["tries"] == [1, 1, 1] and counts["right"] == 3
    scored = [m for _, m, _ in daemon.sessions[3:]]
    assert scored == [STUDENT] * (2 * held_out)
    assert phases["teacher"] == phases["teacher rollback"] == {"word problems": [False] * 3}
    assert len(answers["teacher"]) == len(answers["teacher rollback"]) == held_out
    assert len(sessions["word problems"]) == 3
    assert daemon.host.model_kwargs == {"cache_prompt": False}


def test_the_table_and_a_line_per_arm() -> None:
    result = {
        "model": STUDENT,
        "teacher": TEACHER,
        "phases": {
            "before": {"strings": [False, False, False], "lists": [False, False, False]},
            "after": {"strings": [False, False, False], "lists": [False, False, False]},
            "rollback": {"strings": [False, False, False], "lists": [False, False, False]},
            "teacher": {"strings": [True, True, False], "lists": [False, False, False]},
            "teacher rollback": {"strings": [False, False, False], "lists": [False] * 3},
        },
    }
    lines = bench_learning.table(result)
    assert lines[0].split() == [
        "family", "before", "after", "rolled", "back", "after", "teacher", "rolled", "back"
    ]  # fmt: skip
    assert lines[1].split() == ["strings", "0/3", "0/3", "0/3", "2/3", "0/3"]
    assert lines[-1].split() == ["total", "0/6", "0/6", "0/6", "2/6", "0/6"]
    assert bench_learning.summaries(result) == [
        f"held-out: before 0/6, after 0/6, after rollback 0/6 (model {STUDENT})",
        f"held-out: before 0/6, after 2/6, after rollback 0/6 (model {STUDENT}, teacher {TEACHER})",
    ]
    del result["phases"]["after"], result["phases"]["rollback"]  # --no-self
    assert len(bench_learning.summaries(result)) == 1
