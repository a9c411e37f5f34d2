"""Model profiles: how the agent loop talks to a model, chosen by the model's name.

A hosted frontier model, the embedded Qwen2.5-Coder-0.5B (the default) and the 135M-parameter
SmolLM2 need different prompts and limits. A profile holds what differs: the system prompt and
worked examples, how many tokens a reply may have and where it stops, how the reply starts (a
prefill), how much cell output the model is shown, how a turn is retried, and the default
limits that stop a confused model quickly. The loop asks `profile_for(model)` once per session
and otherwise runs the same for every model.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from . import cookbook, prompts, providers

Messages = list[dict[str, Any]]

# Checked in the daemon's environment, which local kernels share (the kernelspec runs the same
# Python); a model that reaches for pandas where there is none wastes its turns.
_DATA_PACKAGES = ("numpy", "pandas", "scipy", "matplotlib", "sympy")


@cache
def installed_packages() -> tuple[str, ...]:
    return tuple(p for p in _DATA_PACKAGES if importlib.util.find_spec(p) is not None)


def installed_note() -> str:
    extra = installed_packages()
    if not extra:
        return "Installed: the Python standard library only (no numpy or pandas)."
    return "Installed: the Python standard library, " + ", ".join(extra) + "."


@dataclass(frozen=True)
class Profile:
    name: str
    # The system prompt: (tools, harness text) -> text.
    system: Callable[[bool, str], str]
    # The worked exchanges shown before the task (fenced-code models only):
    # (task, whether the session has a `context`) -> messages.
    examples: Callable[[str, bool], Messages]
    # The task message: (prompt, context type, depth, what `look` printed) -> text.
    task: Callable[[str, str | None, int, str], str] = prompts.task_message
    # Most tokens one reply may have (None: the provider's default).
    reply_tokens: int | None = None
    # Learned worked examples this model is shown (None: c.Learner.examples_shown; when that
    # is 0, none).
    learned_examples: int | None = None
    # Longest code of a learned worked example this model is shown (None: any the Learner
    # keeps). One it could not write back within `reply_tokens` teaches replies that the
    # token limit cuts off; a stronger model's verified sessions can be that long.
    example_chars: int | None = None
    # Where a reply stops; with `prefill` opening a fence, the closing fence ends it.
    stop: tuple[str, ...] = ()
    # The start of every reply, sent as an unfinished assistant message that the model
    # continues. "```python\n" makes every reply one code block: a small model cannot drift
    # into prose or an unlabelled fence.
    prefill: str = ""
    # After a turn printed a value but did not answer, start the next reply with
    # `answer(` so that the model can only hand the value over.
    prefill_answer: bool = False
    # Characters of cell output shown per cell (None: Host.observation_chars).
    observation_chars: int | None = None
    # Show only the exception's last line of a traceback: a small window and a small model
    # gain nothing from the frames.
    brief_errors: bool = False
    # Follow a common error with its one-line fix (policy.error_hint).
    error_hints: bool = False
    # After a failed turn, leave it out of what the model is shown, the error said in a note
    # (policy.without_failed_turns): fenced-code models only.
    retry_fresh: bool = False
    # Refuse to run a reply that is one of the shown worked examples' code, copied whole (its
    # answer would be the example's), and ask for the task's own code instead.
    no_copies: bool = False
    # Sampling temperature after an error or a repeated turn, so the retry differs (None: the
    # provider's default every turn).
    retry_temperature: float | None = None
    # Consecutive repeated turns (same code, same output) that end the session.
    max_repeats: int = 5
    # Default limits when the session sets none (None: Host.max_turns / no time limit).
    max_turns: int | None = None
    max_seconds: float | None = None
    # Said when this model gives up, after what happened.
    give_up_hint: str = ""
    # Code run in the REPL before the first turn (recorded as a cell like any other).
    setup: str = ""
    # (prompt, whether there is a `context`) -> code run next, or "": what it prints goes with
    # the task, so that the model knows its input's shape and size before its first line.
    look: Callable[[str, bool], str] | None = None
    # Extra request fields for every model call.
    request: dict[str, Any] = field(default_factory=dict)
    # Refinement shows this model a digest of each session (its task, outcome and last error)
    # and asks it for a smaller reply (harness.refine.BRIEF): on a CPU every prompt token is
    # read and every reply token written before the reply is any use.
    brief_refinement: bool = False

    def request_kwargs(self, *, retry: bool) -> dict[str, Any]:
        kwargs = dict(self.request)
        if self.reply_tokens:
            kwargs["max_tokens"] = self.reply_tokens
        if self.stop:
            kwargs["stop"] = list(self.stop)
        if retry and self.retry_temperature is not None:
            kwargs["temperature"] = self.retry_temperature
        return kwargs


def _default_system(tools: bool, extra: str) -> str:
    # How to work long (goals, schedules, gc) is told to models that can use it; the small
    # profile leaves it out: every prompt token is read on the CPU there.
    extra = f"{extra}\n\n{prompts.LONG_HORIZON}" if extra else prompts.LONG_HORIZON
    return prompts.system_prompt(tools=tools, extra=extra, installed=installed_note())


def _default_examples(task: str, has_context: bool) -> Messages:
    return [dict(m) for m in prompts.FENCED_EXAMPLE]


DEFAULT = Profile(name="default", system=_default_system, examples=_default_examples)


# --- small local models ---------------------------------------------------------------------

SMALL_EXAMPLES = 3  # more examples did no better for SmolLM2-135M and cost prompt tokens


# SmolLM2 writes `math.gcd(...)` and drops the `import math` its example had about as often
# as not; with these already imported that error cannot happen.
SMALL_IMPORTS = "import csv, math, re, statistics"
# The REPL helpers of our own that the setup imports, and the line of the system prompt that
# names each one by its use (a module path would tell a small model nothing). The model gets
# a conversion's arithmetic right and its factors wrong (an inch as 3.54 cm, kilograms
# times the pound's factor): `convert` knows the factors, and the cookbook's unit
# examples use it.
HELPERS_SETUP = "from prime_kernel.kernel.units import convert"
HELPERS_NOTE = "convert('5 ft 3 in', 'cm') converts units with exact factors."
SMALL_SETUP = f"{SMALL_IMPORTS}\n{HELPERS_SETUP}"


def _imported(setup: str) -> str:
    """What a setup of `import a, b` / `from m import x, y` lines made available, said briefly
    (the helpers aside: HELPERS_NOTE says what they do)."""
    said = []
    for line in setup.splitlines():
        if line == HELPERS_SETUP:
            continue
        if line.startswith("import "):
            said.append(line.removeprefix("import "))
        elif line.startswith("from "):
            module, names = line.removeprefix("from ").split(" import ")
            said.append(f"{names} (from {module})")
    return "; ".join(said)


def _system_after(setup: str) -> Callable[[bool, str], str]:
    def system(tools: bool, extra: str) -> str:
        return prompts.small_system_prompt(
            extra=extra,
            installed=f"{installed_note()} Already imported: {_imported(setup)}. {HELPERS_NOTE}",
        )

    return system


_small_system = _system_after(SMALL_SETUP)


def _small_examples(task: str, has_context: bool) -> Messages:
    return _as_messages(cookbook.closest(task, SMALL_EXAMPLES, context=has_context))


def _as_messages(examples: list[cookbook.Example]) -> Messages:
    messages: Messages = []
    for example_task, code in examples:
        messages.append({"role": "user", "name": "example", "content": f"Task: {example_task}"})
        messages.append(
            {"role": "assistant", "name": "example", "content": f"```python\n{code}\n```"}
        )
    return messages


SMALL = Profile(
    name="small",
    system=_small_system,
    examples=_small_examples,
    task=prompts.small_task_message,
    reply_tokens=200,  # right replies measured up to ~140 tokens; longer ones were loops
    # SmolLM2's tokenizer reads the cookbook's code at 2.6 characters a token: 500 characters
    # is about 190 tokens, within one reply.
    example_chars=500,
    # Shown one learned sibling, SmolLM2 copies its first line and garbles the next
    # (`answer('perfect code')` after a right `words = ...split()`); shown two, it sees what
    # varies between them and writes the line right. They take the place of two cookbook
    # examples: the prompt does not grow.
    learned_examples=2,
    stop=("```",),
    prefill="```python\n",
    prefill_answer=True,
    observation_chars=600,
    brief_errors=True,
    error_hints=True,
    retry_temperature=0.8,
    max_repeats=2,
    max_turns=6,
    max_seconds=120.0,
    setup=SMALL_SETUP,
    brief_refinement=True,
    give_up_hint=(
        # Read in the panel, the CLI and a cell alike: it names a model, not a flag of one.
        "{model} is a very small model for trying things out offline; for real work choose a "
        "bigger one, e.g. openai/gpt-4o-mini"
    ),
)

# --- the default local model: Qwen2.5-Coder-0.5B-Instruct ----------------------------------

_FILE = re.compile(r"\b[\w.-]+\.(?:csv|tsv|txt|json|jsonl|log)\b", re.IGNORECASE)


def look_code(prompt: str, has_context: bool) -> str:
    """Code that prints the shape of the task's input: `context` and the files the task names
    (prime_kernel/kernel/shape.py). Run in the REPL, recorded as a cell like any other."""
    files = list(dict.fromkeys(_FILE.findall(prompt)))
    if not (has_context or files):
        return ""
    value = "context" if has_context else "None"
    return (
        "import prime_kernel.kernel.shape as __shape\n"
        f"print(__shape.overview({value}, {files!r}, has_context={has_context}))\n"
        "del __shape"
    )


CODER_EXAMPLES = 3
# The coder reached for `calendar` and `date` without importing them (a turn lost each time).
# `datetime` stays the module: both `datetime.date(...)` and `date(...)` then work.
CODER_SETUP = (
    "import calendar, csv, datetime, math, re, statistics\nfrom datetime import date, timedelta\n"
    + HELPERS_SETUP
)


def _coder_examples(task: str, has_context: bool) -> Messages:
    return _as_messages(cookbook.closest(task, CODER_EXAMPLES, context=has_context))


CODER = replace(
    SMALL,
    name="coder",
    system=_system_after(CODER_SETUP),
    setup=CODER_SETUP,
    examples=_coder_examples,
    retry_fresh=True,
    no_copies=True,
    # Qwen2.5's tokenizer reads the cookbook's code at 3.2 characters a token: 620 characters
    # is about 190 tokens, within one reply (reply_tokens, as SMALL's).
    example_chars=620,
    learned_examples=None,  # the Learner's: two were not measured on this model
    task=prompts.coder_task_message,
    look=look_code,
    give_up_hint=(
        "{model} is a small model for offline work; for harder tasks use a bigger one, e.g. "
        "--model openai/gpt-4o-mini (or model=... in rlm())"
    ),
)

# Models by exact name; the others by the profile their provider declares (providers.py).
PROFILES: dict[str, Profile] = {"local/smollm2": SMALL, "local/qwen2.5-coder-0.5b": CODER}


def profile_for(model: str) -> Profile:
    if model in PROFILES:
        return PROFILES[model]
    prefix, slash, _ = model.partition("/")
    provider = providers.installed().get(prefix) if slash else None
    return provider.profile if provider is not None and provider.profile else DEFAULT
