"""The README's notebook example on the real embedded model, in a real server and kernel."""

from __future__ import annotations

from typing import Any

import pytest

from prime_kernel.models import local

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(not local.available(), reason="the embedded model is not installed"),
]


@pytest.fixture
def prime_config() -> dict[str, Any]:
    # The README's settings: the embedded model is the default.
    return {"pool_size": 1, "cell_timeout": 120.0, "default_model": local.MODEL}


async def test_readme_notebook_example(daemon: Any, user_kernel: Any) -> None:
    nb = await user_kernel()
    await nb.run('h = rlm("What is the mean of context?", context=[3, 5, 10])')
    assert await nb.value("h.result(timeout=300)", timeout=320) == "6.0"
    sid = (await nb.value("h.session_id")).strip("'")
    record = daemon.listing.session_json(sid)
    assert record["state"] == "DONE" and record["model"] == local.MODEL
