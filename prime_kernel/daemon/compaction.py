"""Context compaction (L1): keep a session's message list inside its model's window.

Before each model call the daemon calls `compact_if_needed`. When the prompt would fill more
than `Host.compact_at` of the model's window, or the session's REPL called `compact()`, the
middle of the conversation is replaced by one user message holding a summary that the session's
model writes. The head (system prompt, fenced-code examples, task) and the most recent turns stay
verbatim. The REPL namespace (L2) is untouched, so what the summarised turns defined still exists,
and the summary message says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..models.router import Completion, ModelRouter
from ..protocol.errors import ModelError
from .observation import cap

SUMMARY_HEADER = "[Earlier turns, summarised]"
SUMMARY_INSTRUCTION = (
    "You are compacting the working memory of an agent that works in a persistent Python REPL."
)
SUMMARY_PROMPT = """\
{instruction} Below is its task and the part of its transcript that is about to be replaced by
your summary; the agent will read your summary instead of these turns and then continue.

Write a concise summary in plain text. Keep:
- facts and results it learned (numbers, findings, what the data looks like);
- the names of the variables, functions and files it created in the REPL and what each holds;
- decisions it made and why, and approaches that failed;
- open questions and what it was about to do next.
Do not invent anything that is not in the transcript.

{task}

Transcript:
{transcript}
"""

# Characters of one message shown to the summariser; big cell outputs matter least.
MESSAGE_CHARS = 2000
# Transcript size when the model's window is unknown (a requested compaction).
DEFAULT_TRANSCRIPT_CHARS = 64_000


@dataclass
class Compacted:
    """The result of one compaction: the new message list and what went into it."""

    messages: list[dict[str, Any]]
    summarised: int
    summary: str
    completion: Completion | None
    error: str | None = None


def head_length(messages: list[dict[str, Any]]) -> int:
    """How many leading messages are always kept: system, fenced examples, and the task."""
    i = 0
    while i < len(messages) and (
        messages[i].get("role") == "system" or messages[i].get("name") == "example"
    ):
        i += 1
    return min(i + 1, len(messages))


def tail_start(messages: list[dict[str, Any]], head: int, keep_recent: int) -> int:
    """Where the kept recent turns begin: at most `keep_recent` messages, moved back so that a
    tool reply is never separated from the assistant message that called it."""
    start = max(head, len(messages) - keep_recent)
    while head < start < len(messages) and messages[start].get("role") == "tool":
        start -= 1
    return start


def transcript(messages: list[dict[str, Any]], limit: int) -> str:
    parts = []
    for m in messages:
        lines = [str(m.get("content") or "")]
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            try:
                code = json.loads(fn.get("arguments") or "{}").get("code", "")
            except (ValueError, AttributeError):
                code = fn.get("arguments") or ""
            lines.append(f"[{fn.get('name')} tool call]\n{code}")
        text, _ = cap("\n".join(line for line in lines if line), MESSAGE_CHARS)
        parts.append(f"--- {m.get('role')}\n{text}")
    text, _ = cap("\n".join(parts), limit)
    return text


def summary_message(summarised: int, summary: str) -> str:
    return (
        f"{SUMMARY_HEADER} {summarised} earlier messages were replaced by this summary to fit "
        "the context window. The variables, functions, imports and files created in those turns "
        "still exist in your REPL: inspect them with code rather than redoing the work.\n\n"
        + summary
    )


def dropped_message(summarised: int, error: str) -> str:
    return (
        f"{SUMMARY_HEADER} {summarised} earlier messages were removed to fit the context window; "
        f"no summary could be made ({error}). The variables, functions, imports and files "
        "created in those turns still exist in your REPL: inspect them with code (e.g. `dir()`) "
        "rather than redoing the work."
    )


async def compact_messages(
    router: ModelRouter,
    model: str,
    messages: list[dict[str, Any]],
    *,
    keep_recent: int,
    window: int | None,
    **kwargs: Any,
) -> Compacted | None:
    """Summarise the middle of `messages` with one model call; None if there is no middle.

    A failed summary call drops the middle with a note instead: the session goes on.
    """
    head = head_length(messages)
    start = tail_start(messages, head, keep_recent)
    middle = messages[head:start]
    if not middle:
        return None
    chars = window * 2 if window else DEFAULT_TRANSCRIPT_CHARS  # about half the window
    prompt = SUMMARY_PROMPT.format(
        instruction=SUMMARY_INSTRUCTION,
        task=messages[head - 1].get("content") or "",
        transcript=transcript(middle, chars),
    )
    completion: Completion | None = None
    error = None
    try:
        completion = await router.text(model, prompt, **kwargs)
        summary, _ = cap(str(completion.message.get("content") or "").strip(), chars // 2)
        text = summary_message(len(middle), summary or "(the summary came back empty)")
    except ModelError as e:
        summary, error = "", e.message
        text = dropped_message(len(middle), e.message)
    kept = [*messages[:head], {"role": "user", "content": text}, *messages[start:]]
    return Compacted(kept, len(middle), summary, completion, error)


async def compact_if_needed(
    router: ModelRouter,
    model: str,
    messages: list[dict[str, Any]],
    *,
    compact_at: float,
    keep_recent: int,
    requested: bool = False,
    **kwargs: Any,
) -> tuple[Compacted, dict[str, Any]] | None:
    """Compact `messages` if they fill more than `compact_at` of the model's window (or a
    compaction was `requested`): the result and the data of its `compaction` event."""
    if not requested and compact_at <= 0:
        return None
    window = router.context_window(model)
    if not requested and window:
        # A token is at least a character: while the text is shorter than the threshold the
        # exact (tokenizer) count, which grows with the history, need not run every turn.
        chars = sum(
            len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) for m in messages
        )
        if chars <= compact_at * window:
            return None
    before = router.count_tokens(model, messages)
    if not requested and (not window or before <= compact_at * window):
        return None
    result = await compact_messages(
        router, model, messages, keep_recent=keep_recent, window=window, **kwargs
    )
    if result is None:
        return None
    data: dict[str, Any] = {
        "before_tokens": before,
        "after_tokens": router.count_tokens(model, result.messages),
        "summarised_messages": result.summarised,
        "summary": result.summary,
        "reason": "requested" if requested else "window",
    }
    if result.error:
        data["error"] = result.error
    return result, data
