"""The kernel side of sessions: the services that keep a session's kernel and the REPL in it.

- `custody` (custody.py): a session's kernel attached, kept, released, replaced;
- `snapshots` (snapshots.py): its REPL saved to a blob, and restored into a new kernel;
- `spills` (spills.py): big REPL values spilled to disk and read back;
- `passivation` (passivation.py): an idle session's REPL saved and its kernel shut down;
- `recovery` (recovery.py): what a stop leaves, and how the next daemon takes it back.

They need each other (a replaced kernel gets the latest snapshot back, a snapshot is run with
custody's cell timeout and holds at most the spills' cap, passivation spills before it saves),
so `KernelSide.build` makes all five, in one place, from `Shared` and the capability tokens.
Like `Shared` (shared.py) the bundle is one argument instead of several: the loop's host and
the runs take it, and each keeps only the parts it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from traitlets.config import LoggingConfigurable

from .access import TokenRegistry
from .custody import KernelCustody
from .kernels import CellResult
from .passivation import Passivation
from .recovery import Recovery
from .session import LiveSession
from .shared import Shared
from .snapshots import Snapshots
from .spills import Spills


@dataclass(frozen=True)
class KernelSide:
    custody: KernelCustody
    snapshots: Snapshots
    spills: Spills
    passivation: Passivation
    recovery: Recovery

    @classmethod
    def build(
        cls,
        shared: Shared,
        *,
        tokens: TokenRegistry,
        on_user_cell: Callable[[LiveSession, CellResult], None],
    ) -> KernelSide:
        """The five services, each configured as `c.<its class>.<trait>` under `shared.parent`.
        `on_user_cell`: told of a cell a person ran in a session's REPL (the loop's host)."""
        # A snapshot reads custody's and the spills' settings when it runs, by when both exist.
        snapshots = Snapshots(
            shared.store,
            shared.events,
            timeout=lambda: custody.cell_timeout,
            cap=lambda: spills.snapshot_cap,
        )
        custody = KernelCustody(
            shared, tokens=tokens, snapshots=snapshots, on_user_cell=on_user_cell
        )
        spills = Spills(shared, run_silent=custody.run_silent)
        passivation = Passivation(
            shared,
            snapshots,
            custody.release,
            before_save=lambda live: spills.auto_spill(live, "passivation"),
        )
        recovery = Recovery(
            shared, snapshots=snapshots, release=custody.release, revoke=tokens.revoke
        )
        return cls(custody, snapshots, spills, passivation, recovery)


# The kernel side's classes that read settings (the daemon's SERVICES lists them).
KERNEL_SIDE: tuple[type[LoggingConfigurable], ...] = (
    KernelCustody,
    Spills,
    Passivation,
    Recovery,
)
