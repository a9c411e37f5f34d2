"""What the agent loop decides between turns, as pure functions of the transcript.

Kept apart from the loop so that each rule can be tested on its own and the loop only calls
them: which parts of a reply run as code, what the model is shown after its code ran, when a
turn repeats an earlier one, and when to stop a session that is going nowhere.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from ..util.format import DISPLAY_DATA, NO_OUTPUT

# Only fences labelled as Python run. A bare ``` fence is what models use for prose ("This
# will print: ..."), sample output or other languages; running it fails every turn.
_FENCE = re.compile(r"```(?:python3?|py)[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_OPEN_FENCE = "```python\n"


def code_blocks(text: str | None) -> list[str]:
    """The code of every labelled ```python block in `text`, in order; empty blocks skipped."""
    return [block.strip("\n") for block in _FENCE.findall(text or "") if block.strip()]


def complete_reply(prefill: str, content: str) -> str:
    """The whole reply when the model continued `prefill` and stopped at a closing fence.

    llama.cpp and most providers return only the continuation and drop the stop sequence, so
    the transcript would otherwise hold a fence that never closes.
    """
    if not prefill:
        return content
    text = prefill + content
    if prefill.startswith("```") and text.count("```") % 2 == 1:
        text = text.rstrip("\n") + "\n```"
    return text


def answer_prefill(prefill: str) -> str:
    """The start of a reply that can only be a call to answer(): used after a printed result."""
    return (prefill or _OPEN_FENCE) + "answer("


@dataclass(frozen=True)
class CellRun:
    """One cell the loop ran for the model: its code, what the model is shown, how it ended."""

    code: str
    text: str
    ok: bool


def printed_result(runs: Sequence[CellRun], limit: int = 120) -> str | None:
    """The value a turn printed last, if its cells all ran without error and it is short.

    A model that prints its result and does not call answer() would otherwise print it again
    every turn until the turn limit; the loop reminds it instead. A long line is output to
    read, not a result to hand over.
    """
    if not runs or not all(run.ok for run in runs):
        return None
    lines = [line.strip() for line in runs[-1].text.splitlines() if line.strip()]
    if not lines or lines[-1] == NO_OUTPUT or lines[-1].startswith(DISPLAY_DATA):
        return None  # nothing printed, or a picture
    return lines[-1] if len(lines[-1]) <= limit else None


def answer_nudge(value: str) -> str:
    """What the model is told after it printed `value` but did not answer.

    It names the exact call: a small model asked to "call answer() with it" wrote
    `answer(len(notebook))` after printing `len('notebook')` correctly.
    """
    try:
        ast.literal_eval(value)
        call = f"answer({value})"
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        call = f"answer({value!r})"
    return (
        f"You printed {value}. If that is the result, call {call}; "
        "the task is not finished until you do."
    )


# Errors a small model makes over and over, and the one-line fix it needs to hear. The patterns
# match the `Name: message` line of an error as observation.py renders it.
_NO_FILE = re.compile(r"FileNotFoundError: .*'([^']+)'")
_HINTS = (
    (
        re.compile(
            r"unsupported operand type\(s\) for .*'str'|can only concatenate str"
            r"|not supported between instances of 'str' and '(?:int|float)'"
        ),
        "Values read from a file or a CSV are text (str): convert them with float(x) or int(x) "
        "first.",
    ),
    (
        re.compile(
            r"ValueError: (?:invalid literal for int\(\) with base 10"
            r"|could not convert string to float): '[^']*?([;,|])"
        ),
        "That text holds several values: split it on '{0}' first, then convert each one.",
    ),
    (
        re.compile(
            r"float\(\) argument must be a string or a real number, not 'dict'"
            r"|unsupported operand type\(s\) for \+: 'int' and 'dict'"
        ),
        "The items are dicts (rows): take the field you need from each, float(row[key]).",
    ),
    (
        re.compile(r"NameError: name '(\w+)' is not defined"),
        "{0} does not exist in the REPL: define it first, or write '{0}' in quotes if you "
        "meant that text.",
    ),
    (
        _NO_FILE,
        "There is no file {0!r} here: use the file the task names.",
    ),
    (
        # `lines.index('needle')` for the line that contains the word: index() wants the whole
        # item, so a word in a long text is "not in list".
        re.compile(r"ValueError: '([^'\n]{1,40})' is not in list"),
        "index() finds only an item that is exactly '{0}'. To find the item that contains it, "
        "loop: for i, item in enumerate(items, 1), test '{0}' in item.",
    ),
    (
        re.compile(r"KeyError: '(\w+)'"),
        "There is no key '{0}': print the first row (or the dict's keys) to see the names.",
    ),
)


_FILE_AS_NAME = re.compile(r"NameError: name '(\w+)' is not defined")


def error_hint(text: str, code: str = "", context_type: str = "") -> str | None:
    """A one-line fix for a common error in an observation (of `code`), if it has one;
    `context_type`: the type of the task's `context` ('' for none)."""
    # `numbers.txt.read()`: a file's name written as if it were a variable.
    if (m := _FILE_AS_NAME.search(text)) and (
        file := re.search(rf"\b{m[1]}\.(?:csv|tsv|txt|json|jsonl|log)\b", code)
    ):
        return f"{file[0]} is a file, not a variable: read it with open('{file[0]}')."
    # The task's data came as `context` and the model opened a file it made up for it
    # ('people.csv'), again and again: "use the file the task names" named none.
    if context_type and (m := _NO_FILE.search(text)):
        how = (
            " (if it is CSV text: rows = list(csv.DictReader(context.splitlines())))"
            if context_type == "str"
            else ""
        )
        return (
            f"There is no file {m[1]!r}: the task's data is already in the variable context, "
            f"a {context_type}{how}."
        )
    for pattern, hint in _HINTS:
        if m := pattern.search(text):
            return hint.format(*m.groups())
    return None


def without_failed_turns(
    messages: Sequence[dict[str, Any]], failed: Collection[int], note: str
) -> list[dict[str, Any]]:
    """The conversation for a model that retries from a clean slate: the messages whose id()
    is in `failed` (a failed turn's reply and its output) left out, and `note` (what went
    wrong) added to the last message if the latest turn was one of them.

    A small model shown its own failed code writes it again, even sampled hotter; shown only
    the task and the error, it writes new code.
    """
    kept = [m for m in messages if id(m) not in failed]
    if note and messages and id(messages[-1]) in failed and kept:
        kept[-1] = {**kept[-1], "content": f"{kept[-1]['content']}\n\n{note}"}
    return kept


def copies_example(code: str, example: str, task: str) -> bool:
    """Whether `code` is `example`'s code copied whole (but for blank space) while that code
    holds a value the task does not name (the example's number or word): its answer would be
    the example's. Generic code (`answer(max(context))`) may be copied: it is right as it is."""
    if "".join(code.split()) != "".join(example.split()):
        return False
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    values = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    return any(
        isinstance(v, (int, float, str))
        and not isinstance(v, bool)
        and v not in (0, 1)  # in any code: range(1, n), [::-1]
        and str(v) not in task
        for v in values
    )


def overwrites_context(code: str) -> bool:
    """Whether `code` assigns a literal to `context`: a small model shown the start of the
    task's data ('name,city,age\nAda,Lille,77 …') wrote it back as `context = '…'`, and its
    right code then counted on the stub (a wrong answer, learned as a caution with right code)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == "context" for t in targets):
            continue
        try:
            ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        return True
    return False


def overwritten_context_text() -> str:
    """What the model is shown instead of running code that overwrites `context`."""
    return (
        "Not run: context already holds the task's whole data (what you were shown is only its "
        "start). Do not assign context; use it as it is."
    )


def copied_example_text() -> str:
    """What the model is shown instead of running a worked example's code copied whole: its
    answer would be the example's, a wrong answer given with confidence."""
    return (
        "That is the example's code, written for the example's task. Write code for this task, "
        "with the task's own values."
    )


def turn_key(runs: Sequence[CellRun]) -> tuple[tuple[str, str], ...]:
    """What makes two turns the same: the same code (modulo blank space) with the same output."""
    return tuple((" ".join(run.code.split()), run.text) for run in runs)


def repeats(history: Sequence[tuple[tuple[str, str], ...]]) -> int:
    """How many turns in a row at the end of `history` repeat an earlier turn exactly.

    Re-running the same code is fine while its output changes (polling a child, waiting for a
    message); the same code with the same output means the model is stuck.
    """
    count = 0
    for i in range(len(history) - 1, -1, -1):
        if history[i] and history[i] in history[:i]:
            count += 1
        else:
            break
    return count


def repeat_nudge() -> str:
    return (
        "You ran this same code before and got the same output. Do something different: fix "
        "the code, or call answer() with the result."
    )
