"""The base system prompt. Refinement never edits this module's text."""

from __future__ import annotations

BASE_PROMPT = """\
You are an agent working in a persistent Python REPL (a Jupyter kernel). Variables, imports and
files you create stay between your turns.

How to work:
- {run_instruction}
- Look at data before you rely on it: print sizes, types and samples instead of guessing.
- If a variable named `context` exists, it holds the input you were given. It may be large;
  inspect it with code rather than asking for it to be printed whole.
- `rlm(prompt, context=value)` starts a sub-agent in its own REPL and returns a handle at once;
  `handle.result()` waits for its answer (a Python object). `rlm.map(prompts, contexts=[...])`
  starts many; `rlm.gather(*handles)` waits for all. Use sub-agents to split big inputs.
- `llm(prompt)` is a plain model call (no REPL) that returns text; `llm.batch([...])` runs many.
- Long conversations get their earlier turns summarised (also on `compact()`); the REPL keeps
  every variable, so inspect it rather than redoing work.
- When you have the final result, call `answer(value)` in the REPL. The value is returned to
  whoever started you as a Python object. Do not stop before calling `answer`.
- {installed}
"""

TOOL_INSTRUCTION = (
    "Run code with the `python` tool; you see its output (stdout, results, errors) after each call."
)
FENCED_INSTRUCTION = (
    "Run code by writing it in a fenced block that starts with ```python and ends with ```; "
    "every such block in your reply is executed and you see its output in the next message."
)

PYTHON_TOOL = {
    "type": "function",
    "function": {
        "name": "python",
        "description": "Run Python code in your persistent REPL and return its output.",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "Python code to run."}},
            "required": ["code"],
        },
    },
}


# Models without tool calling (small local ones especially) follow a demonstration far better
# than a description: one worked exchange, marked `name="example"` so that it is never mistaken
# for a turn of the session itself.
FENCED_EXAMPLE = [
    {"role": "user", "name": "example", "content": "Task: What is 2 + 3?"},
    {"role": "assistant", "name": "example", "content": "```python\nanswer(2 + 3)\n```"},
]


def system_prompt(*, tools: bool, extra: str = "", installed: str = "") -> str:
    text = BASE_PROMPT.format(
        run_instruction=TOOL_INSTRUCTION if tools else FENCED_INSTRUCTION,
        installed=installed or "Use what is installed in the REPL's Python.",
    )
    return text + ("\n" + extra if extra else "")


# For small local models (see prime_kernel/models/profiles.py): a few plain sentences, since
# every prompt token is read on the CPU and a 135M model follows examples, not instructions.
SMALL_PROMPT = """\
You solve tasks by writing Python code. Reply with one ```python code block. It runs in a \
Python REPL that keeps variables between turns, and you see what it prints. Call answer(value) \
with the final result. {installed}"""


def small_system_prompt(*, extra: str = "", installed: str = "") -> str:
    return SMALL_PROMPT.format(installed=installed) + ("\n\n" + extra if extra else "")


def coder_task_message(prompt: str, context_type: str | None, depth: int, about: str = "") -> str:
    """The task, then what a look at its input found (`context`'s and files' shape and size)."""
    if about:
        return f"Task: {prompt}\n{about}"
    return small_task_message(prompt, context_type, depth)


def task_message(prompt: str, context_type: str | None, depth: int, about: str = "") -> str:
    lines = [f"Task: {prompt}"]
    if context_type:
        lines.append(f"\n(The variable `context` in your REPL holds the input: a {context_type}.)")
    if depth:
        lines.append(f"(You are a sub-agent at depth {depth}.)")
    return "\n".join(lines)


def small_task_message(prompt: str, context_type: str | None, depth: int, about: str = "") -> str:
    """The task as the small profile's examples show it (depth is not news to a small model)."""
    text = f"Task: {prompt}"
    if context_type:
        text += f"\n(The variable `context` holds a {context_type}.)"
    return text


# Long-horizon control, added to every agent's system prompt (after the harness notes).
LONG_HORIZON = """\
Long work: `goal.set(text)` keeps a goal in front of you on every turn (`goal.progress(note)`,
`goal.done(summary)`); `schedule.every("10m", message)` (or `.at("in 30m", ...)`,
`.cron("*/5 * * * *", ...)`) sends you that message on a timer, waking you when idle; `gc()`
lists your REPL variables by size, `gc(spill=[names])` moves big ones to disk (they reload by
themselves on first use) and `gc(drop=[names])` deletes them."""
