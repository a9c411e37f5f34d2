"""Distilling a verified trajectory into a worked example, and recalling examples (no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prime_kernel.harness import Harness, examples
from prime_kernel.harness.learning import Cell, NotLearned, distill
from prime_kernel.protocol.errors import InvalidEntry

SQUARES = "What is the sum of the squares of 1..100?"


def learn(task: str, cells: list[tuple[str, str, str]], answer: str, **kw: object) -> dict:
    return distill(
        task,
        [Cell(code, status, out) for code, status, out in cells],
        answer_repr=answer,
        correct=bool(kw.pop("correct", True)),
        session_id="s-1",
        verified_by="checker test",
        **kw,  # type: ignore[arg-type]
    )


def code(edit: dict) -> str:
    return examples.code_of(edit["content"])


def test_dead_ends_are_cut_and_what_the_answer_needs_is_kept():
    edit = learn(
        SQUARES,
        [
            ("import csv, math, re, statistics", "ok", ""),
            ("print(context[:10])", "ok", "[1, 2]"),
            ("total = sum(i ** 2 for i in rnge(101))", "error", "NameError"),
            ("%timeit 1", "ok", ""),
            (
                "total = 0\nfor i in range(1, 101):\n    total += i * i\nprint(total)",
                "ok",
                "338350",
            ),
            ("unused = 5\nanswer(total)", "ok", ""),
        ],
        "338350",
    )
    assert code(edit) == "total = 0\nfor i in range(1, 101):\n    total += i * i\nanswer(total)"
    assert edit["op"] == "create" and edit["kind"] == "example"
    meta = edit["metadata"]
    assert meta["task"] == SQUARES and meta["outcome"] == "right" and meta["answer"] == "338350"
    assert meta["learned_from"] == "session s-1" and meta["verified_by"] == "checker test"
    assert edit["reason"] == "learned from session s-1, verified right by checker test"


def test_imports_keep_only_the_names_used():
    edit = learn(
        "What is the median of context?",
        [
            ("import csv, math, re, statistics", "ok", ""),
            ("answer(statistics.median(context))", "ok", ""),
        ],
        "4.5",
    )
    assert code(edit) == "import statistics\nanswer(statistics.median(context))"


def test_a_literal_answer_is_generalised_from_the_cell_that_printed_it():
    edit = learn(
        SQUARES,
        [
            ("print(sum(i * i for i in range(1, 101)))", "ok", "338350\n"),
            ("answer(338350)", "ok", ""),
        ],
        "338350",
    )
    assert code(edit) == "answer(sum((i * i for i in range(1, 101))))"
    assert "generalised" in edit["metadata"]


@pytest.mark.parametrize(
    "cells, why",
    [
        ([("answer(338350)", "ok", "")], "literal (338350)"),
        ([("x = 338350", "ok", ""), ("answer(x)", "ok", "")], "literal (338350)"),
        ([("answer(int('338350'))", "ok", "")], "writes the answer in as a literal"),
        (
            [("import json\nanswer(json.load(open('expected.json'))['q'])", "ok", "")],
            "reads the verifier",
        ),
        ([("answer(open('.prime/prime.sqlite3').read()[:6])", "ok", "")], "reads the verifier"),
        ([("n = mystery(3)", "error", ""), ("answer(n * 2)", "ok", "")], "does not stand alone"),
        ([("print(338350)", "ok", "338350")], "no cell"),
    ],
)
def test_no_learning_to_cheat(cells: list[tuple[str, str, str]], why: str):
    with pytest.raises(NotLearned, match=why.replace("(", r"\(").replace(")", r"\)")):
        learn(SQUARES, cells, "338350")


def test_a_wrong_answer_becomes_a_caution():
    edit = learn(
        SQUARES, [("answer(sum(range(101)))", "ok", "")], "5050", correct=False, note="squares!"
    )
    assert edit["id"].endswith("-wrong") and edit["metadata"]["outcome"] == "wrong"
    assert edit["metadata"]["note"] == "squares!"
    assert "Verified wrong" in edit["content"] and code(edit) == "answer(sum(range(101)))"


def test_the_example_size_is_bounded():
    long = "x = 1\n" + "x += 1\n" * 400 + "answer(x)"
    with pytest.raises(NotLearned, match="max_example_chars"):
        learn("count up", [(long, "ok", "")], "401")


# -- recall ---------------------------------------------------------------------------------
@pytest.fixture
def harness(tmp_path: Path):
    h = Harness(project_dir=str(tmp_path / "project"), global_dir=str(tmp_path / "global"))
    yield h
    h.close()


def recall(h: Harness, task: str, right: int = 1, wrong: int = 1) -> list[examples.Example]:
    """What recall gives a session's prompt with the Learner's default settings."""
    return h.recall(task, right=right, wrong=wrong, min_coverage=0.5)


def example(
    h: Harness, entry_id: str, task: str, body: str, outcome: str = "right", **meta: str
) -> None:
    h.create(
        "example",
        entry_id,
        title=task,
        content=f"```python\n{body}\n```\n",
        metadata={"task": task, "outcome": outcome, "answer": "1", **meta},
    )


# A person's lesson: what makes a caution worth showing to another task than its own.
WHY = "the days between two dates do not count the first day"


def test_recall_ranks_by_bm25_and_needs_coverage(harness: Harness):
    example(harness, "days", "How many days are there between 2024-03-01 and 2024-07-15?", "a")
    example(harness, "vowels", "How many vowels are in 'open source'?", "b")
    example(
        harness,
        "days-wrong",
        "How many days are there between 2023-01-01 and 2023-02-01?",
        "c",
        "wrong",
        note=WHY,
    )
    got = recall(harness, "How many days are there between 2022-05-10 and 2022-09-02?")
    assert [(e.id, e.outcome) for e in got] == [("days", "right"), ("days-wrong", "wrong")]
    assert got[0].code == "a" and got[0].score > 0
    # Nothing like it: nothing recalled (not the least unlike).
    assert recall(harness, "Sort [3, 1, 2] in decreasing order.") == []
    none = recall(harness, "How many days are there between 2022-05-10 and 2022-09-02?", 0, 0)
    assert none == []


def test_recall_passes_over_a_worked_example_longer_than_max_chars(harness: Harness):
    long = "total = 0\n" + "total += 1\n" * 60 + "answer(total)"
    example(
        harness, "days-long", "How many days are there between 2024-03-01 and 2024-07-15?", long
    )
    example(
        harness,
        "days",
        "How many days are there between two dates, 2023-01-01 and 2023-02-01?",
        "a",
    )
    example(
        harness,
        "days-wrong",
        "How many days are there between 2021-01-01 and 2021-02-01?",
        long,
        "wrong",
        note=WHY,
    )
    task = "How many days are there between 2022-05-10 and 2022-09-02?"
    assert [e.id for e in recall(harness, task)] == ["days-long", "days-wrong"]
    # The long one is passed over for the next one; a caution shows no code, so it stays.
    got = harness.recall(task, right=1, wrong=1, min_coverage=0.5, max_chars=len(long) - 1)
    assert sorted((e.id, e.code) for e in got) == [("days", "a"), ("days-wrong", long)]
    fits = harness.recall(task, right=1, wrong=0, min_coverage=0.5, max_chars=len(long))
    assert [e.id for e in fits] == ["days-long"]


CSV = "context is CSV text with the columns name, city and age. How many people live in {}?"


def test_a_cautions_wrong_answer_is_said_only_to_its_own_task(harness: Harness):
    # The default model answered a training variant 3 (it counted only those over 45); a
    # held-out variant, the same words over other rows, is 3. Told "do not repeat 3", it failed.
    example(harness, "paris-wrong", CSV.format("Paris"), "answer(3)", "wrong", answer="3")
    sibling = CSV.format("Lyon")
    assert recall(harness, sibling) == []  # a checker's bare verdict teaches another task nothing
    same = harness.recall(
        CSV.format("Paris"), right=1, wrong=1, min_coverage=0.5, same_task=lambda e: True
    )
    assert [e.caution() for e in same] == [
        "- This task was answered 3 before: verified wrong. Do not repeat that answer."
    ]
    # Its text alone does not make it the same task: `same_task` also compares the inputs.
    other_rows = lambda e: False  # noqa: E731
    assert (
        harness.recall(
            CSV.format("Paris"), right=1, wrong=1, min_coverage=0.5, same_task=other_rows
        )
        == []
    )

    # A person's lesson is worth telling a similar task; the answer, its own data, is not.
    lesson = "count the people of the city, whatever their age"
    example(
        harness, "tours-wrong", CSV.format("Tours"), "answer(2)", "wrong", answer="2", note=lesson
    )
    [told] = recall(harness, sibling)
    assert told.id == "tours-wrong" and not told.same_task
    assert (
        told.caution()
        == f"- A similar task, “{CSV.format('Tours')}”, was answered wrong: {lesson}."
    )
    # (It ranks after the Paris one, which teaches this task nothing and gives it its place.)
    assert [e.id for e in recall(harness, sibling, wrong=2)] == ["tours-wrong"]
    example(harness, "lille", CSV.format("Lille"), "answer(1)")  # worked examples: as before
    assert [e.id for e in recall(harness, sibling)] == ["lille", "tours-wrong"]


def test_recall_follows_edits_by_hand_and_rollback(harness: Harness):
    example(harness, "days", "How many days are there between two dates?", "a")
    task = "How many days are between these two dates?"
    assert [e.code for e in recall(harness, task)] == ["a"]
    path = harness.files.location("project", "example", "days")
    path.write_text(path.read_text().replace("two dates", "two weeks").replace("\na\n", "\nb\n"))
    harness.list()  # what every session start does: notices the hand edit
    assert [e.code for e in recall(harness, "How many days are there between two weeks?")] == ["b"]
    harness.rollback("example", "days", 1)
    assert [e.code for e in recall(harness, task)] == ["a"]
    harness.delete("example", "days")
    assert recall(harness, task) == []


def test_an_index_from_before_is_rebuilt(harness: Harness, tmp_path: Path):
    example(harness, "days", "How many days are there between two dates?", "a")
    harness.versions().index_example("days", 1, None, [])  # as if indexed by nothing
    fresh = Harness(project_dir=str(tmp_path / "project"), global_dir=str(tmp_path / "global"))
    try:
        assert [e.id for e in recall(fresh, "days between two dates")] == ["days"]
    finally:
        fresh.close()


def test_a_broken_example_is_refused_and_not_recalled(harness: Harness):
    with pytest.raises(InvalidEntry, match="outcome"):
        harness.create("example", "x", content="```python\nanswer(1)\n```", metadata={"task": "t"})
    example(harness, "days", "How many days are there between two dates?", "a")
    path = harness.files.location("project", "example", "days")
    path.write_text(path.read_text().replace("outcome: right", "outcome: maybe"))
    harness.list()
    assert recall(harness, "days between two dates") == []


def test_quoted_text_is_data_not_the_kind_of_task(harness: Harness):
    assert examples.terms("Reverse the words of 'keep calm and carry on'.") == ["reverse", "word"]
    # Apostrophes are no quotes ("sam" goes as a name, not as quoted text).
    assert examples.terms("It's sam's \"big\" day") == ["sam", "day"]
    # A sibling task quoting other words is recalled (their words no longer count against it).
    example(
        harness, "reverse", "Reverse the order of the words in the sentence 'one small step'.", "a"
    )
    task = "Reverse the order of the words in the sentence 'keep calm and carry on'."
    assert [e.id for e in recall(harness, task)] == ["reverse"]


def test_names_are_data_not_the_kind_of_task(harness: Harness):
    task = "Ines buys 5 notebooks at 4 dollars each. How much change does Ines get?"
    assert examples.terms(task) == ["buy", "notebook", "dollar", "much", "change", "get"]
    # A sentence's first word is not taken for a name; nor is a name written only there.
    assert examples.terms("Reverse it. Then Sort it.")[:1] == ["reverse"]
    assert "sam" in examples.terms("Sam buys a pen.")
    # The sibling about Sam is recalled for the task about Ines: the name, in no stored
    # example, had outweighed every word the two share.
    example(
        harness,
        "change",
        "Sam buys 4 notebooks at 3 dollars each and pays with a 20 dollar bill. "
        "How much change does Sam get, in dollars?",
        "answer(20 - 4 * 3)",
    )
    example(harness, "reverse", "Reverse the order of the words in 'one small step'.", "a")
    task = (
        "Ines buys 5 notebooks at 4 dollars each and pays with a 40 dollar bill. "
        "How much change does Ines get, in dollars?"
    )
    assert [e.id for e in recall(harness, task)] == ["change"]
