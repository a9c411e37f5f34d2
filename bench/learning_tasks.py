"""The task families of `bench_learning.py`: eight kinds of task, six variants each.

Variants of a family differ in their numbers, words and data, never in what is asked; the
first three of each family are for training, the last three are held out. Answers are computed
here from the same data, so each has one right value, checked by `local_tasks.check`. The data
is fixed (seeded), so every run asks the same questions.

Written before any run of the benchmark, and not tuned on its results.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import random
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Task:
    family: str
    prompt: str
    expected: Any
    context: Any = None

    @property
    def has_context(self) -> bool:
        return self.context is not None


TRAIN = 3  # the first variants of each family; the rest are held out


def _word_problems() -> list[Task]:
    rows = [
        ("Sam", 4, 3, 20),
        ("Lea", 6, 2, 50),
        ("Omar", 3, 7, 30),
        ("Ines", 5, 4, 40),
        ("Ravi", 7, 3, 25),
        ("Mia", 2, 9, 100),
    ]
    return [
        Task(
            "word problems",
            f"{name} buys {n} notebooks at {price} dollars each and pays with a {paid} dollar "
            f"bill. How much change does {name} get, in dollars?",
            paid - n * price,
        )
        for name, n, price, paid in rows
    ]


def _strings() -> list[Task]:
    sentences = [
        "the quick brown fox",
        "data beats opinions every time",
        "one small step",
        "keep calm and carry on",
        "all models are wrong",
        "practice makes perfect code",
    ]
    return [
        Task(
            "strings",
            f"Reverse the order of the words in the sentence '{s}'.",
            " ".join(reversed(s.split())),
        )
        for s in sentences
    ]


def _lists() -> list[Task]:
    rng = random.Random(3)
    out = []
    for _ in range(6):
        values = rng.sample(range(1, 200), 8)
        out.append(
            Task(
                "lists",
                f"What is the second largest number in the list {values}?",
                sorted(values)[-2],
            )
        )
    return out


def _dates() -> list[Task]:
    pairs = [
        ("2024-03-01", "2024-07-15"),
        ("2023-01-10", "2023-11-02"),
        ("2022-05-20", "2022-06-30"),
        ("2021-02-14", "2021-12-25"),
        ("2020-01-01", "2020-03-01"),
        ("2019-07-04", "2019-10-31"),
    ]
    day = datetime.date.fromisoformat
    return [
        Task(
            "dates",
            f"How many days are there between the dates {a} and {b}?",
            (day(b) - day(a)).days,
        )
        for a, b in pairs
    ]


def _units() -> list[Task]:
    temps = [72, 100, 45, 88, 20, 61]
    return [
        Task(
            "units",
            f"Convert {f} degrees Fahrenheit to Celsius, rounded to one decimal place.",
            round((f - 32) * 5 / 9, 1),
        )
        for f in temps
    ]


_NAMES = [
    "Ada",
    "Ben",
    "Cleo",
    "Dan",
    "Eva",
    "Finn",
    "Gus",
    "Hana",
    "Ivo",
    "Jade",
    "Kai",
    "Lena",
    "Milo",
    "Nora",
    "Otto",
    "Pia",
]
_CITIES = ["Paris", "Lyon", "Nice", "Lille", "Nantes"]


def _csv() -> list[Task]:
    out = []
    for i in range(6):
        rng = random.Random(100 + i)
        rows = [(name, rng.choice(_CITIES), rng.randint(18, 80)) for name in _NAMES]
        city = _CITIES[(i * 2) % len(_CITIES)]
        rows[i] = (rows[i][0], city, rows[i][2])  # someone lives there
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(["name", "city", "age"])
        writer.writerows(rows)
        out.append(
            Task(
                "csv",
                "context is CSV text with the columns name, city and age. "
                f"How many people live in {city}?",
                sum(1 for _, c, _ in rows if c == city),
                context=text.getvalue(),
            )
        )
    return out


_ITEMS = ["pen", "cup", "lamp", "book", "bag", "mug", "desk", "plant"]


def _json() -> list[Task]:
    out = []
    for i in range(6):
        rng = random.Random(200 + i)
        orders = [
            {"item": rng.choice(_ITEMS), "price": rng.randint(2, 60), "qty": rng.randint(1, 9)}
            for _ in range(rng.randint(5, 9))
        ]
        out.append(
            Task(
                "json",
                "context is a JSON list of orders, each with the fields item, price and qty. "
                "What is the total of price times qty over all the orders?",
                sum(o["price"] * o["qty"] for o in orders),
                context=json.dumps(orders),
            )
        )
    return out


_SERVICES = ["auth", "billing", "search", "mailer", "storage", "gateway"]


def _long_logs() -> list[Task]:
    out = []
    for i, service in enumerate(["billing", "auth", "search", "storage", "mailer", "gateway"]):
        rng = random.Random(300 + i)
        lines = []
        for n in range(4000):  # about 200 KB: read with code, never through the prompt
            level = rng.choices(["INFO", "WARN", "ERROR"], weights=[80, 15, 5])[0]
            svc = rng.choice(_SERVICES)
            lines.append(f"2024-05-01T10:{n // 60 % 60:02d}:{n % 60:02d} {level} [{svc}] event {n}")
        text = "\n".join(lines) + "\n"
        out.append(
            Task(
                "long context",
                "context is a long log, one event per line like "
                "'2024-05-01T10:00:00 ERROR [auth] event 7'. How many ERROR lines are there "
                f"for the service {service}?",
                sum(1 for ln in lines if " ERROR " in ln and f"[{service}]" in ln),
                context=text,
            )
        )
    return out


FAMILIES: dict[str, list[Task]] = {
    tasks[0].family: tasks
    for tasks in (
        _word_problems(),
        _strings(),
        _lists(),
        _dates(),
        _units(),
        _csv(),
        _json(),
        _long_logs(),
    )
}


def split(family: str) -> tuple[list[Task], list[Task]]:
    """(train, held-out) variants of a family."""
    tasks = FAMILIES[family]
    return tasks[:TRAIN], tasks[TRAIN:]
