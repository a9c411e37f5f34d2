"""The resource limits an agent kernel sets on itself.

The kernel's boot code (prime_kernel/kernel/boot.py) applies them from `rlimits()`, soft = hard,
before any agent code runs, so agent code cannot raise them again; the provisioner puts them in
the kernel's boot document.
"""

from __future__ import annotations

import os

from traitlets import Int
from traitlets.config import LoggingConfigurable


class KernelLimits(LoggingConfigurable):
    """The rlimits of each agent kernel's processes. Configure as `c.KernelLimits.<trait>`
    (formerly `c.Sandbox.<trait>`)."""

    memory_limit = Int(
        -1,
        config=True,
        help="Bytes of heap (RLIMIT_DATA: brk and private writable mappings) each process "
        "of an agent kernel may use; -1: half the machine's memory; 0: no limit.",
    )
    cpu_time_limit = Int(
        3600,
        config=True,
        help="CPU seconds each process of an agent kernel may use in all (RLIMIT_CPU; the "
        "kernel gets SIGXCPU and ends); 0: no limit.",
    )
    process_limit = Int(
        512,
        config=True,
        help="Processes and threads an agent kernel may have at once (RLIMIT_NPROC); 0: no "
        "limit. Applies only in the sandbox, where a kernel has a user (a uid of its own when "
        "the server is root, or a user namespace) whose processes are its alone.",
    )
    address_space_limit = Int(
        -1,
        config=True,
        help="Bytes of address space each process of an agent kernel may map (RLIMIT_AS: "
        "private and shared mappings alike, which RLIMIT_DATA does not bound); -1: half the "
        "machine's memory; 0: no limit. Libraries that reserve large address ranges up front "
        "(some GPU and JIT runtimes) need it raised.",
    )
    file_size_limit = Int(
        16 << 30,
        config=True,
        help="Largest file an agent kernel's processes may write, in bytes (RLIMIT_FSIZE: a "
        "write past it fails with 'File too large'); 0: no limit.",
    )

    def rlimits(self, sandboxed: bool) -> dict[str, int]:
        """The rlimits the kernel's boot code sets on itself (soft = hard: it cannot raise
        them again). The process limit only inside the sandbox: outside a user namespace of
        its own it would count every process of the user."""
        half = _physical_memory() // 2
        out = {
            "data": self.memory_limit if self.memory_limit >= 0 else half,
            "as": self.address_space_limit if self.address_space_limit >= 0 else half,
            "cpu": self.cpu_time_limit,
            "fsize": self.file_size_limit,
            "core": 0,
        }
        if sandboxed:
            out["nproc"] = self.process_limit
        return {k: v for k, v in out.items() if v > 0 or k == "core"}


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):
        return 8 << 30
