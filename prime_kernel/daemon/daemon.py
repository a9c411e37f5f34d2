"""The daemon: owner of every session, its kernel, its loop and its durable record.

`Daemon` is the composition root and the façade the server adapter and the CLI call. It builds
the collaborators and hands each the narrow pieces it needs:

- `SessionRegistry` (registry.py): every record in memory, writing through to the `Store`;
- `EventLog` (events.py): trajectory events, scrubbed of secrets, pushed to listeners;
- `Lifecycle` (lifecycle.py): every state change and its effects;
- `Accounting` (accounting.py): usage and budgets;
- `Scheduler`, `Mailbox`, `Snapshots`/`Passivation`, `Refiner`, `Learner`, `Recovery`;
- long-horizon control: `Goals`, `Schedules` (heartbeats), `Autonomy` (gates and
  continuations), `Collector` (spilling REPL values);
- `Host` (host.py): the agent loop's `LoopHost` — turns, model calls, cells, `llm()`.

Plain asyncio + jupyter_client: it never imports tornado. Everything a kernel asks for arrives
here with the calling session already resolved from its token, so identity, depth and limits are
decided here and nowhere else.
"""

from __future__ import annotations

import asyncio
import json
import pickle
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from traitlets import Instance, Int, Type, Unicode, default
from traitlets.config import LoggingConfigurable

from ..harness.harness import Harness
from ..models.router import ModelRouter
from ..protocol.errors import (
    Forbidden,
    InvalidRequest,
    NotFound,
)
from ..protocol.events import EventKind
from ..protocol.requests import SessionRequest
from ..protocol.states import TERMINAL, SessionState
from ..util.files import new_id
from ..util.redact import Scrubber, daemon_secrets
from .access import Access, TokenRegistry
from .accounting import Accounting
from .admission import Admission
from .autonomy import Autonomy
from .collector import Collector
from .custody import KernelCustody
from .disk import DiskSpace
from .events import DeltaListener, EventLog, Listener
from .gateway import GatewayLauncher
from .goals import Goals
from .host import Host
from .launcher import KernelLauncher, LocalLauncher
from .learning import Learner
from .lifecycle import Lifecycle
from .listing import Listing
from .mailbox import Mailbox
from .moved import relocate
from .passivation import Passivation, Snapshots
from .records import SessionRecord
from .recovery import Recovery
from .refining import Refiner
from .registry import SessionRegistry
from .replay import Replays
from .runs import Runs
from .scheduler import Scheduler
from .schedules import Schedules
from .session import Conversation, LiveSession
from .store import SqliteStore, Store

# Settings that moved off the Daemon to the service that reads them: `c.Daemon.<name>` still
# works this release, with a warning (moved.py).
MOVED = {
    name: new_cls
    for new_cls, names in {
        "KernelCustody": (
            "pool_size",
            "kernels_ahead",
            "kernel_start_timeout",
            "kernel_poll_interval",
            "cell_timeout",
            "interrupt_grace",
            "max_cell_output_bytes",
            "max_kernel_restarts",
            "keep_root_kernel",
            "max_kept_kernels",
            "prune_children_kernels",
        ),
        "Admission": (
            "default_model",
            "max_depth",
            "default_budget",
            "max_children",
            "max_batch",
            "max_name_chars",
            "max_prompt_chars",
            "max_blob_bytes",
        ),
        "Runs": ("loop_class",),
        "Mailbox": (
            "message_max_bytes",
            "max_pending_messages",
            "message_rate_limit",
            "message_rate_window",
        ),
        "ModelRouter": ("model_timeout", "direct_openai"),
        "Passivation": ("idle_timeout",),
        "Recovery": ("auto_resume", "stop_snapshot_timeout"),
        "Host": (
            "max_turns",
            "observation_chars",
            "model_kwargs",
            "compact_at",
            "compact_keep_recent",
            "snapshot_overhead",
            "max_llm_batch",
            "llm_batch_concurrency",
        ),
    }.items()
    for name in names
}

_current: Daemon | None = None


def current_daemon() -> Daemon | None:
    """The daemon running in this process, if any (the provisioner asks for it)."""
    return _current


class Daemon(LoggingConfigurable):
    """Runs agent sessions. Configure as `c.Daemon.<trait>` (or through PrimeApp)."""

    root_dir = Unicode(".", config=True, help="The working folder; the store lives below it.")
    store_dir = Unicode(
        "", config=True, help="Where the SQLite store and blobs live (default: <root>/.prime)."
    )
    kernel_name = Unicode(
        "prime-agent", config=True, help="Kernelspec that agent sessions are started from."
    )
    max_concurrent = Int(4, config=True, help="Sessions taking turns at once; the rest queue.")
    router_class = Type(
        ModelRouter, klass=ModelRouter, config=True, help="The model router (litellm) to use."
    )
    harness_class = Type(Harness, config=True, help="The Continual Harness implementation.")
    store_class = Type(SqliteStore, klass=Store, config=True, help="The store implementation.")
    kernel_launcher_class = Type(
        LocalLauncher,
        klass=KernelLauncher,
        config=True,
        help="Where agent kernels run: LocalLauncher (kernels of this server, forked from a "
        "template; see c.LocalLauncher) or another KernelLauncher.",
    )

    gateway_url = Unicode(
        "",
        config=True,
        help="Start agent kernels on this Jupyter Kernel Gateway or Enterprise Gateway "
        "(http(s)://host:port) instead of locally; notebooks stay local. Auth and more: "
        "c.GatewayLauncher (see docs/gateway.md).",
    )
    public_url = Unicode(
        "",
        config=True,
        help="This server's URL as the gateway's kernels reach it (http(s)://host:port/base/): "
        "they call the daemon there, with their session's token. Default: the URL the server "
        "listens on (right when the gateway runs on this host).",
    )

    kernel_manager = Instance(AsyncMultiKernelManager, allow_none=True)
    url = Unicode("", help="Base URL kernels call back to (set by the server adapter).")
    server_url = Unicode("", help="The server's own http(s) URL (set by the server adapter).")

    @default("store_dir")
    def _default_store_dir(self) -> str:
        return str(Path(self.root_dir) / ".prime")

    def __init__(self, **kwargs: Any) -> None:
        moved = relocate("Daemon", MOVED, kwargs)
        super().__init__(**kwargs)
        for note in moved:
            self.log.warning(note)
        self.tokens = TokenRegistry()
        self.router: ModelRouter = self.router_class(parent=self)
        make_store: Callable[[str], Store] = self.store_class
        self.store = make_store(self.store_dir)
        self.registry = SessionRegistry()
        # Every secret the daemon knows, blanked out of whatever the store writes: the store
        # is the one door (see daemon/store), and what it returns is what memory keeps.
        # (`c.Host.model_kwargs` is in the config, under whichever name it was given.)
        self.scrubber = Scrubber(config=[self.config])
        self.store.redactor = lambda: self.scrubber.redactor(self.tokens.live_tokens())
        self.event_log = EventLog(self.store)
        self.accounting = Accounting(self.registry)
        self.lifecycle = Lifecycle(self.registry, self.event_log, self.accounting)
        self.scheduler = Scheduler(self.max_concurrent)
        self.snapshots = Snapshots(
            self.store,
            self.event_log,
            lambda: self.custody.cell_timeout,
            cap=lambda: self.collector.snapshot_cap,
        )
        self.custody = KernelCustody(
            registry=self.registry,
            store=self.store,
            events=self.event_log,
            lifecycle=self.lifecycle,
            tokens=self.tokens,
            snapshots=self.snapshots,
            spawn=self.spawn,
            on_user_cell=lambda live, cell: self.host.on_user_cell(live, cell),
            parent=self,
        )
        self.listing = Listing(
            self.registry,
            self.accounting,
            self.custody.alive,
            lambda: self.admission.max_name_chars,
        )
        self.collector = Collector(
            store=self.store,
            events=self.event_log,
            run_silent=self.custody.run_silent,
            timeout=lambda: self.custody.cell_timeout,
            parent=self,
        )
        self.passivation = Passivation(
            self.lifecycle,
            self.snapshots,
            self.custody.release,
            self.spawn,
            before_save=lambda live: self.collector.auto_spill(live, "passivation"),
            parent=self,
        )
        self.mailbox = Mailbox(
            registry=self.registry,
            store=self.store,
            events=self.event_log,
            scheduler=self.scheduler,
            wake=lambda live: self.runs.wake(live),
            parent=self,
        )
        self.goals = Goals(self.registry, self.event_log, parent=self)
        self.autonomy = Autonomy(
            accounting=self.accounting,
            events=self.event_log,
            run_silent=self.custody.run_silent,
            record_answer=self.record_answer,
            workdir=lambda: str(Path(self.root_dir).resolve()),
            parent=self,
        )
        self.schedules = Schedules(
            store=self.store,
            registry=self.registry,
            mailbox=self.mailbox,
            events=self.event_log,
            accounting=self.accounting,
            spawn=self.spawn,
            released=lambda session_id: self.runs.released(session_id),
            parent=self,
        )
        self.harness: Harness = self.harness_class(
            parent=self, project_dir=str(Path(self.store_dir) / "harness")
        )
        # The harness's files and history are a store too: the same door.
        self.harness.scrub = self.scrub
        self.replays = Replays(self.store, self.registry)
        self.admission = Admission(
            registry=self.registry,
            store=self.store,
            router=self.router,
            harness=self.harness,
            accounting=self.accounting,
            autonomy=self.autonomy,
            replays=self.replays,
            parent=self,
        )
        self.access = Access(
            tokens=self.tokens,
            registry=self.registry,
            events=self.event_log,
            admission=self.admission,
            new_live=self.new_live,
        )
        self.refiner = Refiner(self)
        self.learner = Learner(
            registry=self.registry,
            store=self.store,
            events=self.event_log,
            harness=self.harness,
            max_turns=lambda: self.host.max_turns,
            scrub=self.scrub,
            spawn=self.spawn,
        )
        self.recovery = Recovery(self, parent=self)
        self.disk = DiskSpace(self.root_dir, self.store_dir, self.store, parent=self)
        self.launcher: KernelLauncher | None = None
        # An id of this daemon's run: list cursors (`changed_after`) are only valid within it.
        self.epoch = new_id()
        self._background: set[asyncio.Task[Any]] = set()
        self._opened = False
        # Set when stop() begins: the server refuses requests from then on.
        self.stopping = False
        # Set once start() made the pool: the server takes requests before that (start runs
        # after it listens and imports litellm), so sessions created early wait for it.
        self._started = asyncio.Event()
        self.host = Host(
            router=self.router,
            events=self.event_log,
            accounting=self.accounting,
            custody=self.custody,
            snapshots=self.snapshots,
            passivation=self.passivation,
            mailbox=self.mailbox,
            goals=self.goals,
            autonomy=self.autonomy,
            collector=self.collector,
            admission=self.admission,
            harness=self.harness,
            learner=self.learner,
            replays=self.replays,
            disk=self.disk,
            redactor=lambda: self.scrubber.redactor(self.tokens.live_tokens()),
            turn_taken=lambda: self.refiner.turn_taken(),
            waits_after_answer=lambda live: self.runs.waits_after_answer(live),
            record_answer=self.record_answer,
            unreachable=self._unreachable,
            parent=self,
        )
        self.runs = Runs(
            host=self.host,
            registry=self.registry,
            lifecycle=self.lifecycle,
            scheduler=self.scheduler,
            custody=self.custody,
            snapshots=self.snapshots,
            passivation=self.passivation,
            replays=self.replays,
            autonomy=self.autonomy,
            disk=self.disk,
            listing=self.listing,
            recovery=self.recovery,
            waits=self.schedules.keeps_alive,
            has_unread=self.mailbox.has_unread,
            record_answer=self.record_answer,
            started=self._started,
            spawn=self.spawn,
            parent=self,
        )
        self._wire_effects()

    def _wire_effects(self) -> None:
        lc = self.lifecycle
        lc.on(SessionState.IDLE, self.passivation.entered_idle)
        lc.on(SessionState.IDLE, self.runs.wake_if_mail)
        lc.on(frozenset({SessionState.RUNNING, *TERMINAL}), self.passivation.cancel_timer)
        lc.on(TERMINAL, self.custody.session_ended)
        lc.on(TERMINAL, self.schedules.session_ended)
        lc.on(SessionState.FAILED, self.refiner.session_failed)
        lc.on(SessionState.DONE, self.learner.session_done)

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        """Whether the daemon runs sessions yet (it takes requests a few seconds earlier)."""
        return self._started.is_set()

    @property
    def live(self) -> dict[str, LiveSession]:
        return self.registry.live

    def open(self) -> None:
        """Open the store (refused if another daemon holds it) and load every record."""
        if self._opened:
            return
        self.store.open()
        self.registry.load(self.store.load_sessions(), self.store.update_session)
        self.schedules.load()
        self._opened = True
        self.recovery.adopt()

    async def start(self) -> None:
        global _current
        self.open()
        _current = self
        if self.kernel_manager is None:
            self.kernel_manager = AsyncMultiKernelManager()
        # Agents work in the root (their relative paths, exports included, land there).
        root = str(Path(self.root_dir).resolve())
        self.launcher = self._make_launcher()
        await self.launcher.start()
        await self.recovery.reap_kernels(self.launcher)
        pool = self.custody.start(
            self.launcher, lambda: {"cwd": root}, demand=lambda: self.scheduler.waiting
        )
        self.scheduler.on_wait = pool.fill
        # The extension imports litellm before the server listens (server/app.py); a daemon
        # started otherwise imports it here, in a thread.
        await self.router.ready()
        self.recovery.resume()
        self.schedules.start()  # after resume(): ticks go to the sessions it took back
        self.spawn(self.listing.prepare(), "prepare-lists")
        self._started.set()

    def _make_launcher(self) -> KernelLauncher:
        common = {
            "parent": self,
            "kernel_manager": self.kernel_manager,
            "kernel_name": self.kernel_name,
            "start_timeout": self.custody.kernel_start_timeout,
        }
        if self.gateway_url:
            gateway = GatewayLauncher(
                url=self.gateway_url,
                public_url=self.public_url or self.server_url,
                tokens=self.tokens,
                **common,
            )
            # Never recorded: what the gateway authenticates us with.
            self.scrubber.add(gateway.auth_token, *gateway.headers.values())
            return gateway
        launcher: KernelLauncher = self.kernel_launcher_class(**common)
        return launcher

    async def stop(self) -> None:
        """A clean stop: what runs is stopped and left resumable, REPLs are snapshotted."""
        global _current
        self.stopping = True
        await self.recovery.suspend_all()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.custody.close()
        if self.launcher:
            await self.launcher.stop()
        await self.router.close()
        await self.store.close()
        self.harness.close()
        if _current is self:
            _current = None

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "") -> asyncio.Task[Any]:
        """A background task of this daemon (cancelled when it stops)."""
        task = asyncio.get_running_loop().create_task(coro, name=name or None)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def add_listener(self, listener: Listener) -> None:
        self.event_log.add_listener(listener)

    def remove_listener(self, listener: Listener) -> None:
        self.event_log.remove_listener(listener)

    def add_delta_listener(self, listener: DeltaListener) -> None:
        """Told of each piece of a streamed model reply (never stored: see streaming.py)."""
        self.event_log.add_delta_listener(listener)

    def scrub(self, value: Any) -> Any:
        """`value` without any secret the daemon knows (tokens, keys, the server's token)."""
        return self.scrubber.scrub(value, self.tokens.live_tokens())

    def secrets(self) -> set[str]:
        """Every secret the daemon knows now (an export redacts them all)."""
        return daemon_secrets(self)

    def emit(self, live: LiveSession, kind: EventKind, data: dict[str, Any]) -> dict[str, Any]:
        return self.event_log.emit(live.record, kind, data)

    def _unreachable(self) -> str:
        """What to tell of a kernel that cannot reach the daemon: the URL it was given."""
        if not self.gateway_url:
            return ""
        return (
            f" (c.Daemon.public_url, {self.public_url or self.server_url}, must be an "
            "address the gateway's kernels can reach)"
        )

    # -- creating sessions ----------------------------------------------------------------
    def new_live(self, record: SessionRecord) -> LiveSession:
        sid = record.id
        live = LiveSession(
            record,
            Conversation(
                on_append=lambda ms: self.store.append_conversation(sid, ms),
                on_replace=lambda ms: self.store.replace_conversation(sid, ms),
            ),
        )
        self.registry.live[sid] = live
        return live

    async def create_session(
        self, request: SessionRequest, *, parent_id: str | None = None
    ) -> dict[str, Any]:
        """Admit a new agent session and start running it; returns its record at once."""
        [session] = await self.create_sessions([request], parent_id=parent_id)
        return session

    async def create_sessions(
        self, requests: list[SessionRequest], *, parent_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Admit sessions (a root, a child, an rlm.map()'s children: all or none) and start
        running them; returns their records at once."""
        parent = self.registry.get(parent_id) if parent_id else None
        requests = [await self.admission.store_context(r) for r in requests]
        records = await self.admission.requests(parent, requests)
        for record in records:
            self._launch(record, parent)
        return [self.session_json(r.id) for r in records]

    def _launch(self, record: SessionRecord, parent: SessionRecord | None) -> None:
        live = self.new_live(self.admission.record(record))
        task_data: dict[str, Any] = {
            "prompt": record.prompt,
            "model": record.model,
            "budget": record.budget,
        }
        if record.context_type:
            task_data["context_type"] = record.context_type
        self.emit(live, EventKind.TASK, task_data)
        self.emit(live, EventKind.STATE, {"state": SessionState.ADMITTED.value})
        if parent is not None:
            child = {"child_id": record.id, "name": record.name, "prompt": record.prompt}
            self.event_log.emit(parent, EventKind.CHILD, child)
        self.runs.start(live)

    # -- answers --------------------------------------------------------------------------
    async def answer(self, live: LiveSession, data: bytes | bytearray, text: str) -> None:
        """answer(value) from `live`'s kernel: `data` is the value pickled, kept as it came."""
        _check_answering(live)
        if not data:
            raise InvalidRequest("answer() sends its value pickled as the body; it was empty")
        self.record_answer(live, await self.admission.put_blob(data, "the answer"), text, "answer")

    def record_answer(self, live: LiveSession, blob: str | None, text: str, kind: str) -> None:
        _check_answering(live)
        live.answered = True
        live.record.update(answer_repr=text, answer_blob=blob)
        text = live.record.answer_repr or ""  # as stored: scrubbed
        event = {"repr": text, "kind": kind}
        if live.held is not None:
            live.held.append((EventKind.ANSWER, event))  # after the cell that answered
        else:
            self.emit(live, EventKind.ANSWER, event)
        if live.state == SessionState.IDLE:
            live.settled.set()

    async def answer_bytes(self, session_id: str) -> bytes:
        record = self.registry.get(session_id)
        if record.answer_blob is None and record.answer_repr is not None:
            return pickle.dumps(record.answer_repr)  # a reply: the text is the answer
        if not record.answer_blob or not self.store.has_blob(record.answer_blob):
            raise NotFound(f"session {session_id} has no answer")
        return await self.store.get_blob(record.answer_blob)

    async def context_bytes(self, session_id: str) -> bytes:
        record = self.registry.get(session_id)
        if not record.context_blob or not self.store.has_blob(record.context_blob):
            raise NotFound(f"session {session_id} has no context")
        return await self.store.get_blob(record.context_blob)

    # -- reading --------------------------------------------------------------------------
    def session_json(self, session_id: str) -> dict[str, Any]:
        return self.listing.full(session_id)

    def list_json(
        self,
        *,
        states: list[str] | None = None,
        root_id: str | None = None,
        parent_id: str | None = None,
        limit: int | None = None,
        changed_after: int | None = None,
    ) -> str:
        """Records matching the filters (newest first: the order they were admitted in), brief,
        as JSON text; `changed_after` (a `cursor` of an earlier list of the same `epoch`) keeps
        only what changed since."""
        return self.listing.text(
            states=states,
            root_id=root_id,
            parent_id=parent_id,
            limit=limit,
            changed_after=changed_after,
            epoch=self.epoch,
        )

    def list_sessions(self, **filters: Any) -> dict[str, Any]:
        """`list_json` as a dict: `{"sessions": [Session], "cursor", "epoch"}`."""
        return dict(json.loads(self.list_json(**filters)))

    async def events(self, session_id: str, after: int = 0) -> list[dict[str, Any]]:
        self.registry.get(session_id)
        return await self.store.events(session_id, after=after)

    def descendant_ids(self, session_id: str) -> list[str]:
        return [r.id for r in self.registry.descendants(session_id)]


# The classes whose settings a daemon reads: itself and the services it builds.
SERVICES: tuple[type[LoggingConfigurable], ...] = (
    Daemon,
    KernelCustody,
    Admission,
    Runs,
    Mailbox,
    Host,
    ModelRouter,
    Passivation,
    Recovery,
)


def _check_answering(live: LiveSession) -> None:
    if not live.record.is_agent:
        raise Forbidden("answer() is for agent sessions; this kernel is not running one")
