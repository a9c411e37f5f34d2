"""Worked examples: verified tasks with the code that answered them, recalled for similar tasks.

An `example` entry is Markdown with front matter, readable and editable like any other entry:

    ---
    title: How many days are there between 2024-03-01 and 2024-07-15?
    task: How many days are there between 2024-03-01 and 2024-07-15?
    outcome: right            # or `wrong`: a caution, what not to do
    answer: '136'
    learned_from: session s-1a2b3c
    verified_by: user
    ---

    ```python
    import datetime
    answer((datetime.date(2024, 7, 15) - datetime.date(2024, 3, 1)).days)
    ```

Recall is lexical: Okapi BM25 over the task text (Lucene's IDF, which stays positive however
few examples there are). Each scope's terms are indexed in its history database when the entry
changes, so recalling reads one small table, never the files. A candidate must also match a
good part of the task (`min_coverage`: the share of the task's term weight it matches), so an
unrelated task gets no example rather than the least unrelated one: every prompt token is read
on the CPU.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..protocol.errors import InvalidEntry

OUTCOMES = ("right", "wrong")
_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
_WORD = re.compile(r"[a-z][a-z0-9_]*")
# Quoted text in a task is its data, like its numbers: 'Reverse the words of "keep calm"' is the
# same kind of task whatever is quoted (its words made a sibling task's example fall below
# min_coverage).
_QUOTED = re.compile(r"(?<!\w)(?:'[^'\n]*'|\"[^\"\n]*\"|“[^”\n]*”)(?!\w)")
# So are names: "Ines buys 5 notebooks ... How much change does Ines get?" is its sibling about
# Sam; the name, in no stored example, outweighed every shared word (coverage 0.34 < 0.5). A
# name is a capitalised word the task also writes capitalised inside a sentence (so a sentence's
# first word, "Reverse", is not one); all its occurrences are data.
_INSIDE = re.compile(r"(?<![.!?:]\s)(?<=\s)([A-Z][a-z]+)\b")
# Words that say nothing about what a task is (numbers are dropped too: two variants of one
# task differ in their numbers, not their kind).
STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "each",
        "for",
        "from",
        "give",
        "has",
        "have",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "of",
        "on",
        "or",
        "our",
        "please",
        "tell",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "those",
        "to",
        "us",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whose",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
K1 = 1.2
B = 0.75


def terms(text: str) -> list[str]:
    """The words of a task that say what kind of task it is (lowercase, plurals folded; not
    what it quotes, nor the names it gives)."""
    names = {name.lower() for name in _INSIDE.findall(text)}
    out = []
    for word in _WORD.findall(_QUOTED.sub(" ", text.lower())):
        if word in names:
            continue
        if word in STOP or len(word) < 2:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


@dataclass(frozen=True)
class Example:
    """A worked example (outcome right) or a caution (outcome wrong), as recalled."""

    id: str
    scope: str
    task: str
    code: str
    outcome: str
    answer: str
    note: str
    source: str
    # The type of the session's `context` ("str", "list", ...), if it had one.
    context_type: str | None = None
    # Which `context` the session had (context_digest of its stored bytes), if it had one.
    context_digest: str | None = None
    score: float = 0.0
    # Recalled for this very task, its text and its context the same (a retry): only then is
    # a caution's wrong answer worth saying (see caution).
    same_task: bool = False

    @property
    def right(self) -> bool:
        return self.outcome == "right"

    def caution(self) -> str:
        """What not to do, in a line (for the system prompt). Without the code: a small model
        copies what it is shown, wrong code included.

        Its wrong answer is said only to the very same task (Reflexion's memory of a trial is
        the task's own). To another task it is that task's data, not a lesson: "How many people
        live in Paris?" over other rows may well be the 3 "not to repeat", and the default
        model, told not to repeat a sibling's answer, failed held-out tasks it had answered
        right. Another task is told only the lesson a person wrote (ExpeL recalls insights,
        and successes as examples), and is recalled none without one (Harness.recall)."""
        note = f" ({_clip(self.note, 200)})" if self.note else ""
        if self.same_task:
            return (
                f"- This task was answered {_clip(self.answer, 60)} before: verified "
                f"wrong{note}. Do not repeat that answer."
            )
        task = _clip(self.task, 160)
        return f"- A similar task, “{task}”, was answered wrong: {_clip(self.note, 200)}."

    def text(self) -> str:
        """The example as prompt text (for models that call tools: no example messages)."""
        return f"Task: {self.task}\n```python\n{self.code}\n```"


def context_digest(data: bytes) -> str:
    """What tells one `context` from another: the hash of its stored bytes (a pickle)."""
    return hashlib.sha256(data).hexdigest()[:16]


def same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def code_of(content: str) -> str:
    """The code of an example's body: its first ```python block (else the whole body)."""
    found = _FENCE.search(content)
    return (found.group(1) if found else content).strip()


def check(metadata: dict[str, Any], content: str) -> None:
    """Refuse an example entry without a task, an outcome or code."""
    task = metadata.get("task")
    if not isinstance(task, str) or not task.strip():
        raise InvalidEntry("a worked example needs `task` (the task text) in its metadata")
    if metadata.get("outcome") not in OUTCOMES:
        raise InvalidEntry("a worked example needs `outcome: right` or `outcome: wrong`")
    if not code_of(content):
        raise InvalidEntry("a worked example needs the code that answered the task")


def from_entry(entry: Any, score: float = 0.0) -> Example:
    meta = entry.metadata
    return Example(
        id=entry.id,
        scope=entry.scope,
        task=str(meta.get("task") or entry.title),
        code=code_of(entry.content),
        outcome=str(meta.get("outcome") or "right"),
        answer=str(meta.get("answer") or ""),
        note=str(meta.get("note") or ""),
        source=str(meta.get("learned_from") or ""),
        context_type=str(meta["context_type"]) if meta.get("context_type") else None,
        context_digest=str(meta["context_digest"]) if meta.get("context_digest") else None,
        score=score,
    )


@dataclass(frozen=True)
class Indexed:
    """One example's row of the index: its id, scope, outcome and task terms."""

    id: str
    scope: str
    outcome: str
    terms: Sequence[str]


def rank(task: str, docs: Iterable[Indexed], *, min_coverage: float) -> list[tuple[float, Indexed]]:
    """The examples relevant to `task`, best first: (BM25 score, row).

    Coverage is the part of the task's IDF weight an example matches; below `min_coverage` the
    example is dropped, however it ranks.
    """
    docs = list(docs)
    query = set(terms(task))
    if not docs or not query:
        return []
    n = len(docs)
    df = Counter(t for d in docs for t in set(d.terms))
    avg = sum(len(d.terms) for d in docs) / n or 1.0
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in query}
    total = sum(idf.values())
    out = []
    for d in docs:
        tf = Counter(d.terms)
        shared = query & tf.keys()
        if not shared or sum(idf[t] for t in shared) / total < min_coverage:
            continue
        norm = K1 * (1 - B + B * len(d.terms) / avg)
        score = sum(idf[t] * tf[t] * (K1 + 1) / (tf[t] + norm) for t in shared)
        out.append((score, d))
    out.sort(key=lambda pair: (-pair[0], pair[1].id))
    return out
