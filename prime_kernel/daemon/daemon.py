"""The daemon: the composition root. It builds the services (admission, runs, the loop's host,
answers, the kernel side, concurrency slots, access, listing, mail, schedules, refinement, ...),
hands each the narrow pieces it needs, wires the effects of state changes, and opens, starts and
stops them; the server adapter and the CLI call the services themselves. Plain asyncio: it never
imports tornado.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from traitlets import Instance, Int, Type, Unicode, default
from traitlets.config import LoggingConfigurable

from ..harness import Harness
from ..models.router import ModelRouter
from ..protocol.states import TERMINAL, SessionState
from ..util.files import new_id
from .access import Access, TokenRegistry
from .accounting import Accounting
from .admission import Admission
from .answers import Answers
from .autonomy import Autonomy
from .disk import DiskSpace
from .events import EventLog
from .gateway import GatewayLauncher, KernelPlacement
from .goals import Goals
from .host import Host
from .kernel_side import KERNEL_SIDE, KernelSide
from .launcher import KernelLauncher, KernelLink, LocalLauncher
from .learning import Learner
from .lifecycle import Lifecycle
from .listing import Listing
from .mailbox import Mailbox
from .moved import HARNESS_MOVED, MOVED, relocate
from .refining import Refiner
from .registry import SessionRegistry
from .replay import Replays
from .runs import Runs
from .schedules import Schedules
from .secrets import Secrets
from .shared import Shared
from .slots import Slots
from .store import SqliteStore, Store
from .tasks import Background


class Daemon(LoggingConfigurable):
    """Runs agent sessions. Configure as `c.Daemon.<trait>` (or through PrimeApp)."""

    root_dir = Unicode(".", config=True, help="The working folder; the store lives below it.")
    store_dir = Unicode(
        "", config=True, help="Where the SQLite store and blobs live (default: <root>/.prime)."
    )
    max_concurrent = Int(4, config=True, help="Sessions taking turns at once; the rest queue.")
    router_class = Type(
        ModelRouter, klass=ModelRouter, config=True, help="The model router (litellm) to use."
    )
    harness_class = Type(Harness, config=True, help="The Continual Harness implementation.")
    store_class = Type(SqliteStore, klass=Store, config=True, help="The store implementation.")

    kernel_manager = Instance(AsyncMultiKernelManager, allow_none=True)
    url = Unicode("", help="Base URL kernels call back to (set by the server adapter).")
    server_url = Unicode("", help="The server's own http(s) URL (set by the server adapter).")

    @default("store_dir")
    def _default_store_dir(self) -> str:
        return str(Path(self.root_dir) / ".prime")

    def __init__(self, **kwargs: Any) -> None:
        moved = relocate("Daemon", MOVED, kwargs)
        moved += relocate("Harness", HARNESS_MOVED, kwargs, arguments=False)
        super().__init__(**kwargs)
        for note in moved:
            self.log.warning(note)
        self.tokens = tokens = TokenRegistry()
        self.router: ModelRouter = self.router_class(parent=self)
        make_store: Callable[[str], Store] = self.store_class
        self.store = store = make_store(self.store_dir)
        self.registry = registry = SessionRegistry(store)
        # Secrets: the store (the one door, see daemon/store) blanks them out of all it writes.
        self.secrets = secrets = Secrets(self.config, tokens)
        store.redactor = secrets.redactor
        self.event_log = events = EventLog(store)
        self.accounting = accounting = Accounting(registry)
        self.lifecycle = lifecycle = Lifecycle(registry, events, accounting)
        self.background = Background()
        self.spawn = self.background.spawn
        # What nearly every service is built with; each keeps only the pieces it reads.
        shared = Shared(registry, store, events, accounting, lifecycle, self.spawn, parent=self)
        self.slots = Slots(self.max_concurrent)
        self.harness: Harness = self.harness_class(
            parent=self, project_dir=str(Path(self.store_dir) / "harness")
        )
        self.harness.scrub = secrets.scrub  # its files and history are a store too: one door
        self.replays = Replays(store, registry)
        self.disk = DiskSpace(self.root_dir, self.store_dir, store, parent=self)
        self.goals = Goals(registry, events, parent=self)  # a StoreEditor builds one too
        # Kernels: a session's kernel and the REPL in it (kernel_side.py builds them).
        kernels = KernelSide.build(
            shared,
            tokens=tokens,
            on_user_cell=lambda live, cell: self.host.on_user_cell(live, cell),
        )
        # The daemon's own names for them: the server's handlers and the CLI reach them so.
        self.custody, self.snapshots = kernels.custody, kernels.snapshots
        self.spills, self.passivation = kernels.spills, kernels.passivation
        self.recovery = kernels.recovery
        # Sessions: admitted, reached, answering, listed; their mail and heartbeats.
        self.listing = Listing(
            registry,
            accounting,
            kernels.custody.alive,
            lambda: self.admission.max_name_chars,
            store,
            epoch=new_id(),  # list cursors (`changed_after`) are only valid within this run
        )
        self.answers = answers = Answers(
            shared, put_blob=lambda data, what: self.admission.put_blob(data, what)
        )
        self.autonomy = Autonomy(
            shared,
            run_silent=kernels.custody.run_silent,
            answers=answers,
            workdir=lambda: str(Path(self.root_dir).resolve()),
        )
        self.admission = Admission(
            shared,
            router=self.router,
            harness=self.harness,
            autonomy=self.autonomy,
            replays=self.replays,
            listing=self.listing,
            start=lambda live: self.runs.start(live),
        )
        self.access = Access(shared, tokens=tokens, admission=self.admission)
        self.mailbox = Mailbox(shared, slots=self.slots, wake=lambda live: self.runs.wake(live))
        self.schedules = Schedules(
            shared, mailbox=self.mailbox, released=lambda session_id: self.runs.released(session_id)
        )
        self.refiner = Refiner(
            shared,
            harness=self.harness,
            router=self.router,
            resolve_model=self.admission.resolve_model,
            model_kwargs=lambda: self.host.model_kwargs,
            max_turns=lambda: self.host.max_turns,
        )
        self.learner = Learner(
            shared, harness=self.harness, max_turns=lambda: self.host.max_turns, scrub=secrets.scrub
        )
        # Runs: the agent loop's host, and what starts, wakes and settles a run.
        self.host = Host(
            shared,
            router=self.router,
            kernels=kernels,
            mailbox=self.mailbox,
            goals=self.goals,
            autonomy=self.autonomy,
            admission=self.admission,
            harness=self.harness,
            learner=self.learner,
            replays=self.replays,
            disk=self.disk,
            answers=answers,
            redactor=secrets.redactor,
            turn_taken=self.refiner.turn_taken,
            waits_after_answer=lambda live: self.runs.waits_after_answer(live),
            unreachable=lambda: self.launcher.unreachable() if self.launcher else "",
        )
        self.runs = Runs(
            shared,
            host=self.host,
            slots=self.slots,
            kernels=kernels,
            replays=self.replays,
            autonomy=self.autonomy,
            disk=self.disk,
            listing=self.listing,
            answers=answers,
            waits=self.schedules.keeps_alive,
            has_unread=self.mailbox.has_unread,
        )
        self.launcher: KernelLauncher | None = None
        self.link: KernelLink | None = None
        self._opened = False
        self.stopping = False  # set when stop() begins: the server refuses requests from then on
        self._wire_effects()

    def _wire_effects(self) -> None:
        lc = self.lifecycle
        lc.on(SessionState.IDLE, self.answers.entered_idle)
        lc.on(SessionState.IDLE, self.passivation.entered_idle)
        lc.on(SessionState.IDLE, self.runs.wake_if_mail)
        lc.on(frozenset({SessionState.RUNNING, *TERMINAL}), self.passivation.cancel_timer)
        lc.on(TERMINAL, self.custody.session_ended)
        lc.on(TERMINAL, self.schedules.session_ended)
        lc.on(TERMINAL, self.answers.session_ended)
        lc.on(SessionState.FAILED, self.refiner.session_failed)
        lc.on(SessionState.DONE, self.learner.session_done)

    @property
    def started(self) -> bool:
        """Whether the daemon runs sessions yet (it takes requests a few seconds earlier)."""
        return self.runs.started.is_set()

    def open(self) -> None:
        """Open the store (refused if another daemon holds it) and load every record."""
        if self._opened:
            return
        self.store.open()
        self.registry.load(self.store.load_sessions(), self.store.update_session)
        self.schedules.load()
        self._opened = True
        self.recovery.adopt()

    def make_link(self) -> KernelLink:
        """What the Prime provisioner connects the kernels it launches with (provisioner.py),
        once `url` is known: the server connects its notebooks' kernels with it before `start`,
        so that those started meanwhile are connected too (what they ask to change is answered
        "starting, retry" until `start` has finished: server/base.py)."""
        if self.link is None:
            self.link = KernelLink(
                self.url, self.tokens, self.root_dir, self.store_dir, self.admission.max_blob_bytes
            )
        return self.link

    async def start(self) -> None:
        self.open()
        if self.kernel_manager is None:
            self.kernel_manager = AsyncMultiKernelManager()
        # Agents work in the root (their relative paths, exports included, land there).
        root = str(Path(self.root_dir).resolve())
        self.launcher = KernelPlacement(parent=self).launcher(
            link=self.make_link(),
            kernel_manager=self.kernel_manager,
            tokens=self.tokens,
            start_timeout=self.custody.kernel_start_timeout,
            server_url=self.server_url,
            secret=self.secrets.add,
            store=self.store,
        )
        await self.launcher.start()
        await self.recovery.reap_kernels(self.launcher)
        pool = self.custody.start(
            self.launcher, lambda: {"cwd": root}, demand=lambda: self.slots.waiting
        )
        self.slots.on_wait = pool.fill
        # The extension imports litellm before the server listens (server/app.py); a daemon
        # started otherwise imports it here, in a thread.
        await self.router.ready()
        self.runs.take_back(self.recovery.resume())
        self.schedules.start()  # after resume(): ticks go to the sessions it took back
        self.spawn(self.listing.prepare(), "prepare-lists")
        self.runs.started.set()

    async def stop(self) -> None:
        """A clean stop: what runs is stopped and left resumable, REPLs are snapshotted."""
        self.stopping = True
        await self.recovery.suspend_all()
        await self.background.cancel()
        await self.custody.close()
        if self.launcher:
            await self.launcher.stop()
        await self.router.close()
        await self.store.close()
        self.harness.close()


# The classes whose settings a daemon reads: itself and the services it builds.
SERVICES: tuple[type[LoggingConfigurable], ...] = (
    Daemon,
    KernelPlacement,
    KernelLauncher,
    LocalLauncher,
    GatewayLauncher,
    *KERNEL_SIDE,
    DiskSpace,
    Goals,
    Admission,
    Runs,
    Mailbox,
    Autonomy,
    Schedules,
    Host,
    ModelRouter,
    Harness,
    Refiner,
    Learner,
)
