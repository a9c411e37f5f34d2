"""The sandbox agent kernels run in: detection, the filesystem they see, their limits, and the
bubblewrap command line.

Agent code is written by a model, so an agent kernel must reach only its own session. Where
bubblewrap (`bwrap`) works, each agent kernel runs in its own namespaces:

- a private PID namespace: /proc shows the kernel's own processes only;
- the filesystem read-only, except the server root (writable), with the home folder, the
  Jupyter runtime folder, `<root>/.prime/`, /tmp, /var/tmp and /run replaced by empty folders
  of a bounded size — nothing of other kernels, the server or the store is there to read or
  lock (mounts.py);
- of the Python installation, only what the kernel's interpreter puts on its path (its
  prefix, standard library, site-packages, PYTHONPATH and .pth entries), never the folder the
  server was started from;
- no capabilities; the network shared or not; when the server runs as root, a host uid of the
  kernel's own (bwrap.py);
- the kernel's own private folder (its ZMQ sockets) and the daemon's Unix socket bound in.

This package only detects whether the sandbox works here and builds the command that wraps a
kernel command in it; the provisioner (prime_kernel/provisioner.py) does the launching.
Resource limits are applied by the kernel's own boot code (prime_kernel/kernel/boot.py) from
`KernelLimits.rlimits()` (limits.py), soft = hard, before any agent code runs.
"""

from __future__ import annotations

from .bwrap import BWRAP, MOVED, NONE, Probe, Sandbox, activate, active, status
from .limits import KernelLimits
from .mounts import Layout, SandboxMounts, python_paths, root_warning

__all__ = [
    "BWRAP",
    "MOVED",
    "NONE",
    "KernelLimits",
    "Layout",
    "Probe",
    "Sandbox",
    "SandboxMounts",
    "activate",
    "active",
    "python_paths",
    "root_warning",
    "status",
]
