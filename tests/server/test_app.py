"""The extension's loading: what it does before the server listens, so that the server does not
stall its clients once it serves (bench/bench_recovery.py measures the waits)."""

from __future__ import annotations

import gc
from typing import Any

from prime_kernel.models.router import litellm_module


def test_litellm_is_loaded_and_the_loaded_objects_frozen_before_the_server_listens(
    jp_serverapp: Any,
) -> None:
    # jp_serverapp is initialized (the extension loaded), not started: nothing listens yet.
    assert jp_serverapp.web_app.settings["prime_daemon"] is not None
    assert litellm_module() is not None
    assert gc.get_freeze_count() > 0
