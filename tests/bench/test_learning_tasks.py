"""The learning benchmark's task families: enough of them, well formed, answers that check."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from learning_tasks import FAMILIES, TRAIN, split
from local_tasks import check


def test_eight_families_of_six_variants_split_into_train_and_held_out():
    assert len(FAMILIES) >= 8
    for family, tasks in FAMILIES.items():
        assert len(tasks) >= 6, family
        train, held_out = split(family)
        assert len(train) == TRAIN and len(held_out) == len(tasks) - TRAIN >= 3
        prompts = [t.prompt for t in tasks]
        assert len(set(prompts)) == len(prompts) or all(t.has_context for t in tasks), family
        assert all(t.family == family for t in tasks)


def test_the_answers_follow_from_the_data():
    for task in FAMILIES["csv"]:
        rows = list(csv.DictReader(io.StringIO(task.context)))
        city = task.prompt.rsplit(" in ", 1)[1].rstrip("?")
        assert check(task.expected, sum(1 for r in rows if r["city"] == city)) and task.expected
    for task in FAMILIES["json"]:
        orders = json.loads(task.context)
        assert check(task.expected, sum(o["price"] * o["qty"] for o in orders))
    for task in FAMILIES["long context"]:
        assert len(task.context) > 150_000  # read with code, never through a prompt
        service = task.prompt.rsplit(" ", 1)[1].rstrip("?")
        count = sum(
            1 for ln in task.context.splitlines() if " ERROR " in ln and f"[{service}]" in ln
        )
        assert check(task.expected, count)
    assert FAMILIES["dates"][0].expected == 136


def test_the_data_is_fixed():
    import importlib

    import learning_tasks

    again = importlib.reload(learning_tasks)
    assert [(t.prompt, t.expected, t.context) for ts in again.FAMILIES.values() for t in ts] == [
        (t.prompt, t.expected, t.context) for ts in FAMILIES.values() for t in ts
    ]
