"""The jupyter_server extension: starts the daemon and mounts its handlers."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from jupyter_client.provisioning import KernelProvisionerFactory
from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Instance, Type

from ..daemon.daemon import Daemon
from ..daemon.events import SessionEvent
from ..models.router import import_litellm
from ..protocol.wire import API
from . import exports, harness, messages, sessions
from .base import NoRouteHandler

SESSION_SCHEMA_ID = "https://events.prime-kernel.dev/prime_kernel/session/v1"
SCHEMA_PATH = Path(__file__).parent / "event_schemas" / "session" / "v1.yaml"


class PrimeApp(ExtensionApp):
    name = "prime_kernel"
    description = "Prime Agent: agent sessions as Jupyter kernels"
    load_other_extensions = True

    daemon_class = Type(Daemon, klass=Daemon, config=True, help="The daemon implementation.")
    daemon = Instance(Daemon, allow_none=True)
    connect_all_kernels = Bool(
        True,
        config=True,
        help="Start every local kernel (not only 'Prime Agent' ones) through the Prime "
        "provisioner, so `%load_ext prime_kernel` works in any notebook of this server.",
    )

    def initialize_settings(self) -> None:
        serverapp = self.serverapp
        assert serverapp is not None
        # litellm takes seconds to import: start now, in a thread, so the first rlm() after a
        # start does not wait for it (the daemon awaits the same import when it starts).
        threading.Thread(target=import_litellm, name="import-litellm", daemon=True).start()
        self.daemon = self.daemon_class(
            parent=self,
            root_dir=serverapp.root_dir,
            kernel_manager=serverapp.kernel_manager,
            log=self.log,
        )
        token = getattr(serverapp.identity_provider, "token", "")
        self.daemon.host_secrets = {token} if token else set()
        self.daemon.open()
        self.daemon.kernel_path = self._kernel_path
        self.settings["prime_daemon"] = self.daemon
        # ServerApp creates its event logger before it loads extensions.
        assert serverapp.event_logger is not None
        serverapp.event_logger.register_event_schema(SCHEMA_PATH)
        self.daemon.add_listener(self._emit)
        if self.connect_all_kernels:
            KernelProvisionerFactory.instance().default_provisioner_name = "prime-provisioner"

    def initialize_handlers(self) -> None:
        for module in (sessions, messages, harness, exports):
            self.handlers.extend(module.HANDLERS)
        self.handlers.append((rf"{API}/.*", NoRouteHandler))

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        # Runs once the server listens, so the URL kernels call back to is known.
        assert self.serverapp is not None and self.daemon is not None
        self.daemon.url = self.serverapp.connection_url
        await self.daemon.start()
        self.log.info("Prime daemon started; store at %s", self.daemon.store_dir)

    async def stop_extension(self) -> None:
        if self.daemon is not None:
            await self.daemon.stop()

    def _emit(self, note: SessionEvent) -> None:
        assert self.serverapp is not None and self.serverapp.event_logger is not None
        self.serverapp.event_logger.emit(schema_id=SESSION_SCHEMA_ID, data=note.to_json())

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
