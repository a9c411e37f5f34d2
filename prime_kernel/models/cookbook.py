"""Worked examples for small models, chosen per task.

A 135M-parameter model writes working code far more often when it adapts a nearby example
than when it follows a description: it copies the example's shape and substitutes the task's
words and numbers. One fixed example gets copied whole (the README's `rlm("What is the mean of
context?", ...)` once returned the example's `answer(2 + 3)`), so a session is shown the few
examples closest to its task out of a cookbook of common kinds of small tasks. Each example
uses different numbers, names and files from anything a user is likely to ask, so copying one
verbatim gives a visibly wrong answer rather than a plausible one.

Closeness is word overlap, each shared word weighted by how rare it is in the cookbook, after
folding plurals and a few synonyms together: cheap, deterministic and good enough to tell a
CSV task from a prime-number one.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

Example = tuple[str, str]  # (task, code)

_IS_PRIME = """\
def is_prime(n):
    if n < 2:
        return False
    for d in range(2, int(n ** 0.5) + 1):
        if n % d == 0:
            return False
    return True
"""

EXAMPLES: tuple[Example, ...] = (
    # arithmetic
    (
        "What is the sum of the cubes of 1..20?",
        "total = 0\nfor i in range(1, 21):\n    total += i ** 3\nanswer(total)",
    ),
    ("Add up the whole numbers from 1 to 250.", "answer(sum(range(1, 251)))"),
    ("What is 3 to the power of 12?", "answer(3 ** 12)"),
    ("What is 48 * 96 - 7?", "answer(48 * 96 - 7)"),
    ("What is 1234 divided by 7, rounded to 2 decimals?", "answer(round(1234 / 7, 2))"),
    (
        "What is the product of the numbers from 1 to 9?",
        "import math\nanswer(math.prod(range(1, 10)))",
    ),
    ("What is the factorial of 8?", "import math\nanswer(math.factorial(8))"),
    (
        "What is the greatest common divisor of 84 and 126?",
        "import math\nanswer(math.gcd(84, 126))",
    ),
    ("What is the least common multiple of 8 and 14?", "import math\nanswer(math.lcm(8, 14))"),
    ("What is the square root of 2, to 4 decimals?", "import math\nanswer(round(math.sqrt(2), 4))"),
    ("What is 15% of 260?", "answer(260 * 15 / 100)"),
    ("What is the sum of the digits of 2 ** 50?", "answer(sum(int(d) for d in str(2 ** 50)))"),
    # factorials: `n!` in a task is math.factorial(n), exact integers throughout
    (
        "Count the digits of 25 factorial.",
        "import math\nanswer(len(str(math.factorial(25))))",
    ),
    ("What is 11! / 8!?", "import math\nanswer(math.factorial(11) // math.factorial(8))"),
    (
        "How many zeros are at the end of 30!?",
        "import math\ndigits = str(math.factorial(30))\n"
        "answer(len(digits) - len(digits.rstrip('0')))",
    ),
    # dates: datetime computes them; a calendar done by hand goes wrong
    (
        "Count the days from 2021-02-03 to 2021-09-30.",
        "from datetime import date\nanswer(abs((date(2021, 2, 3) - date(2021, 9, 30)).days))",
    ),
    (
        "On which day of the week did 14 March 1995 fall?",
        "from datetime import date\nanswer(date(1995, 3, 14).strftime('%A'))",
    ),
    (
        "Which date is 30 days later than 2022-05-17?",
        "from datetime import date, timedelta\n"
        "answer((date(2022, 5, 17) + timedelta(days=30)).isoformat())",
    ),
    (
        "Tell me whether the year 1800 was a leap year.",
        "import calendar\nanswer(calendar.isleap(1800))",
    ),
    (
        "How many days are in April 2026?",
        "import calendar\nanswer(calendar.monthrange(2026, 4)[1])",
    ),
    # units: convert() (the profile's setup imports it) has the exact factors; the model's
    # own memory of them is what went wrong (an inch as 3.54 cm). The quantity is written as
    # the task says it, parts and all.
    ("Express 2 days in seconds.", "answer(convert('2 days', 's'))"),
    ("Convert 3 yards 2 feet to metres.", "answer(convert('3 yards 2 feet', 'm'))"),
    ("Convert 12 ounces to grams.", "answer(convert('12 ounces', 'g'))"),
    (
        "Convert 15 litres to US gallons, rounded to 2 decimals.",
        "answer(round(convert('15 litres', 'US gallons'), 2))",
    ),
    ("Convert 30 degrees Celsius to Fahrenheit.", "answer(convert('30 degrees Celsius', 'F'))"),
    # counting
    (
        "How many multiples of 3 are there from 1 to 400?",
        "count = 0\nfor i in range(1, 401):\n    if i % 3 == 0:\n        count += 1\nanswer(count)",
    ),
    ("How many letters 'a' are in 'banana bread'?", "answer('banana bread'.count('a'))"),
    (
        "How many vowels are in 'open source software'?",
        "answer(sum(1 for c in 'open source software' if c in 'aeiou'))",
    ),
    ("How many characters does 'hello there' have?", "answer(len('hello there'))"),
    ("How long is the word 'shelter', in letters?", "answer(len('shelter'))"),
    # primes
    (
        "How many primes are there below 300?",
        _IS_PRIME + "\nanswer(sum(1 for n in range(300) if is_prime(n)))",
    ),
    (
        "Is 221 a prime number?",
        "n = 221\nanswer(n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1)))",
    ),
    (
        "What is the 15th prime number?",
        _IS_PRIME + "\nprimes = []\nn = 2\nwhile len(primes) < 15:\n"
        "    if is_prime(n):\n        primes.append(n)\n    n += 1\nanswer(primes[-1])",
    ),
    # strings
    ("Reverse the string 'jupyter'.", "answer('jupyter'[::-1])"),
    ("Write 'good morning' in capital letters.", "answer('good morning'.upper())"),
    ("Write 'Good Evening' in small letters.", "answer('Good Evening'.lower())"),
    (
        "Count how often 'and' occurs as a word in 'bread and butter and jam'.",
        "words = 'bread and butter and jam'.split()\nanswer(words.count('and'))",
    ),
    (
        "How many words are in 'a small step for man'?",
        "answer(len('a small step for man'.split()))",
    ),
    ("Is 'level' a palindrome?", "s = 'level'\nanswer(s == s[::-1])"),
    ("Replace every space in 'a b c' with a dash.", "answer('a b c'.replace(' ', '-'))"),
    (
        "Find the longest word of the sentence 'we walked along the river'.",
        "words = 'we walked along the river'.split()\nanswer(max(words, key=len))",
    ),
    (
        "Start every word of 'blue sky day' with a capital letter (title case).",
        "# .title() capitalises every word; .capitalize() only the first\n"
        "answer('blue sky day'.title())",
    ),
    # lists
    ("Sort [8, 2, 6, 4] in increasing order.", "answer(sorted([8, 2, 6, 4]))"),
    (
        "Sort [3, 12, 5] in decreasing order.",
        "answer(sorted([3, 12, 5], reverse=True))",
    ),
    ("What is the smallest number in [14, 3, 27, 9]?", "answer(min([14, 3, 27, 9]))"),
    ("What is the biggest number in [31, 6, 58, 12]?", "answer(max([31, 6, 58, 12]))"),
    # the k-th largest: the model indexed sorted()'s smallest-first order from the front
    (
        "What is the third largest number in [15, 42, 8, 27, 33]?",
        "nums = sorted([15, 42, 8, 27, 33], reverse=True)  # the largest first\n"
        "answer(nums[2])  # the 1st largest is nums[0], the 3rd nums[2]",
    ),
    ("What is the average of [2, 4, 9]?", "nums = [2, 4, 9]\nanswer(sum(nums) / len(nums))"),
    (
        "Which numbers in [3, 8, 11, 14] are odd?",
        "answer([x for x in [3, 8, 11, 14] if x % 2 == 1])",
    ),
    (
        "What is the sum of the odd numbers in [2, 5, 6, 9]?",
        "answer(sum(x for x in [2, 5, 6, 9] if x % 2 == 1))",
    ),
    (
        "Remove the duplicates from [4, 1, 4, 2, 1], keeping the order.",
        "answer(list(dict.fromkeys([4, 1, 4, 2, 1])))",
    ),
    ("Reverse the list [7, 8, 9].", "answer([7, 8, 9][::-1])"),
    # the input in `context`
    ("What is the largest value in context?", "answer(max(context))"),
    (
        "Which key of the dict context has the smallest value?",
        "answer(min(context, key=context.get))",
    ),
    ("What is the average of the values in context?", "answer(sum(context) / len(context))"),
    ("What is the median of context?", "import statistics\nanswer(statistics.median(context))"),
    ("How many items in context are negative?", "answer(sum(1 for x in context if x < 0))"),
    ("What is the shortest string in context?", "answer(min(context, key=len))"),
    ("How many lines does context have?", "answer(len(context.splitlines()))"),
    (
        "How many rows in context have the size 'large'?",
        "answer(sum(1 for row in context if row['size'] == 'large'))",
    ),
    (
        "Which colour appears most often in context?",
        "from collections import Counter\n"
        "answer(Counter(row['colour'] for row in context).most_common(1)[0][0])",
    ),
    # a long text or table in `context`: computed over, never printed
    (
        "How many times does the word 'fox' occur in context?",
        "answer(context.split().count('fox'))",
    ),
    (
        "On which line of context is the word 'error'? (lines count from 1)",
        "for number, line in enumerate(context.splitlines(), 1):\n"
        "    if 'error' in line.split():\n        answer(number)",
    ),
    (
        "What is the total 'amount' of the rows in context?",
        "answer(sum(float(row['amount']) for row in context))",
    ),
    (
        "What is the average 'weight' over the rows in context?",
        "weights = [float(row['weight']) for row in context]\nanswer(sum(weights) / len(weights))",
    ),
    # CSV handed over as text, not as a file: the default model opened a made-up 'people.csv'
    # for every such task (the file examples below were the nearest it was shown).
    (
        "context is CSV text with the columns item, shop and price. How many cost over 20?",
        "import csv\nrows = list(csv.DictReader(context.splitlines()))\n"
        "answer(sum(1 for r in rows if float(r['price']) > 20))",
    ),
    # A count over a text's lines tests each line. Without this shape the default model
    # counted with lines.count('WORD') (the lines that are exactly that word: 0), or kept the
    # first of a task's two conditions only.
    (
        "context is a web server access log. How many POST requests came from the user kim?",
        "answer(sum(1 for line in context.splitlines() if 'POST' in line and 'kim' in line))",
    ),
    # files in the working folder
    (
        "What is the total of the 'amount' column in orders.csv?",
        "import csv\nwith open('orders.csv') as f:\n    rows = list(csv.DictReader(f))\n"
        "amounts = [float(r['amount']) for r in rows]\nanswer(sum(amounts))",
    ),
    (
        "How many rows of orders.csv have an amount above 50?",
        "import csv\nwith open('orders.csv') as f:\n    rows = list(csv.DictReader(f))\n"
        "answer(sum(1 for r in rows if float(r['amount']) > 50))",
    ),
    (
        "Who is the oldest person in people.csv?",
        "import csv\nwith open('people.csv') as f:\n    rows = list(csv.DictReader(f))\n"
        "answer(max(rows, key=lambda r: float(r['age']))['name'])",
    ),
    (
        "What is the average of the numbers in values.txt?",
        "with open('values.txt') as f:\n    text = f.read()\n"
        "# every number, whatever separates them (commas, semicolons, new lines)\n"
        "numbers = [float(x) for x in re.findall(r'-?\\d+\\.?\\d*', text)]\n"
        "answer(sum(numbers) / len(numbers))",
    ),
    (
        "How many lines are in log.txt?",
        "with open('log.txt') as f:\n    answer(len(f.read().splitlines()))",
    ),
    (
        "What are the column names of items.csv?",
        "import csv\nwith open('items.csv') as f:\n    answer(next(csv.reader(f)))",
    ),
    # look before answering: the next turn sees what was printed
    ("What does the file data.txt contain?", "print(open('data.txt').read()[:300])"),
    # sub-agents
    (
        "Ask a sub-agent to summarise each text in context, and answer with the summaries.",
        "handles = rlm.map('Summarise context in one sentence.', contexts=context)\n"
        "answer(rlm.gather(*handles))",
    ),
)

_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "how",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "there",
        "to",
        "what",
        "which",
        "with",
    ]
)
# Words a user may use for the same thing; each maps to the cookbook's word.
_SYNONYMS = {
    "mean": "average",
    "avg": "average",
    "biggest": "largest",
    "highest": "largest",
    "maximum": "largest",
    "max": "largest",
    "greatest": "largest",
    "lowest": "smallest",
    "minimum": "smallest",
    "min": "smallest",
    "least": "smallest",
    "longest": "length",
    "shortest": "length",
    "oldest": "largest",
    "uppercase": "capital",
    "upper": "capital",
    "lowercase": "small",
    "lower": "small",
    "times": "count",
    "count": "count",
    "occurrences": "count",
    "appear": "count",
    "total": "sum",
    "ascending": "increasing",
    "descending": "decreasing",
    "add": "sum",
    "divisible": "multiples",
    "text": "string",
    "texts": "string",
    "subagent": "sub",
    "rlm": "sub",
    "capitalize": "title",
    "capitalise": "title",
    "capitalized": "title",
    "capitalised": "title",
    "weekday": "week",
    "common": "often",
    "frequent": "often",
    "frequently": "often",
    "rank": "sort",
    "order": "sort",
    "arrange": "sort",
}


_MOST_OFTEN = re.compile(r"\b(?:large|big|high|great)\w*\s+(?:number|count)\s+of\b", re.IGNORECASE)
# "the second largest", "the 3rd smallest": a rank in an order, which the shape [kth] stands
# for; the ordinal is no word of its own ("second" would match a task about seconds).
_KTH = re.compile(
    r"\b(?:second|third|fourth|fifth|\d+(?:st|nd|rd|th))(?=\s+(?:large|big|high|great|small|low)\w*)",
    re.IGNORECASE,
)


def _words(text: str) -> set[str]:
    out = set()
    # "the largest number of tickets" asks which value occurs most often, not for a maximum
    text = _MOST_OFTEN.sub("most often", text)
    text = _KTH.sub(" ", text)
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in _STOP:
            continue
        word = _SYNONYMS.get(word, word)
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return out


_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DATE = re.compile(rf"\b\d{{4}}-\d{{1,2}}-\d{{1,2}}\b|\b(?:{_MONTHS})\b", re.IGNORECASE)


_BIG = r"(?:large|big|high|great|most)\w*"
_SMALL = r"(?:small|low|least|few)\w*"
_DOWN = re.compile(rf"\b{_BIG}\s+(?:\w+\s+)?to\s+(?:the\s+)?{_SMALL}", re.IGNORECASE)
_UP = re.compile(rf"\b{_SMALL}\s+(?:\w+\s+)?to\s+(?:the\s+)?{_BIG}", re.IGNORECASE)


# Unit names by what they measure (stems: "met" is metre, meter, metres).
_UNITS = {
    "time": r"second|minute|hour|day|week|year",
    "length": r"inch|feet|foot|yard|mile|met|centimet|millimet|kilomet|km|cm|mm",
    "mass": r"kg|kilo|gram|pound|lb|ounce",
    "volume": r"litre|liter|millilit|ml|gallon|pint|quart",
    "temperature": r"celsius|fahrenheit|°[cf]",
}
_UNIT = re.compile(r"(?<![a-z])(" + "|".join(_UNITS.values()) + ")")


def _shapes(text: str) -> set[str]:
    """What a task hands over besides words: a file of some kind, a list, a quoted string.

    A task about `[5, 3, 9]` should see an example that works on a list literal, one about
    sales.csv an example that reads a CSV file, one naming a date an example using datetime.
    """
    shapes = {f".{ext}" for ext in re.findall(r"\.(csv|txt|json)\b", text.lower())}
    if _DATE.search(text):
        shapes.add("[date]")
    # A conversion names two units ("a day of the week" is a date's).
    # The kind of quantity counts too: kilograms to pounds is nearer ounces to grams than
    # litres to gallons.
    named = set(_UNIT.findall(text.lower().replace("day of the week", "")))
    if len(named) >= 2:
        shapes.add("[units]")
        shapes |= {
            f"[{kind}]"
            for kind, stems in _UNITS.items()
            if any(re.fullmatch(stems, unit) for unit in named)
        }
    if _KTH.search(text):
        shapes.add("[kth]")
    if re.search(r"\d!", text):  # 12! is the factorial of 12
        shapes.add("factorial")
    # "from largest to smallest" says decreasing in other words
    if _DOWN.search(text):
        shapes.add("decreasing")
    elif _UP.search(text):
        shapes.add("increasing")
    if re.search(r"\[[^\]]*\]", text):
        shapes.add("[list]")
    if re.search(r"'[^']*'|\"[^\"]*\"", text):
        shapes.add("'string'")
    return shapes


def _features(text: str) -> set[str]:
    return _words(text) | _shapes(text)


def _uses_context(example: Example) -> bool:
    return re.search(r"\bcontext\b", example[1]) is not None


_INDEX = [_features(task) for task, _ in EXAMPLES]
_DF = Counter(word for words in _INDEX for word in words)


def closest(
    task: str, k: int, examples: Sequence[Example] = EXAMPLES, *, context: bool | None = None
) -> list[Example]:
    """The `k` examples nearest to `task`, the nearest last (closest to the task in the prompt).

    With `context` known (whether the session has a `context` variable), examples that use it
    are shown only to sessions that have one, and count as nearer there: one that does not
    led a model to write `context.split()` for a task about a quoted string.
    Ties keep cookbook order, so the choice is deterministic.
    """
    if k <= 0:
        return []
    if context:
        task += " (context)"
    elif context is not None:
        examples = [e for e in examples if not _uses_context(e)]
    index = _INDEX if examples is EXAMPLES else [_features(t) for t, _ in examples]
    df = _DF if examples is EXAMPLES else Counter(w for ws in index for w in ws)
    words = _features(task)
    n = len(examples)

    def score(i: int) -> float:
        return sum(math.log(1 + n / df[w]) for w in words & index[i])

    ranked = sorted(range(n), key=lambda i: (score(i), -i), reverse=True)[:k]
    return [examples[i] for i in reversed(ranked)]
