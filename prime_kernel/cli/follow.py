"""Following a session tree while it runs: its trajectory as lines, and on a terminal a status
line that shows what it waits for (the model, its code) with the seconds elapsed, and the model's
reply as it streams.

The same code follows a session in a server this process started (`prime-agent run` headless)
and in one that was already running (`jupyter lab` on the same root). The trajectory is read
from the daemon's REST API, which is the only way to see a store the daemon holds; jupyter_server's
event bus (`bus.py`) says when to read it (each stored event is notified) and carries the
pieces of streamed replies. Without the bus the REST API is polled.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import threading
import time
from dataclasses import dataclass
from typing import Any, TextIO

from ..protocol.responses import MODEL_DELTA_SCHEMA_ID, SESSION_EVENT_SCHEMA_ID
from ..protocol.states import TERMINAL, SessionState
from ..util.format import fmt_cost, fmt_tokens
from .bus import BusError, EventBus
from .remote import Server
from .render import render

# Seconds between polls of the daemon without the event bus (a person does not notice; the
# daemon barely does), and between redraws of the status line.
POLL = 0.2
# With the bus, a look at the daemon when it notifies something, and at least this often (a
# notification lost when the bus reconnects, say).
BUS_POLL = 2.0
# Notifications kept from before the followed tree is known (a few seconds' worth at most).
EARLY = 2000
_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ENDED = {s.value for s in TERMINAL}


class Stop:
    """A request to stop following: Ctrl-C, or the reader of the output went away."""

    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.reason: str | None = None

    def request(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self.requested.set()

    async def wait(self, timeout: float) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.requested.wait(), timeout)


def _bare(reply: str) -> str:
    """A reply without its code fence: a profile's prefill (```python) is stored with the reply
    but never streamed, and the closing fence may be the stop sequence."""
    text = reply.strip()
    for fence in ("```python", "```"):
        if text.startswith(fence):
            text = text[len(fence) :]
            break
    return text.removesuffix("```").strip()


class StatusLine:
    """One line at the bottom of a terminal, redrawn in place; lines are printed above it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.frame = 0
        try:
            _FRAMES.encode(stream.encoding or "ascii")
            self.frames = _FRAMES
        except (UnicodeEncodeError, LookupError):
            self.frames = "|/-\\"

    def draw(self, text: str, since: float) -> None:
        self.frame = (self.frame + 1) % len(self.frames)
        line = f"{self.frames[self.frame]} {text} · {int(time.monotonic() - since)}s"
        width = shutil.get_terminal_size((80, 24)).columns - 1
        self.stream.write("\r\x1b[K" + line[:width])
        self.stream.flush()

    def clear(self) -> None:
        self.stream.write("\r\x1b[K")
        self.stream.flush()


class Ticker:
    """A status line redrawn from a thread while this one is busy with something that does
    not yield (imports, starting a server): `with Ticker(stream, "starting a server"):`.
    Nothing when `stream` is None or not a terminal."""

    def __init__(self, stream: TextIO | None, text: str) -> None:
        self.status = StatusLine(stream) if stream is not None and stream.isatty() else None
        self.text = text
        self.since = time.monotonic()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="prime-ticker", daemon=True)

    def __enter__(self) -> Ticker:
        if self.status is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.status is None or not self.thread.is_alive():
            return
        self.done.set()
        self.thread.join()
        with contextlib.suppress(OSError, ValueError):
            self.status.clear()

    def _run(self) -> None:
        assert self.status is not None
        while True:
            try:
                self.status.draw(self.text, self.since)
            except (OSError, ValueError):  # the terminal went away: its reader says so
                return
            if self.done.wait(0.1):
                return


class Progress:
    """Prints a session tree's events as lines (to `stream`; None: quiet), with a status line
    when `stream` is a terminal."""

    def __init__(self, stream: TextIO | None, stop: Stop) -> None:
        self.stream = stream
        self.stop = stop
        self.status = StatusLine(stream) if stream is not None and stream.isatty() else None
        self.turns: dict[str, int] = {}
        # What the followed tree spent so far (its model calls, as they are shown).
        self.tokens = 0.0
        self.cost = 0.0
        # Per session still going: what it is doing now, and when we learnt it.
        self.phase: dict[str, tuple[str, float]] = {}
        # An answer is recorded while the cell calling answer() runs, before that cell's
        # event: it is shown after the cell.
        self.held: dict[str, list[str]] = {}
        # On a terminal, the reply one session's model is streaming, shown as it comes (one at
        # a time: a reply streamed by another session meanwhile is shown when stored):
        # (session id, call), its indent, and whether its line was broken by another line.
        self.live: tuple[str, int] | None = None
        self.live_indent = ""
        self.live_broken = False
        # Session id -> the text streamed of its latest reply, not to be printed again.
        self.streamed: dict[str, str] = {}

    def count(self, record: dict[str, Any], depth: int, event: dict[str, Any]) -> None:
        """Take an event into account (turns, spending, what the session does now)."""
        sid, kind, data = record["id"], event["kind"], event["data"]
        if kind == "model_call":
            usage = data.get("usage") or {}
            self.tokens += usage.get("total_tokens", 0)
            self.cost += data.get("cost") or 0
            if not data.get("purpose"):
                self.turns[sid] = self.turns.get(sid, 0) + 1
        self._note_phase(record, depth, kind, data)

    def show(self, record: dict[str, Any], depth: int, event: dict[str, Any]) -> None:
        self.count(record, depth, event)
        sid, kind, data = record["id"], event["kind"], event["data"]
        if self.stream is None or _routine(depth, kind, data):
            return
        if kind == "assistant" and self._was_streamed(sid, str(data.get("content") or "")):
            return
        lines = render(event)
        if kind == "model_call" and not data.get("purpose"):
            lines[0] = (
                f"turn {self.turns[sid]} · {lines[0]} · "
                f"total {fmt_tokens(self.tokens)} tokens, {fmt_cost(self.cost)}"
            )
        indent = "  " * depth
        tag = f"[{sid}] " if depth else ""
        text = (
            [indent + tag + lines[0], *(indent + "  " + line for line in lines[1:])]
            if lines
            else []
        )
        if kind == "answer":
            self.held[sid] = text
            return
        held = self.held.pop(sid, [])
        self.write(text + held if kind == "cell" else held + text)

    def _note_phase(self, record: dict[str, Any], depth: int, kind: str, data: Any) -> None:
        sid = record["id"]
        turn = self.turns.get(sid, 0)
        state = data.get("state") if kind == "state" else None
        if state is not None and state != SessionState.RUNNING.value:
            doing = "waiting to start" if state == SessionState.ADMITTED.value else None
        elif kind in ("model_call", "assistant", "child"):
            doing = f"turn {turn}: running its code"
        else:
            doing = f"turn {turn + 1}: waiting for {record.get('model')}"
        if doing is None:
            self.phase.pop(sid, None)
        else:
            tag = f"[{sid}] " if depth else ""
            self.phase[sid] = (tag + doing, time.monotonic())

    def delta(self, record: dict[str, Any], depth: int, note: dict[str, Any]) -> None:
        """A piece of a streamed reply (protocol ModelDelta): written as it comes, on a
        terminal only."""
        if self.status is None or self.stream is None:
            return
        sid = record["id"]
        key = (sid, int(note["call"]))
        text = str(note.get("text") or "")
        # The status line goes when a reply's line begins (pieces go on the same line).
        begins = self.live is None or self.live_broken
        if self.live is None:
            if not text:
                return
            self.live = key
            self.live_indent = "  " * depth
            self.live_broken = False
            self.streamed[sid] = text
            tag = f"[{sid}] " if depth else ""
            shown = f"{self.live_indent}{tag}says: {text.lstrip()}"
        elif self.live != key:
            return
        else:
            self.streamed[sid] += text
            shown = text
            if self.live_broken and text:
                shown = f"{self.live_indent}  … {text}"
                self.live_broken = False
        try:
            if begins:
                self.status.clear()
            self.stream.write(shown.replace("\n", "\n" + self.live_indent + "  "))
            if note.get("done"):
                self._end_live()
            self.stream.flush()
        except BrokenPipeError:
            self.stream = self.status = None
            self.stop.request("output closed")
            return
        self.tick()

    def _was_streamed(self, sid: str, content: str) -> bool:
        """Whether a stored reply is the one shown as it streamed (then not shown again)."""
        if self.live is not None and self.live[0] == sid:
            self._end_live()
        streamed = self.streamed.pop(sid, None)
        return streamed is not None and _bare(streamed) == _bare(content)

    def _end_live(self) -> None:
        assert self.stream is not None
        if not self.live_broken:
            self.stream.write("\n")
        self.live = None

    def note(self, text: str) -> None:
        if self.stream is not None:
            self.write([text])

    def write(self, lines: list[str]) -> None:
        if self.stream is None or not lines:
            return
        try:
            if self.status is not None:
                self.status.clear()
            if self.live is not None and not self.live_broken:
                # Lines come between a streaming reply's pieces: it goes on below them.
                self.stream.write("\n")
                self.live_broken = True
            self.stream.write("".join(line + "\n" for line in lines))
            self.stream.flush()
            self.tick()
        except BrokenPipeError:
            self.stream = self.status = None
            self.stop.request("output closed")

    def tick(self) -> None:
        """Redraw the status line: the latest phase of a session still going (not while a
        reply streams on the line it would take)."""
        if self.status is None or (self.live is not None and not self.live_broken):
            return
        if self.phase:
            self.status.draw(*max(self.phase.values(), key=lambda p: p[1]))
        else:
            self.status.clear()

    def close(self) -> None:
        if self.live is not None and self.stream is not None:
            with contextlib.suppress(BrokenPipeError):
                self._end_live()
        for lines in self.held.values():
            self.write(lines)
        self.held.clear()
        if self.status is not None:
            with contextlib.suppress(BrokenPipeError):
                self.status.clear()


# The followed session's own states a person learns from elsewhere: the status line shows it
# waiting and running; its end (or its wait for messages, IDLE) is the summary the command
# prints, with its answer or error.
_SAID_ELSEWHERE = {
    SessionState.ADMITTED.value,
    SessionState.RUNNING.value,
    SessionState.IDLE.value,
    *_ENDED,
}


def _routine(depth: int, kind: str, data: dict[str, Any]) -> bool:
    """Whether an event is left out of the progress: bookkeeping (a REPL snapshot after each
    turn), or what the command says once at the end (the followed session's answer and its
    final state)."""
    if kind == "snapshot":
        return True
    if depth:
        return False
    if kind == "answer":
        return True
    # A reason is news (RUNNING again after a restart, say), except the end's: the summary
    # gives that one.
    state = data.get("state")
    said = state in _SAID_ELSEWHERE and (state in _ENDED or not data.get("reason"))
    return kind == "state" and said


@dataclass
class Outcome:
    record: dict[str, Any]  # the followed session's final record
    answer_kind: str | None  # "answer" (answer(value)), "reply" (text without code), or None
    stopped: str | None  # why following was asked to stop (Stop.reason), if it was


async def past(server: Server, session_id: str, progress: Progress) -> dict[str, int]:
    """What the session's tree has done so far, counted by `progress` but not shown: the
    `after` for a `follow` of what it does from now on."""
    first = await asyncio.to_thread(server.session, session_id)
    records = await asyncio.to_thread(server.tree, first["root_id"])
    seen = {}
    for record, depth in _subtree(records, session_id):
        events = await asyncio.to_thread(server.events, record["id"])
        for event in events:
            progress.count(record, depth, event)
        seen[record["id"]] = events[-1]["seq"] if events else 0
    return seen


async def follow(
    server: Server,
    session_id: str,
    progress: Progress,
    stop: Stop,
    *,
    after: dict[str, int] | None = None,
    news: News | None = None,
) -> Outcome:
    """Show the trajectory of the session and its descendants until it ends, or (a persistent
    session) waits IDLE for messages; from the event after `after[session id]`, if given.
    `news`: the event bus's notifications, to look when something happened instead of polling.

    On a stop request it cancels the session (and its subtree) and follows it to CANCELLED.
    Sub-agents still going when it ends are cancelled: nothing would read their answers.
    """
    call = asyncio.to_thread
    first = await call(server.session, session_id)
    root_id = first["root_id"]
    seen: dict[str, int] = dict(after or {})  # session id -> the last event seq shown
    last: dict[str, dict[str, Any]] = {}  # session id -> its record as last seen
    done: set[str] = set()  # ended, and every event of theirs shown
    cancelled = False
    answer_kind: str | None = None
    if news is not None:
        news.watch(root_id, session_id, progress)
    while True:
        if stop.requested.is_set() and not cancelled:
            cancelled = True
            progress.note("cancelling the session…")
            await call(server.cancel, session_id)
        records = _subtree(await call(server.tree, root_id), session_id)
        if news is not None:
            news.place(records)
        for record, depth in records:
            sid = record["id"]
            if sid in done:
                continue
            if record["state"] == SessionState.RUNNING.value or record != last.get(sid):
                for event in await call(server.events, sid, seen.get(sid, 0)):
                    seen[sid] = event["seq"]
                    progress.show(record, depth, event)
                    if sid == session_id and event["kind"] == "answer":
                        answer_kind = event["data"].get("kind")
                last[sid] = record
            if record["state"] in _ENDED:
                done.add(sid)
        top = records[0][0]
        going = [r for r, _ in records if r["state"] not in _ENDED]
        if top["state"] == SessionState.IDLE.value or (top["state"] in _ENDED and not going):
            progress.close()
            return Outcome(top, answer_kind, stop.reason)
        if top["state"] in _ENDED:  # sub-agents left running: cancel each whose parent ended
            for record in going:
                if last.get(record["parent_id"] or "", {}).get("state") in _ENDED:
                    await call(server.cancel, record["id"])
        await _wait(progress, stop, news)


async def _wait(progress: Progress, stop: Stop, news: News | None) -> None:
    """Until it is time to look again: the bus notified something of the tree (or was quiet
    for BUS_POLL), or POLL passed (without the bus); the status line redrawn every POLL."""
    progress.tick()
    if news is None or not news.alive:
        await stop.wait(POLL)
        return
    deadline = time.monotonic() + BUS_POLL
    while time.monotonic() < deadline and news.alive:
        if await news.wait(POLL, stop):
            return
        progress.tick()


class News:
    """The event bus as `follow` uses it: a wake-up when a session of the followed tree stored
    an event, and the pieces of its streamed replies handed to `Progress.delta`."""

    def __init__(self) -> None:
        self.bus: EventBus | None = None
        self.changed = asyncio.Event()
        self.root_id: str | None = None
        self.progress: Progress | None = None
        # Session id -> its record and depth below the followed session, as last looked at.
        self.places: dict[str, tuple[dict[str, Any], int]] = {}
        # What came before the followed tree was known.
        self.early: list[dict[str, Any]] = []

    @classmethod
    async def subscribe(cls, server: Server) -> News | None:
        """A subscription to the server's bus; None if it has none (then `follow` polls)."""
        news = cls()
        bus = EventBus(server.info, news.on_message, asyncio.get_running_loop())
        try:
            news.bus = await asyncio.to_thread(bus.start)
        except BusError:
            return None
        return news

    @property
    def alive(self) -> bool:
        return self.bus is not None and self.bus.alive

    def watch(self, root_id: str, session_id: str, progress: Progress) -> None:
        """Follow `session_id` (in the tree of `root_id`): its pieces from now on, and those
        that came before (a reply may begin before the first look at the tree)."""
        self.root_id = root_id
        self.progress = progress
        self.places.setdefault(session_id, ({"id": session_id}, 0))
        early, self.early = self.early, []
        for data in early:
            self.on_message(data)

    def place(self, records: list[tuple[dict[str, Any], int]]) -> None:
        self.places.update((record["id"], (record, depth)) for record, depth in records)

    async def wait(self, timeout: float, stop: Stop) -> bool:
        """Whether something was notified (or a stop requested) within `timeout` seconds;
        the notification is forgotten."""
        if not (self.changed.is_set() or stop.requested.is_set()):
            waits = {
                asyncio.ensure_future(self.changed.wait()),
                asyncio.ensure_future(stop.requested.wait()),
            }
            _, pending = await asyncio.wait(
                waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
        notified = self.changed.is_set() or stop.requested.is_set()
        self.changed.clear()
        return notified

    def close(self) -> None:
        if self.bus is not None:
            self.bus.close()

    def on_message(self, data: dict[str, Any]) -> None:
        if self.root_id is None:
            if len(self.early) < EARLY:
                self.early.append(data)
            return
        if data.get("root_id") != self.root_id:
            return
        schema = data.get("schema_id")
        if schema == SESSION_EVENT_SCHEMA_ID:
            self.changed.set()
        elif schema == MODEL_DELTA_SCHEMA_ID and self.progress is not None:
            place = self.places.get(str(data.get("session_id")))
            if place is not None:
                self.progress.delta(place[0], place[1], data)


def _subtree(records: list[dict[str, Any]], top_id: str) -> list[tuple[dict[str, Any], int]]:
    """`top_id` and the sessions below it among `records`, parents first, with their depth
    below it."""
    children: dict[str | None, list[dict[str, Any]]] = {}
    by_id = {}
    for record in sorted(records, key=lambda r: r["created"]):
        children.setdefault(record["parent_id"], []).append(record)
        by_id[record["id"]] = record
    out = [(by_id[top_id], 0)]
    for record, depth in out:  # grows as it goes: a breadth-first walk
        out.extend((child, depth + 1) for child in children.get(record["id"], []))
    return out
