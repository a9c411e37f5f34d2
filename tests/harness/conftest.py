"""Harness tests: the global scope lives in a temporary folder, never the real home."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import server_config


@pytest.fixture
def global_harness(tmp_path: Path) -> Path:
    return tmp_path / "global-harness"


@pytest.fixture
def jp_server_config(prime_config: dict[str, Any], global_harness: Path) -> Config:
    return server_config(prime_config, Harness={"global_dir": str(global_harness)})


@pytest.fixture
def capture() -> Callable[..., Any]:
    """`capture(seen, turn)`: a scripted turn that records the messages the model was sent."""

    def make(seen: list[list[dict[str, Any]]], turn: dict[str, Any]) -> Any:
        def play(messages: list[dict[str, Any]]) -> dict[str, Any]:
            seen.append([dict(m) for m in messages])
            return turn

        return play

    return make
