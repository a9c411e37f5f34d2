"""A cacheable prompt: what a model call sends is the stored conversation, unchanged, then
whatever is new for this turn alone.

Providers cache a prompt's beginning: a request that starts with the same bytes as an earlier
one is read from their cache at a tenth of the price (Anthropic, OpenAI, Gemini, DeepSeek). So a
call is laid out as

    [system: prompt + harness text] [examples] [task] [conversation, append-only]  <- stable
    [this turn only: the goal, a prefill]                                          <- never kept

and the stable part of each call must begin with the stable part of the call before it. Only a
compaction (it rewrites the middle) may break that; `PrefixCheck` records every break on the
`model_call` event, and says whether it was planned, so an unplanned one is visible at once.
Where the provider needs to be told what to cache (Anthropic), the router adds the breakpoints
(`ModelRouter.complete(cache_at=...)`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]


def stable_length(messages: list[Message]) -> int:
    """How many leading messages are the stored conversation: a stored conversation ends with
    the user's or a tool's message before a model call, so a trailing assistant message is a
    prefill for this call only."""
    if messages and messages[-1].get("role") == "assistant":
        return len(messages) - 1
    return len(messages)


def _digest(message: Message) -> bytes:
    text = json.dumps(message, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


@dataclass
class PrefixCheck:
    """Per live session: the stable part of the last call (one digest per message)."""

    sent: list[bytes] = field(default_factory=list)
    # Set by a compaction: the next call's break is the planned one.
    planned: bool = False

    def check(self, stable: list[Message]) -> dict[str, Any] | None:
        """Remember this call's stable messages; where they stop beginning with the last call's
        (`at`: the first message that differs) and whether that was planned, or None."""
        digests = [_digest(m) for m in stable]
        previous, self.sent = self.sent, digests
        planned, self.planned = self.planned, False
        for at, (old, new) in enumerate(zip(previous, digests, strict=False)):
            if old != new:
                return {"at": at, "planned": planned}
        if len(digests) < len(previous):
            return {"at": len(digests), "planned": planned}
        return None
