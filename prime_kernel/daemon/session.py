"""What the daemon holds in memory for a session it is driving: its kernel, its run, its
conversation with the model, and what to tell the model next."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..protocol.states import SessionState
from .prompt_cache import PrefixCheck
from .records import SessionRecord

if TYPE_CHECKING:
    from .kernels import KernelRunner

Message = dict[str, Any]


class Conversation:
    """The message list a session's model is shown (L1), kept in the store as it grows so that
    a restarted daemon resumes it; a compaction replaces it whole. The store's callbacks return
    the messages as they wrote them (scrubbed of secrets): those are what the model is shown."""

    def __init__(
        self,
        messages: list[Message] | None = None,
        *,
        on_append: Callable[[list[Message]], list[Message] | None] | None = None,
        on_replace: Callable[[list[Message]], list[Message] | None] | None = None,
    ) -> None:
        self._messages: list[Message] = list(messages or [])
        self._on_append = on_append
        self._on_replace = on_replace

    def append(self, *messages: Message) -> list[Message]:
        """Add `messages`; the messages as kept (what the store wrote), in their order."""
        written: list[Message] | None = list(messages)
        if self._on_append is not None:
            written = self._on_append(list(messages))
        kept = list(messages) if written is None else written
        self._messages.extend(kept)
        return kept

    def load(self, messages: list[Message]) -> None:
        """Messages read back from the store (not written again)."""
        self._messages[:] = messages

    def replace(self, messages: list[Message]) -> None:
        written: list[Message] | None = messages
        if self._on_replace is not None:
            written = self._on_replace(list(messages))
        self._messages[:] = messages if written is None else written

    @property
    def messages(self) -> list[Message]:
        """The messages as a list for a model call (a copy: change them through this class)."""
        return list(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __getitem__(self, index: int) -> Message:
        return self._messages[index]


@dataclass(eq=False)
class LiveSession:
    record: SessionRecord
    conversation: Conversation = field(default_factory=Conversation)
    runner: KernelRunner | None = None
    task: asyncio.Task[None] | None = None
    # Text for the model at its next turn: a person's cells, messages, restore notes.
    notes: list[str] = field(default_factory=list)
    # Set when a waiter may look: the session ended, or (persistent) answered and went IDLE
    # (answers.py).
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    turns: int = 0
    cancelling: bool = False
    # The model call streaming now (its own task, so an interrupt can stop it alone), and
    # whether a person interrupted it.
    reply_task: asyncio.Task[Any] | None = None
    reply_interrupted: bool = False
    compact_requested: bool = False
    # The stored conversation the last model call began with (prompt_cache.py).
    prefix: PrefixCheck = field(default_factory=PrefixCheck)
    # Names in the REPL after the last cell that ran (to say what a restore lost).
    repl_names: list[str] = field(default_factory=list)
    last_snapshot: float = 0.0
    snapshot_cost: float = 0.0
    # When the session (its turn, or a person's cell in its REPL) last used its kernel
    # (time.monotonic()): an ended root's kept kernel goes after keep_root_kernel unused.
    last_active: float = 0.0
    # Why the REPL must be restored from its latest snapshot once a kernel is attached (a
    # revived INACTIVE session, a session resumed after a restart); None: start empty.
    restore_reason: str | None = None

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def state(self) -> SessionState:
        return self.record.state
