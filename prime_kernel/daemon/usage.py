"""Resource accounting: one session's own usage and the sums over a subtree."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "total_tokens",
    "cost",
    "model_calls",
    "cells",
    "wall_time",
    "kernel_time",
)


def empty() -> dict[str, float]:
    return {k: 0 for k in FIELDS}


def add(total: dict[str, float], part: dict[str, Any]) -> dict[str, float]:
    get = part.get
    for k in FIELDS:
        total[k] = total.get(k, 0) + (get(k) or 0)
    return total


def summed(parts: Iterable[dict[str, Any]]) -> dict[str, float]:
    total = empty()
    for part in parts:
        add(total, part)
    total["cost"] = round(total["cost"], 10)
    return total
