"""The server's per-kernel manager: it connects the Prime kernels people start (a notebook on
the "Prime Agent" kernelspec, or any kernel with `c.PrimeApp.connect_all_kernels`) to the daemon,
and registers the schemas of the server's event log once.

A kernel the Prime provisioner launches is connected by the `KernelLink` in its start's keyword
arguments (see provisioner.py): the daemon's launcher passes one for agent kernels; for the
kernels a person starts, this manager passes the link the extension gave the server's kernel
manager (`connect`), when the kernel's provisioner is the Prime one (any other would hand the
unknown argument on to the process it starts).

An agent kernel (the daemon's) starts with the manager's auto-restart off: the daemon decides
what a death means for its session.

And: jupyter_server's `ServerKernelManager` registers its event schemas on the server's event
logger every time one is made, that is for every kernel started: each registration parses the
schema's YAML and validates it (~7 ms) only to find it registered already. A fan-out of a
hundred agent kernels paid that a hundred times on the event loop. This class registers each
schema path once per logger and behaves otherwise exactly as jupyter_server's; the extension
puts it in place only where the server uses jupyter_server's own (`use_for`).
"""

from __future__ import annotations

import weakref
from typing import Any

from jupyter_events import EventLogger
from jupyter_server.gateway.managers import GatewayKernelManager
from jupyter_server.services.kernels.kernelmanager import ServerKernelManager
from traitlets import default
from traitlets.utils.importstring import import_item

from ..daemon.launcher import LINK, KernelLink, prime_provisioned

# The schema paths each event logger was given already (by any kernel manager of ours).
_registered: weakref.WeakKeyDictionary[EventLogger, set[str]] = weakref.WeakKeyDictionary()

DEFAULT_CLASS = "jupyter_server.services.kernels.kernelmanager.ServerKernelManager"

# The link each server's multi-kernel manager connects its Prime kernels with (`connect`).
_links: weakref.WeakKeyDictionary[Any, KernelLink] = weakref.WeakKeyDictionary()


def connect(multi_kernel_manager: Any, link: KernelLink | None) -> None:
    """Connect the Prime kernels `multi_kernel_manager` starts from now on to the daemon of
    `link` (None: to none; a kernel started earlier keeps its link across restarts)."""
    if link is None:
        _links.pop(multi_kernel_manager, None)
    else:
        _links[multi_kernel_manager] = link


class PrimeServerKernelManager(ServerKernelManager):
    # Annotated `-> None` on jupyter_client's blocking KernelManager; async here, as its parent's.
    async def start_kernel(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        link = _links.get(self.parent)
        if link is not None and LINK not in kwargs and prime_provisioned(self.kernel_spec):
            kwargs[LINK] = link
        given = kwargs.get(LINK)
        if isinstance(given, KernelLink) and given.agent:
            # The daemon watches its agent kernels itself and turns the silent auto-restart
            # off as it adopts each (KernelLauncher.adopt): off from the start, the restarter
            # (a configurable made, and a poll of the kernel every few seconds) never exists.
            self.autorestart = False
        await super().start_kernel(*args, **kwargs)

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


def use_for(multi_kernel_manager: Any) -> str:
    """Make `multi_kernel_manager` (the server's) create `PrimeServerKernelManager`s, unless it
    was configured with a kernel manager class of its own; then what to warn of ('' if none).

    A class of one's own that does not derive from ours passes no link: the notebooks on the
    "Prime Agent" kernel would start unconnected, with nothing in the server's log to say why.
    """
    configured = getattr(multi_kernel_manager, "kernel_manager_class", None)
    if configured == DEFAULT_CLASS:
        multi_kernel_manager.kernel_manager_class = f"{__name__}.PrimeServerKernelManager"
        return ""
    if not isinstance(configured, str):
        return ""
    cls = import_item(configured)
    # A gateway's kernels run elsewhere, never through the Prime provisioner of this server.
    if not isinstance(cls, type) or issubclass(
        cls, (PrimeServerKernelManager, GatewayKernelManager)
    ):
        return ""
    return (
        f"the server's kernel_manager_class is {configured}, which does not derive from "
        f"{__name__}.PrimeServerKernelManager: notebooks on the 'Prime Agent' kernel start "
        "unconnected to the agent daemon (agent kernels are not affected); derive it from "
        "PrimeServerKernelManager to connect them"
    )
