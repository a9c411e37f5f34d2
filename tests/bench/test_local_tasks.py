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


def test_check_compares_numbers_by_value_and_survives_huge_integers() -> None:
    from local_tasks import check

    huge = 10**400  # math.isclose(huge, 1.5) raises OverflowError: a whole run once died of it
    assert not check(1.5, huge) and not check(huge, 1.5)
    assert check(huge, huge) and not check(huge, huge + 1)
    assert check(105, 105.0) and check(37.8, 37.8) and not check(391, "391")
    assert not check(1, True) and check([1, 2.0], [1.0, 2])
