from __future__ import annotations

import os
from typing import Any

import pytest


@pytest.fixture(scope="module")
def litellm() -> Any:
    """litellm with the embedded models registered (imported on first use: it takes seconds)."""
    # Offline: no fetch of the remote price map when litellm is imported.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    import litellm

    from prime_kernel.models import local

    local.register(litellm)
    return litellm
