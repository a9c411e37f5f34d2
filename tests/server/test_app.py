"""The extension's loading: what it does before the server listens, so that the server does not
stall its clients once it serves (bench/bench_recovery.py measures the waits)."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from traitlets.config import Config

from prime_kernel.daemon.daemon import Daemon
from prime_kernel.models.router import litellm_module
from tests.conftest import server_config


def test_litellm_is_loaded_and_the_loaded_objects_frozen_before_the_server_listens(
    jp_serverapp: Any,
) -> None:
    # jp_serverapp is initialized (the extension loaded), not started: nothing listens yet.
    assert jp_serverapp.web_app.settings["prime_daemon"] is not None
    assert litellm_module() is not None
    assert gc.get_freeze_count() > 0
    # The collector was off while they were made (its passes over them cost a quarter of
    # the import), and is on again.
    assert jp_serverapp.web_app.settings["prime_daemon"].collecting_while_opened is False
    assert gc.isenabled()


class StartedLate(Daemon):
    """A daemon that, as it starts, sees a person start a notebook on the Prime kernel (and
    that notes whether the garbage collector ran while it loaded its records)."""

    early_kernel = ""
    collecting_while_opened: bool | None = None

    def open(self) -> None:
        if self.collecting_while_opened is None:
            self.collecting_while_opened = gc.isenabled()
        super().open()

    async def start(self) -> None:
        assert self.kernel_manager is not None
        self.early_kernel = await self.kernel_manager.start_kernel(kernel_name="prime-agent")
        await super().start()


@pytest.fixture
def jp_server_config(prime_config: dict[str, Any]) -> Config:
    return server_config(prime_config, PrimeApp={"daemon_class": f"{__name__}.StartedLate"})


async def test_a_notebook_started_while_the_daemon_starts_is_connected(daemon: Any) -> None:
    assert isinstance(daemon, StartedLate) and daemon.early_kernel
    manager = daemon.kernel_manager
    assert manager is not None
    assert daemon.tokens.holds(daemon.early_kernel)  # given a capability at its start
    await manager.restart_kernel(daemon.early_kernel)
    assert daemon.tokens.holds(daemon.early_kernel)  # and again at its restart
    await manager.shutdown_kernel(daemon.early_kernel)
