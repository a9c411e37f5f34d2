"""bench_local's task sets: the evaluation set stays as it was frozen."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import local_eval  # noqa: E402  (a bench script's module, found on the path above)


def test_the_evaluation_set_is_frozen() -> None:
    tasks = local_eval.build()
    assert local_eval.fingerprint(tasks) == local_eval.FROZEN, (
        "bench/local_eval.py changed: the evaluation set is frozen (add a new set instead)"
    )
    assert len(tasks) >= 30
    long = [t for t in tasks if t.context_file and len(t.context_file[1]) >= 1_000_000]
    assert len(long) >= 4
