"""The task suite of `bench_local.py`: small tasks a new user might give the embedded model.

Each task has one right answer, checked strictly by `check` (numbers by value, everything else
by value and type). Files a task reads are written fresh into the working folder before it runs,
so a task whose code overwrote a file cannot spoil the next one.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from typing import Any

# A small shop's sales, fixed so the answers are known.
SALES = [
    ("pen", 27.26, 5),
    ("book", 32.8, 2),
    ("lamp", 7.65, 18),
    ("mug", 9.34, 19),
    ("chair", 6.52, 17),
    ("desk", 18.75, 3),
    ("cable", 35.82, 3),
    ("plant", 20.77, 18),
    ("clock", 35.11, 19),
    ("bag", 11.66, 8),
    ("cup", 51.19, 19),
    ("box", 75.92, 19),
]
NUMBERS = [75, 51, 7, 29, 6, 72, 18, 38, 54, 19, 70, 16, 74, 40, 72]
TEXTS = ["the cat sat on the mat", "to be or not to be", "hello world"]


def sales_csv() -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "product", "price", "quantity"])
    for i, (product, price, quantity) in enumerate(SALES, 1):
        writer.writerow([i, product, price, quantity])
    return out.getvalue()


FILES = {
    "sales.csv": sales_csv(),
    # Separated by semicolons: code that splits on white space fails, so the model has to look.
    "numbers.txt": ";".join(map(str, NUMBERS)) + "\n",
}


def _primes(limit: int) -> list[int]:
    return [n for n in range(2, limit) if all(n % d for d in range(2, math.isqrt(n) + 1))]


@dataclass(frozen=True)
class Task:
    kind: str
    prompt: str
    expected: Any
    context: Any = None
    files: tuple[str, ...] = field(default=())
    # A file handed over as `prime-agent run --context NAME` would: (name, text). The session's
    # `context` is what the CLI makes of it (JSON parsed, CSV as a list of dicts, else text).
    context_file: tuple[str, str] | None = None

    @property
    def has_context(self) -> bool:
        return self.context is not None or self.context_file is not None


TASKS = [
    Task("arithmetic", "Compute the sum of the squares of 1..100", 338350),
    Task("arithmetic", "What is 17 * 23?", 391),
    Task("arithmetic", "What is 2 to the power of 20?", 2**20),
    Task("arithmetic", "What is the factorial of 10?", math.factorial(10)),
    Task("arithmetic", "What is the greatest common divisor of 462 and 1071?", 21),
    Task("counting", "How many numbers between 1 and 1000 are divisible by 7?", 142),
    Task("counting", "How many times does the letter 's' appear in 'mississippi'?", 4),
    Task("primes", "How many primes are below 10000?", len(_primes(10000))),
    Task("primes", "Is 97 a prime number?", True),
    Task("primes", "What is the 100th prime number?", _primes(1000)[99]),
    Task("strings", "Reverse the string 'prime kernel'.", "lenrek emirp"),
    Task("strings", "Convert 'hello world' to upper case.", "HELLO WORLD"),
    Task("strings", "How many words are in 'the quick brown fox jumps over the lazy dog'?", 9),
    Task("strings", "How many vowels are in 'jupyter notebook'?", 6),
    Task("lists", "Sort the list [5, 3, 9, 1, 7] in ascending order.", [1, 3, 5, 7, 9]),
    Task("lists", "What is the largest number in [12, 45, 7, 23, 56, 89, 34]?", 89),
    Task("lists", "What is the sum of the even numbers in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]?", 30),
    Task(
        "csv",
        "What is the mean of the price column in sales.csv?",
        sum(price for _, price, _ in SALES) / len(SALES),
        files=("sales.csv",),
    ),
    Task(
        "csv",
        "Which product in sales.csv has the highest price?",
        max(SALES, key=lambda row: row[1])[0],
        files=("sales.csv",),
    ),
    Task(
        "csv",
        "How many rows of sales.csv have a quantity above 10?",
        sum(1 for *_, quantity in SALES if quantity > 10),
        files=("sales.csv",),
    ),
    Task("context", "What is the mean of context?", 6.0, context=[3, 5, 10]),
    Task(
        "context",
        "How many items in context are greater than 10?",
        4,
        context=[4, 15, 8, 23, 42, 16],
    ),
    Task(
        "context",
        "What is the longest word in context?",
        "banana",
        context=["kiwi", "banana", "fig", "plum"],
    ),
    Task(
        "two cells",
        "What is the sum of the numbers in numbers.txt?",
        sum(NUMBERS),
        files=("numbers.txt",),
    ),
    Task(
        "sub-agents",
        "context is a list of texts. Use rlm() on each text to count its words, "
        "then answer with the total.",
        sum(len(t.split()) for t in TEXTS),
        context=TEXTS,
    ),
]


def check(expected: Any, got: Any) -> bool:
    """Whether `got` is `expected`: numbers by value (int or float), the rest by value and type.

    True is not 1 and "391" is not 391: a task asks for a value, and the checker wants that value.
    """
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(got) is type(expected) and got == expected
    if isinstance(expected, (int, float)):
        return isinstance(got, (int, float)) and math.isclose(got, expected, rel_tol=1e-9)
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(check(e, g) for e, g in zip(expected, got, strict=True))
        )
    return type(got) is type(expected) and got == expected
