"""The composition root: what it builds, without starting anything."""

from __future__ import annotations

from pathlib import Path

from traitlets.config import Configurable

from prime_kernel.daemon.daemon import SERVICES, Daemon


def test_every_configurable_service_the_daemon_builds_is_listed(tmp_path: Path) -> None:
    # The CLI checks `--config` settings against SERVICES: a service missing there would let a
    # typo in its settings through to the server's usage text.
    daemon = Daemon(root_dir=str(tmp_path))
    built = {type(v) for v in vars(daemon).values() if isinstance(v, Configurable)}
    assert built - {Daemon} and built <= set(SERVICES), built - set(SERVICES)
