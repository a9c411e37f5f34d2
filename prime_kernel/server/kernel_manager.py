"""The server's per-kernel manager, with the schemas of the server's event log registered once.

jupyter_server's `ServerKernelManager` registers its event schemas on the server's event logger
every time one is made, that is for every kernel started: each registration parses the schema's
YAML and validates it (~7 ms) only to find it registered already. A fan-out of a hundred agent
kernels paid that a hundred times on the event loop. This class registers each schema path
once per logger and behaves otherwise exactly as jupyter_server's; the extension puts it in
place only where the server uses jupyter_server's own (`use_for`).
"""

from __future__ import annotations

import weakref
from typing import Any

from jupyter_events import EventLogger
from jupyter_server.services.kernels.kernelmanager import ServerKernelManager
from traitlets import default

# The schema paths each event logger was given already (by any kernel manager of ours).
_registered: weakref.WeakKeyDictionary[EventLogger, set[str]] = weakref.WeakKeyDictionary()

DEFAULT_CLASS = "jupyter_server.services.kernels.kernelmanager.ServerKernelManager"


class PrimeServerKernelManager(ServerKernelManager):
    @default("event_logger")
    def _default_event_logger(self) -> EventLogger:
        server = getattr(self.parent, "parent", None)
        logger = getattr(server, "event_logger", None)
        paths = {str(p) for p in [*self.core_event_schema_paths, *self.extra_event_schema_paths]}
        if isinstance(logger, EventLogger) and paths <= _registered.get(logger, set()):
            return logger
        logger = super()._default_event_logger()
        _registered.setdefault(logger, set()).update(paths)
        return logger


def use_for(multi_kernel_manager: Any) -> None:
    """Make `multi_kernel_manager` (the server's) create `PrimeServerKernelManager`s, unless it
    was configured with a kernel manager class of its own."""
    if getattr(multi_kernel_manager, "kernel_manager_class", None) == DEFAULT_CLASS:
        multi_kernel_manager.kernel_manager_class = f"{__name__}.PrimeServerKernelManager"
