"""The evaluation set of `bench_local.py`: written once, before any tuning, then frozen.

Tasks a person would type, in their own words, for the embedded model: arithmetic, factorials,
sorting, unit conversions, dates, word counts, CSV and JSON handed over as `--context` files,
and inputs of about 1 MB, far past any small model's window, that only code can answer.

Nothing here was tried on a model before it was written down, and the prompts, cookbook and
profiles are never tuned against it: that is what `local_tasks.TUNING` is for. So the score on
this set says how the embedded model does on tasks nobody tuned it for. `FROZEN` is the
fingerprint of the set as it was first committed; `bench_local.py` refuses to run a set that
no longer matches it, and so does tests/bench/test_local_tasks.py. Do not edit a task: add a
new set instead.

Every input is generated here, deterministically (fixed seeds), so the answers are known.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import random
import statistics
from typing import Any

from local_tasks import Task

# -- small inputs, as files a user would pass with --context ----------------------------------

STAFF = [
    ("Ana", "Sales", 52000),
    ("Ben", "Engineering", 91000),
    ("Chloe", "Sales", 48000),
    ("Dev", "Support", 39000),
    ("Eva", "Engineering", 87000),
    ("Finn", "Sales", 55000),
    ("Gita", "Marketing", 61000),
    ("Hugo", "Engineering", 95000),
    ("Ines", "Support", 41000),
    ("Jon", "Sales", 45000),
]


def staff_csv() -> str:
    lines = ["name,department,salary"]
    lines += [f"{name},{dept},{salary}" for name, dept, salary in STAFF]
    return "\n".join(lines) + "\n"


ORDERS = [
    {"id": 1001, "customer": "acme", "total": 250.0, "status": "shipped"},
    {"id": 1002, "customer": "globex", "total": 99.5, "status": "pending"},
    {"id": 1003, "customer": "initech", "total": 12.25, "status": "pending"},
    {"id": 1004, "customer": "acme", "total": 740.0, "status": "shipped"},
    {"id": 1005, "customer": "umbrella", "total": 66.0, "status": "cancelled"},
    {"id": 1006, "customer": "globex", "total": 310.75, "status": "pending"},
    {"id": 1007, "customer": "hooli", "total": 18.0, "status": "shipped"},
]

CITIES = {
    "Lisbon": 545923,
    "Porto": 231800,
    "Braga": 193333,
    "Coimbra": 140796,
    "Funchal": 105795,
}

READINGS = [12.5, 7.25, 19.0, 3.5, 11.75, 8.0, 15.25, 4.5, 9.0]


# -- about 1 MB inputs, far past the window: only code over `context` can answer ----------------

LONG_BYTES = 1_000_000
# No word here contains another, so counting a word as a substring or as a whole word agrees.
_VOCABULARY = [
    "river",
    "stone",
    "cloud",
    "maple",
    "orbit",
    "candle",
    "harbor",
    "willow",
    "pepper",
    "velvet",
    "meadow",
    "copper",
    "falcon",
    "thistle",
    "garnet",
    "lagoon",
    "saddle",
    "prism",
    "tundra",
    "quiver",
    "beacon",
    "marble",
    "fennel",
]


def _long_words(seed: int, target: str, times: int) -> str:
    """About LONG_BYTES of words in lines of 12, with `target` placed exactly `times` times."""
    rng = random.Random(seed)
    words: list[str] = []
    size = 0
    while size < LONG_BYTES:
        word = rng.choice(_VOCABULARY)
        words.append(word)
        size += len(word) + 1
    for i in rng.sample(range(len(words)), times):
        words[i] = target
    lines = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
    return "\n".join(lines) + "\n"


def long_story() -> str:
    return _long_words(seed=11, target="lantern", times=137)


def long_log() -> str:
    """Log lines; the word 'zebra' is on exactly one of them."""
    rng = random.Random(23)
    levels = ["INFO", "INFO", "INFO", "DEBUG", "WARN"]
    lines = []
    size = 0
    while size < LONG_BYTES:
        n = len(lines)
        minute, second = divmod(n % 3600, 60)
        text = " ".join(rng.choice(_VOCABULARY) for _ in range(rng.randint(4, 9)))
        line = f"2024-05-{1 + n // 86400 % 28:02d} 10:{minute:02d}:{second:02d} "
        line += f"{rng.choice(levels)} worker-{rng.randint(1, 16)} {text}"
        lines.append(line)
        size += len(line) + 1
    where = rng.randrange(len(lines) // 3, len(lines))
    lines[where] += " zebra"
    return "\n".join(lines) + "\n"


def long_numbers() -> str:
    rng = random.Random(37)
    numbers = []
    size = 2
    while size < LONG_BYTES:
        n = rng.randint(-5000, 99999)
        numbers.append(n)
        size += len(str(n)) + 2
    return json.dumps(numbers)


_REGIONS = ("north", "south", "east", "west")
_PRODUCTS = ("bolt", "nut", "gear", "spring", "valve", "hinge")


def long_sales_csv() -> str:
    rng = random.Random(41)
    lines = ["date,region,product,units,unit_price"]
    size = len(lines[0]) + 1
    day = datetime.date(2023, 1, 1)
    while size < LONG_BYTES:
        date = day + datetime.timedelta(days=rng.randrange(365))
        line = (
            f"{date.isoformat()},{rng.choice(_REGIONS)},{rng.choice(_PRODUCTS)},"
            f"{rng.randint(1, 250)},{rng.randint(50, 5000) / 100:.2f}"
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n"


# -- the answers, computed from the inputs ----------------------------------------------------


def _line_of(text: str, word: str) -> int:
    (number,) = [i for i, line in enumerate(text.splitlines(), 1) if word in line.split()]
    return number


def _units_in(csv_text: str, region: str) -> int:
    rows = [line.split(",") for line in csv_text.splitlines()[1:]]
    return sum(int(units) for _, reg, _, units, _ in rows if reg == region)


def _weekday(year: int, month: int, day: int) -> str:
    return datetime.date(year, month, day).strftime("%A")


def build() -> list[Task]:
    story, log, numbers, sales = long_story(), long_log(), long_numbers(), long_sales_csv()
    staff = staff_csv()
    return [
        # arithmetic
        Task("arithmetic", "what's 345 + 678 - 123", 900),
        Task("arithmetic", "Calculate 12.5% of 840", 105),
        Task("arithmetic", "multiply 1234 by 5678", 1234 * 5678),
        Task("arithmetic", "If I divide 1000 by 8 and then add 17, what do I get?", 142),
        Task("arithmetic", "sum of all the even numbers from 2 to 200", sum(range(2, 201, 2))),
        Task("arithmetic", "What is 7 cubed minus 5 squared?", 7**3 - 5**2),
        # factorials
        Task("factorials", "factorial of 12?", math.factorial(12)),
        Task("factorials", "How many digits does 100! have?", len(str(math.factorial(100)))),
        Task("factorials", "What is 20! divided by 18!?", 380),
        Task("factorials", "Give me the exact value of 30 factorial", math.factorial(30)),
        # sorting
        Task(
            "sorting",
            "sort these numbers from largest to smallest: 42, 7, 19, 88, 3",
            [88, 42, 19, 7, 3],
        ),
        Task(
            "sorting",
            "Put the words banana, apple, cherry and date in alphabetical order",
            ["apple", "banana", "cherry", "date"],
        ),
        Task("sorting", "order [3.5, -1, 2, 0] from low to high", [-1, 0, 2, 3.5]),
        # unit conversions
        Task(
            "units",
            "Convert 100 degrees Fahrenheit to Celsius, rounded to 1 decimal place",
            round((100 - 32) * 5 / 9, 1),
        ),
        Task("units", "How many kilometres is 26.2 miles? Round to 2 decimals.", 42.16),
        Task("units", "How many seconds are there in a week?", 7 * 24 * 3600),
        Task(
            "units",
            "how tall is 5 feet 11 inches in centimetres, to the nearest whole number?",
            round(71 * 2.54),
        ),
        # dates
        Task(
            "dates",
            "How many days are there between 2024-01-15 and 2024-03-01?",
            (datetime.date(2024, 3, 1) - datetime.date(2024, 1, 15)).days,
        ),
        Task("dates", "What day of the week was July 4, 1976?", _weekday(1976, 7, 4)),
        Task("dates", "Is 2100 a leap year?", False),
        Task(
            "dates",
            "What date is 90 days after 2023-11-20? Answer in YYYY-MM-DD form.",
            (datetime.date(2023, 11, 20) + datetime.timedelta(days=90)).isoformat(),
        ),
        # words
        Task(
            "words",
            "count the words in: It was the best of times, it was the worst of times",
            12,
        ),
        Task(
            "words",
            "How many times does the word 'the' appear in 'the cat and the hat and the bat'?",
            3,
        ),
        Task(
            "words",
            "What's the longest word in 'a quick study of extraordinary patience'?",
            "extraordinary",
        ),
        Task("words", "capitalize each word of 'new york city'", "New York City"),
        # CSV and JSON files given as --context
        Task(
            "csv",
            "What is the average salary?",
            statistics.mean(s for *_, s in STAFF),
            context_file=("staff.csv", staff),
        ),
        Task(
            "csv",
            "Which department has the most people?",
            "Sales",
            context_file=("staff.csv", staff),
        ),
        Task(
            "csv",
            "What is the total salary of the Engineering department?",
            sum(s for _, d, s in STAFF if d == "Engineering"),
            context_file=("staff.csv", staff),
        ),
        Task(
            "json",
            "How many orders are still pending?",
            sum(1 for o in ORDERS if o["status"] == "pending"),
            context_file=("orders.json", json.dumps({"orders": ORDERS}, indent=2)),
        ),
        Task(
            "json",
            "which city has the biggest population",
            max(CITIES, key=CITIES.__getitem__),
            context_file=("cities.json", json.dumps(CITIES, indent=2)),
        ),
        Task(
            "json",
            "What's the median of these readings?",
            statistics.median(READINGS),
            context_file=("readings.json", json.dumps(READINGS)),
        ),
        # about 1 MB each
        Task(
            "long",
            "How many times does the word 'lantern' occur in the text?",
            story.split().count("lantern"),
            context_file=("story.txt", story),
        ),
        Task(
            "long",
            "What is the sum of all the numbers?",
            sum(json.loads(numbers)),
            context_file=("numbers.json", numbers),
        ),
        Task(
            "long",
            "On which line of the log does the word 'zebra' appear? Count lines from 1.",
            _line_of(log, "zebra"),
            context_file=("app.log", log),
        ),
        Task(
            "long",
            "How many units were sold in the north region in total?",
            _units_in(sales, "north"),
            context_file=("sales_2023.csv", sales),
        ),
    ]


def fingerprint(tasks: list[Task]) -> str:
    """A sha256 over every task's kind, prompt, answer, inputs and files."""
    digest = hashlib.sha256()
    for task in tasks:
        name, text = task.context_file or ("", "")
        item: dict[str, Any] = {
            "kind": task.kind,
            "prompt": task.prompt,
            "expected": repr(task.expected),
            "context": repr(task.context),
            "context_file": [name, hashlib.sha256(text.encode()).hexdigest()],
            "files": list(task.files),
        }
        digest.update(json.dumps(item, sort_keys=True).encode() + b"\n")
    return digest.hexdigest()


# The fingerprint of the set as first committed (see the module docstring).
FROZEN = "646d83ef70f1f65737a7e0d019e453eec51f861c0ffb090333bea8389752e669"
