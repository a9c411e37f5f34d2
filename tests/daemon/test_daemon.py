"""The composition root: what it builds, without starting anything."""

from __future__ import annotations

from pathlib import Path

from traitlets.config import Config, Configurable

from prime_kernel.daemon.daemon import SERVICES, Daemon


def test_every_configurable_service_the_daemon_builds_is_listed(tmp_path: Path) -> None:
    # The CLI checks `--config` settings against SERVICES: a service missing there would let a
    # typo in its settings through to the server's usage text.
    daemon = Daemon(root_dir=str(tmp_path))
    built = {type(v) for v in vars(daemon).values() if isinstance(v, Configurable)}
    assert built - {Daemon} and built <= set(SERVICES), built - set(SERVICES)


def test_the_kernel_side_is_built_once_and_shared(tmp_path: Path) -> None:
    # One custody, one set of snapshots, ...: the loop's host, the runs and the server's
    # handlers (through the daemon's names) all hold the same ones, each reading its settings.
    daemon = Daemon(
        root_dir=str(tmp_path),
        config=Config({"KernelCustody": {"cell_timeout": 7.0}, "Spills": {"snapshot_cap": 5}}),
    )
    host, runs = daemon.host, daemon.runs
    assert host.custody is runs.custody is daemon.custody
    assert host.snapshots is runs.snapshots is daemon.snapshots
    assert host.passivation is runs.passivation is daemon.passivation
    assert host.spills is daemon.spills and runs.recovery is daemon.recovery
    assert daemon.custody.cell_timeout == 7.0 and daemon.spills.snapshot_cap == 5
    assert daemon.snapshots.timeout() == 7.0 and daemon.snapshots.cap() == 5
