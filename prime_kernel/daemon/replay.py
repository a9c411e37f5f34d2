"""Replaying a recorded session: its model's recorded replies, its code run again in fresh kernels.

A replay is a new session whose options say `replay: {"of": ID, "until": N, "subtree": B}`.
Its model calls are answered with the replies session ID recorded (the `assistant` events, turn
by turn): no model is called and nothing is spent. Everything else is the ordinary loop: the
code of each reply runs in the replay's own kernel, and an `rlm()` in it starts a child that
stands for the recorded child of the same rank (creation order). With `subtree`, that child
replays its own record the same way, so a whole tree replays; without, it ends at once as the
recorded child ended (`answered`: its answer, or its error), and only the session's own code
runs again. With `until`, turns after the N-th go to the live model (a branch of the
trajectory), and the children those turns start are ordinary ones.

Divergence is judged afterwards, from the store: the k-th cell output (`observation` event) of
a replayed session against the k-th of its recording. Session ids of the replay are read as the
ids they stand for, so a child's id printed by a cell is not a difference.

A recording also travels as a file (`dump_recording`, `load_recording`): a tree's records, the
events a replay reads and the blobs they name, in one JSON document that loads into another
store (the project's regression fixtures, tests/fixtures/trajectories/).
"""

from __future__ import annotations

import base64
import difflib
from dataclasses import dataclass, field
from typing import Any

from ..models.router import Completion
from ..protocol.errors import NotFound, PrimeError
from ..protocol.events import EventKind
from .records import SessionRecord
from .registry import SessionRegistry
from .store import Store

# The `format` of a recording file; a file of another format is refused, not misread.
RECORDING_FORMAT = "prime-kernel-recording/1"
# The events a replay reads: the model's replies, the agent's cells and their outputs.
_RECORDED_KINDS = [EventKind.ASSISTANT.value, EventKind.CELL.value, EventKind.OBSERVATION.value]
# Lines of unified diff shown for a divergent cell.
DIFF_LINES = 12
_USAGE_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "total_tokens",
)


@dataclass
class Cell:
    """One cell the agent ran: the turn (1-based) whose reply held it, its code, its output."""

    turn: int
    code: str
    output: str


@dataclass
class Recording:
    """What a session recorded that a replay needs."""

    session_id: str
    replies: list[dict[str, Any]]  # the assistant messages, turn by turn
    cells: list[Cell]
    children: list[str] = field(default_factory=list)  # in creation order


async def read_recording(store: Store, record: SessionRecord, children: list[str]) -> Recording:
    events = await store.events(record.id, kinds=_RECORDED_KINDS)
    replies: list[dict[str, Any]] = []
    cells: list[Cell] = []
    code = ""
    for event in events:
        kind, data = event["kind"], event["data"]
        if kind == EventKind.ASSISTANT.value:
            message: dict[str, Any] = {"role": "assistant", "content": data.get("content") or ""}
            if data.get("tool_calls"):
                message["tool_calls"] = data["tool_calls"]
            replies.append(message)
        elif kind == EventKind.CELL.value:
            if data.get("source") == "agent":  # not a person's, nor the harness's setup
                code = data.get("code") or ""
        else:  # an observation: the output of the agent's cell just run
            cells.append(Cell(len(replies), code, data.get("text") or ""))
    return Recording(record.id, replies, cells, children)


async def dump_recording(
    store: Store, registry: SessionRegistry, session_id: str
) -> dict[str, Any]:
    """The ended tree of `session_id` as a JSON-able recording: each session's record (parents
    before children), the events a replay reads, and the context and answer blobs the records
    name (base64), so that `load_recording` puts in another store all a replay of it needs."""
    root = registry.get(session_id)
    sessions = []
    blobs: dict[str, str] = {}
    for record in [root, *registry.descendants(session_id)]:
        if not record.state.terminal:
            raise PrimeError(
                f"session {record.id} is {record.state.value}: only an ended tree is recorded"
            )
        for blob in (record.context_blob, record.answer_blob):
            if blob and blob not in blobs:
                blobs[blob] = base64.b64encode(await store.get_blob(blob)).decode("ascii")
        row = record.to_row()
        row["kernel_id"] = None  # the kernel it ran in is gone: not part of the recording
        events = await store.events(record.id, kinds=_RECORDED_KINDS)
        sessions.append(
            {"record": row, "events": [{"kind": e["kind"], "data": e["data"]} for e in events]}
        )
    return {"format": RECORDING_FORMAT, "root": root.id, "sessions": sessions, "blobs": blobs}


async def load_recording(store: Store, recording: dict[str, Any]) -> str:
    """Write a recording made by `dump_recording` into `store` (open, before the daemon that
    will serve it reads its sessions); the id of its root, to replay."""
    if not isinstance(recording, dict) or recording.get("format") != RECORDING_FORMAT:
        got = recording.get("format") if isinstance(recording, dict) else type(recording).__name__
        raise PrimeError(f"not a recording of format {RECORDING_FORMAT!r} (format: {got!r})")
    # Blob ids are the store's to give: each blob gets a new one, and the records follow.
    blob_ids = {
        old: await store.put_blob(base64.b64decode(data))
        for old, data in recording.get("blobs", {}).items()
    }
    for session in recording["sessions"]:
        row = dict(session["record"])
        for key in ("context_blob", "answer_blob"):
            if row.get(key):
                row[key] = blob_ids[row[key]]
        store.insert_session(row)
        for event in session["events"]:
            store.append_event(row["id"], event["kind"], event["data"])
    await store.flush()
    return str(recording["root"])


class Replays:
    """The recordings replays read, and what each replayed session answers its model with."""

    def __init__(self, store: Store, registry: SessionRegistry) -> None:
        self.store = store
        self.registry = registry
        self._recordings: dict[str, Recording] = {}

    async def recording(self, session_id: str) -> Recording:
        if session_id not in self._recordings:
            record = self.registry.get(session_id)
            if not record.is_agent:
                raise PrimeError(f"session {session_id} is not an agent session: nothing to replay")
            if not record.state.terminal:
                raise PrimeError(
                    f"session {session_id} is {record.state.value}: only an ended session replays"
                )
            children = [c.id for c in self.registry.children(session_id)]
            self._recordings[session_id] = await read_recording(self.store, record, children)
        return self._recordings[session_id]

    async def plan(self, of: str, until: int | None, subtree: bool) -> dict[str, Any]:
        """The `replay` option of a session replaying `of` (checked, its recording read)."""
        if until is not None and (isinstance(until, bool) or not isinstance(until, int)):
            raise PrimeError("until must be an integer")
        if until is not None and until < 0:
            raise PrimeError("until must be 0 or more")
        await self.recording(of)
        return {"of": of, "until": until, "subtree": bool(subtree)}

    async def child_plan(
        self, parent: SessionRecord, turn: int, rank: int
    ) -> dict[str, Any] | None:
        """The `replay` option of the `rank`-th child (0: the first) a session starts in its
        turn `turn` (0: the first): if that turn is replayed, the recorded child of the same
        rank (if there was one) replays too."""
        if not replaying(parent, turn):
            return None
        recording = await self.recording(parent.options["replay"]["of"])
        if rank >= len(recording.children):
            return None
        subtree = bool(parent.options["replay"].get("subtree"))
        plan = await self.plan(recording.children[rank], None, subtree)
        if not subtree:
            plan["answered"] = True
        return plan

    def answered(self, record: SessionRecord) -> SessionRecord | None:
        """The recorded session `record` ends as, if it runs nothing of its own (the child
        of a replay without `subtree`)."""
        plan = record.options.get("replay") or {}
        return self.registry.get(plan["of"]) if plan.get("answered") else None

    def reply(self, record: SessionRecord, turn: int) -> Completion | None:
        """The recorded reply of turn `turn` (0: the first) if the session replays it; None if
        it goes to the live model. A replay past the end of its recording fails: its code did
        something else than the recorded code did."""
        plan = record.options.get("replay")
        if not plan or not replaying(record, turn):
            return None
        recording = self._recordings[plan["of"]]
        if turn >= len(recording.replies):
            raise PrimeError(
                f"the replay of session {plan['of']} wants turn {turn + 1}, and the recording "
                f"has {len(recording.replies)}: it diverged from the recording"
            )
        usage: dict[str, float] = dict.fromkeys(_USAGE_KEYS, 0)
        return Completion(dict(recording.replies[turn]), "replayed", usage, whole=True)

    async def report(self, session_id: str) -> dict[str, Any]:
        """How the replay `session_id` and the replays below it went against their recordings:
        turns replayed, sessions, divergent cells, and each session's first divergent cell."""
        root = self.registry.get(session_id)
        if not root.options.get("replay"):
            raise NotFound(f"session {session_id} is not a replay")
        below = self.registry.descendants(session_id)
        tree = [r for r in [root, *below] if r.options.get("replay")]
        # A replay's id is read as the id of the session it replays.
        aliases = {r.id: r.options["replay"]["of"] for r in tree}
        # The children that ended as recorded ran no code: nothing of theirs to compare.
        replays = [r for r in tree if not r.options["replay"].get("answered")]
        sessions = []
        for record in replays:
            of = record.options["replay"]["of"]
            recording = await self.recording(of)
            mine = await read_recording(self.store, record, [])
            sessions.append(
                {
                    **_compare(record, recording, mine, aliases),
                    "recorded_state": self.registry.get(of).state.value,
                }
            )
        return {
            "session_id": session_id,
            "of": root.options["replay"]["of"],
            "turns": sum(s["turns"] for s in sessions),
            "sessions": len(sessions),
            "divergent": sum(s["divergent"] for s in sessions),
            "replays": sessions,
        }


def replaying(record: SessionRecord, turn: int) -> bool:
    """Whether turn `turn` (0: the first) of `record` is answered from its recording."""
    plan = record.options.get("replay") or {}
    until = plan.get("until")
    return bool(plan) and (until is None or turn < until)


def _compare(
    record: SessionRecord, recording: Recording, mine: Recording, aliases: dict[str, str]
) -> dict[str, Any]:
    plan = record.options["replay"]
    until = plan.get("until")
    turns = len(mine.replies) if until is None else min(len(mine.replies), until)
    # Only the cells of replayed turns are compared: after `until`, the model is live.
    recorded = [c for c in recording.cells if until is None or c.turn <= until]
    replayed = [c for c in mine.cells if until is None or c.turn <= until]
    divergent = 0
    first: dict[str, Any] | None = None
    for index in range(max(len(recorded), len(replayed))):
        old = recorded[index] if index < len(recorded) else None
        new = replayed[index] if index < len(replayed) else None
        new_text = _unalias(new.output, aliases) if new is not None else None
        if old is not None and new_text == old.output:
            continue
        divergent += 1
        if first is None:
            cell = old or new
            assert cell is not None
            first = {
                "cell": index + 1,
                "turn": cell.turn,
                "code": cell.code,
                "diff": _diff(old.output if old else None, new_text),
            }
    return {
        "session_id": record.id,
        "of": plan["of"],
        "state": record.state.value,
        "error": record.error,
        "turns": turns,
        "cells": len(replayed),
        "divergent": divergent,
        "first_divergence": first,
    }


def _unalias(text: str, aliases: dict[str, str]) -> str:
    for new, old in aliases.items():
        text = text.replace(new, old)
    return text


def _diff(old: str | None, new: str | None) -> str:
    """A short unified diff of a cell's recorded output and its replayed one."""
    if old is None:
        return "(the recording has no such cell: the replay ran more code)"
    if new is None:
        return "(the replay did not run this cell)"
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), "recorded", "replayed", lineterm="", n=1
        )
    )
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"… ({len(lines) - DIFF_LINES} more lines)"]
    return "\n".join(lines)
