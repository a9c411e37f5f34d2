"""The jupyter_server extension: starts the daemon and mounts its handlers."""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Any

from jupyter_client.provisioning import KernelProvisionerFactory
from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Instance, Type

from ..daemon.daemon import Daemon
from ..daemon.events import SessionEvent
from ..daemon.launcher import PROVISIONER
from ..daemon.sandbox import NONE, Sandbox, activate, root_warning
from ..models.router import preload
from ..protocol.errors import PrimeError, Unavailable
from ..protocol.responses import (
    MODEL_DELTA,
    MODEL_DELTA_SCHEMA_ID,
    NOTIFICATION,
    SESSION_EVENT_SCHEMA_ID,
)
from ..protocol.wire import API
from ..util.redact import config_secrets
from . import (
    exports,
    goals,
    harness,
    kernel_manager,
    learning,
    messages,
    schedules,
    sessions,
    spills,
    status,
)
from .base import SERVICES, NoRouteHandler
from .kernel_socket import KernelSocket

# The event-bus schema of our notifications: the protocol's, with what jupyter_events needs.
EVENT_SCHEMA: dict[str, Any] = {
    **NOTIFICATION,
    "$id": SESSION_EVENT_SCHEMA_ID,
    "version": "1",
    "personal-data": False,
}
# A streamed model reply's pieces: what a model says may be about a person.
DELTA_SCHEMA: dict[str, Any] = {
    **MODEL_DELTA,
    "$id": MODEL_DELTA_SCHEMA_ID,
    "version": "1",
    "personal-data": True,
}


class PrimeApp(ExtensionApp):
    name = "prime_kernel"
    description = "Prime Agent: agent sessions as Jupyter kernels"
    load_other_extensions = True

    daemon_class = Type(Daemon, klass=Daemon, config=True, help="The daemon implementation.")
    daemon = Instance(Daemon, allow_none=True)
    _kernel_socket: KernelSocket | None = None
    _default_provisioner: str | None = None
    connect_all_kernels = Bool(
        False,
        config=True,
        help="Start every local kernel (not only 'Prime Agent' ones) through the Prime "
        "provisioner, so that each holds a capability to start agents (and spend money) "
        "from its first cell. By default a notebook on another kernel asks for one with "
        "`%load_ext prime_kernel`, which JupyterLab's Agents extension answers.",
    )
    sandbox = Instance(Sandbox, allow_none=True)

    def initialize_settings(self) -> None:
        # litellm's import and the records make most of the 700,000 objects the process keeps
        # for good; a full pass of the collector over them each time they grew by a quarter
        # took a quarter of the import's CPU (1.5 of 6 s at load 12) and found ~1,000 objects
        # of garbage in all. None runs until the server is loaded (and they are frozen out of it).
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._initialize()
        finally:
            if collecting:
                gc.enable()

    def _initialize(self) -> None:
        serverapp = self.serverapp
        assert serverapp is not None
        # litellm takes seconds to import, most of it holding the GIL (C parts: pydantic's
        # schemas, tiktoken's tables): done before the server listens, or every request in
        # those seconds waits for it (up to half a second each). In a thread meanwhile, beside
        # the records' loading and the sandbox's probe.
        preloading = threading.Thread(target=preload, name="import-litellm", daemon=True)
        preloading.start()
        unconnected = kernel_manager.use_for(serverapp.kernel_manager)
        if unconnected:
            self.log.warning("Prime: %s", unconnected)
        # jupyter_client makes it at the first kernel start, on the event loop, reading the
        # entry points of every installed distribution (a fifth of a second on a busy machine),
        # and imports our provisioner's module then (a sixth of a second more).
        factory = KernelProvisionerFactory.instance(parent=serverapp.kernel_manager)
        if PROVISIONER in factory.provisioners:  # (an entry point of the installed package)
            factory.provisioners[PROVISIONER].load()
        try:
            daemon = self.daemon_class(
                parent=self,
                root_dir=serverapp.root_dir,
                kernel_manager=serverapp.kernel_manager,
                log=self.log,
            )
            # Never recorded: the server's token and key-like values of the server's config.
            daemon.secrets.add(
                getattr(serverapp.identity_provider, "token", "") or "",
                *config_secrets(serverapp.config),
            )
            daemon.open()
        except Exception as e:
            self._unavailable(e)
            return
        self.daemon = daemon
        self.daemon.access.kernel_path = self._kernel_path
        self.sandbox = Sandbox(parent=self)
        activate(self.sandbox)
        line = self.sandbox.describe()
        if self.sandbox.probe().mode == NONE:
            self.log.warning("Prime: %s", line)
        else:
            self.log.info("Prime: %s", line)
        warning = root_warning(serverapp.root_dir)
        if warning:
            self.log.warning("Prime: %s", warning)
        self.settings["prime_sandbox"] = self.sandbox
        self.settings["prime_daemon"] = self.daemon
        for name in SERVICES:
            self.settings[f"prime_{name}"] = getattr(self.daemon, name)
        # ServerApp creates its event logger before it loads extensions.
        assert serverapp.event_logger is not None
        serverapp.event_logger.register_event_schema(EVENT_SCHEMA)
        serverapp.event_logger.register_event_schema(DELTA_SCHEMA)
        events = self.daemon.event_log
        events.add_listener(self._emit)
        events.add_delta_listener(self._emit_delta)
        grants = self.settings["prime_grants"] = status.Grants(self.daemon.tokens)
        serverapp.event_logger.add_listener(
            schema_id=status.KERNEL_ACTIONS, listener=grants.on_kernel_action
        )
        serverapp.event_logger.add_listener(
            schema_id=status.KERNEL_ACTIONS, listener=self._kernel_action
        )
        if self.connect_all_kernels:
            factory = KernelProvisionerFactory.instance()
            self._default_provisioner = factory.default_provisioner_name
            factory.default_provisioner_name = PROVISIONER
        preloading.join()
        freeze_startup_objects()

    def _unavailable(self, error: BaseException) -> None:
        """The daemon cannot run (its store is damaged, another daemon holds it, ...): say so
        in the log, once, and on every /api/prime/* request (a JSON 503), while the server and
        its other extensions run on."""
        if not isinstance(error, PrimeError):
            error = Unavailable(f"{type(error).__name__}: {error}")
        self.log.error("Prime: the agent daemon cannot run: %s", error.message)
        self.settings["prime_unavailable"] = error
        web_app = getattr(self.serverapp, "web_app", None)
        if web_app is not None:  # settings already handed over: say it there too
            web_app.settings["prime_unavailable"] = error
        self.daemon = None

    def initialize_handlers(self) -> None:
        for module in (
            sessions,
            messages,
            harness,
            learning,
            exports,
            status,
            goals,
            schedules,
            spills,
        ):
            self.handlers.extend(module.HANDLERS)
        self.handlers.append((rf"{API}/.*", NoRouteHandler))

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        # Runs once the server listens: kernels call back on a Unix socket of their own.
        assert self.serverapp is not None
        if self.daemon is None:
            return  # it could not open: /api/prime/* says why
        self._kernel_socket = KernelSocket(self.serverapp)
        self.daemon.url = self._kernel_socket.start()
        # Where kernels on a gateway call back by default (c.GatewayLauncher.public_url
        # overrides it).
        self.daemon.server_url = self.serverapp.connection_url
        # The Prime kernels people start call the daemon too (agent kernels get theirs as
        # the daemon starts them), also those started while it starts (people's requests are
        # served from now on).
        kernel_manager.connect(self.serverapp.kernel_manager, self.daemon.make_link())
        try:
            await self.daemon.start()
        except Exception as e:
            self.log.exception("Prime: the agent daemon failed to start")
            kernel_manager.connect(self.serverapp.kernel_manager, None)
            with contextlib.suppress(Exception):
                await self.daemon.stop()
            self._unavailable(e)
            return
        self.log.info("Prime daemon started; store at %s", self.daemon.store_dir)

    async def stop_extension(self) -> None:
        if self.serverapp is not None and self.serverapp.event_logger is not None:
            # The server shuts the notebooks' kernels down after its extensions stop: the
            # daemon ends their sessions itself (Recovery.suspend_all), its store closed by then.
            self.serverapp.event_logger.remove_listener(
                schema_id=status.KERNEL_ACTIONS, listener=self._kernel_action
            )
        if self.serverapp is not None:
            kernel_manager.connect(self.serverapp.kernel_manager, None)
        if self.daemon is not None:
            await self.daemon.stop()
        if self._kernel_socket is not None:
            self._kernel_socket.stop()
            self._kernel_socket = None
        activate(None)
        if self._default_provisioner is not None:  # the factory is process-wide
            KernelProvisionerFactory.instance().default_provisioner_name = self._default_provisioner
            self._default_provisioner = None

    async def _kernel_action(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        if data.get("action") == "shutdown" and self.daemon is not None:
            self.daemon.custody.kernel_ended(str(data.get("kernel_id")))

    def _emit(self, note: SessionEvent) -> None:
        assert self.serverapp is not None and self.serverapp.event_logger is not None
        self.serverapp.event_logger.emit(schema_id=SESSION_EVENT_SCHEMA_ID, data=note.to_json())

    def _emit_delta(self, delta: dict[str, Any]) -> None:
        assert self.serverapp is not None and self.serverapp.event_logger is not None
        self.serverapp.event_logger.emit(schema_id=MODEL_DELTA_SCHEMA_ID, data=delta)

    async def _kernel_path(self, kernel_id: str) -> str | None:
        assert self.serverapp is not None
        manager = self.serverapp.session_manager
        try:
            sessions = await manager.list_sessions()
        except Exception:
            return None
        for s in sessions:
            if (s.get("kernel") or {}).get("id") == kernel_id:
                return str(s.get("path") or s.get("name") or "") or None
        return None


# Whether freeze_startup_objects has run in this process.
_freeze_checked = False


def freeze_startup_objects() -> None:
    """Leave what the process holds once the server is loaded (modules, classes, litellm's
    price map and pydantic schemas, the records: over half a million objects) out of every
    later garbage collection (`gc.freeze`). A full collection walks every tracked object
    holding the GIL: over them, 0.2-0.9 s during which no request is served, whenever enough
    new objects have piled up. Once per process (a test process starts many servers): what is
    frozen is never collected, so garbage of earlier servers must not be."""
    global _freeze_checked
    # Asked once: gc.get_freeze_count() walks every frozen object (0.1-0.3 s each time a test
    # process starts one more server).
    if _freeze_checked:
        return
    _freeze_checked = True
    if gc.get_freeze_count() == 0:
        gc.freeze()


main = launch_new_instance = PrimeApp.launch_instance
