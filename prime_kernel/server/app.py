"""The jupyter_server extension: starts the daemon and mounts its handlers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_client.provisioning import KernelProvisionerFactory
from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Instance, Type

from ..daemon.daemon import Daemon
from ..daemon.sandbox import NONE, Sandbox, activate, root_warning
from ..export.redact import config_secrets
from . import (
    capability_handlers,
    export_handlers,
    handlers,
    harness_handlers,
    kernel_compaction_handlers,
    kernel_export_handlers,
    kernel_handlers,
    kernel_harness_handlers,
    messaging_handlers,
    status_handlers,
)
from .kernel_socket import KernelSocket

SESSION_SCHEMA_ID = "https://events.prime-kernel.dev/prime_kernel/session/v1"
SCHEMA_PATH = Path(__file__).parent / "event_schemas" / "session" / "v1.yaml"


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
        serverapp = self.serverapp
        assert serverapp is not None
        self.daemon = self.daemon_class(
            parent=self,
            root_dir=serverapp.root_dir,
            kernel_manager=serverapp.kernel_manager,
            log=self.log,
        )
        self.daemon.kernel_path = self._kernel_path
        # Never recorded: the server's token and key-like values of the server's config.
        self.daemon.scrubber.add(
            getattr(serverapp.identity_provider, "token", "") or "",
            *config_secrets(serverapp.config),
        )
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
        # ServerApp creates its event logger before it loads extensions.
        assert serverapp.event_logger is not None
        serverapp.event_logger.register_event_schema(SCHEMA_PATH)
        self.daemon.add_listener(self._emit)
        grants = self.settings["prime_grants"] = capability_handlers.Grants(self.daemon)
        serverapp.event_logger.add_listener(
            schema_id=capability_handlers.KERNEL_ACTIONS, listener=grants.on_kernel_action
        )
        if self.connect_all_kernels:
            factory = KernelProvisionerFactory.instance()
            self._default_provisioner = factory.default_provisioner_name
            factory.default_provisioner_name = "prime-provisioner"

    def initialize_handlers(self) -> None:
        self.handlers.extend(handlers.HANDLERS)
        self.handlers.extend(kernel_handlers.HANDLERS)
        self.handlers.extend(messaging_handlers.HANDLERS)
        self.handlers.extend(harness_handlers.HANDLERS + kernel_harness_handlers.HANDLERS)
        self.handlers.extend(export_handlers.HANDLERS + kernel_export_handlers.HANDLERS)
        self.handlers.extend(kernel_compaction_handlers.HANDLERS)
        self.handlers.extend(status_handlers.HANDLERS + capability_handlers.HANDLERS)

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        # Runs once the server listens, so the URL kernels call back to is known.
        assert self.serverapp is not None and self.daemon is not None
        self._kernel_socket = KernelSocket(self.serverapp)
        self.daemon.url = self._kernel_socket.start()
        await self.daemon.start()
        self.log.info("Prime daemon started; store at %s", self.daemon.store_dir)

    async def stop_extension(self) -> None:
        if self.daemon is not None:
            await self.daemon.stop()
        if self._kernel_socket is not None:
            self._kernel_socket.stop()
            self._kernel_socket = None
        activate(None)
        if self._default_provisioner is not None:  # the factory is process-wide
            KernelProvisionerFactory.instance().default_provisioner_name = self._default_provisioner
            self._default_provisioner = None

    def _emit(self, note: dict[str, Any]) -> None:
        assert self.serverapp is not None and self.serverapp.event_logger is not None
        self.serverapp.event_logger.emit(schema_id=SESSION_SCHEMA_ID, data=note)

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


main = launch_new_instance = PrimeApp.launch_instance
