"""Resource accounting: one session's own usage and the sums over a subtree."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..protocol.responses import USAGE_FIELDS

FIELDS = USAGE_FIELDS


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
    total["uncached_cost"] = round(total["uncached_cost"], 10)
    return total
