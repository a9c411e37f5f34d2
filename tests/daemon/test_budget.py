"""Budget validation, admission of children and checks, over a real store (no kernels)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.cli.main import main as cli_main
from prime_kernel.daemon import budget
from prime_kernel.daemon import usage as usage_mod
from prime_kernel.daemon.daemon import Daemon, LiveSession
from prime_kernel.daemon.errors import BudgetExceeded, PrimeError


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"tokens": -1}, "must not be negative"),
        ({"dollars": "a lot"}, "must be a finite number"),
        ({"turns": True}, "must be a finite number"),
        ({"seconds": float("inf")}, "must be a finite number"),
        ({"tokenz": 5}, "unknown budget keys: tokenz"),
        (1000, "budget must be a dict"),
    ],
)
def test_bad_budgets_are_refused(value: Any, message: str) -> None:
    with pytest.raises(PrimeError, match=message):
        budget.parse(value)


def test_parse_keeps_numbers_and_drops_empty() -> None:
    assert budget.parse({"tokens": 100, "dollars": 0.5, "seconds": None}) == {
        "tokens": 100,
        "dollars": 0.5,
    }
    assert budget.parse({}) is None
    assert budget.parse(None) is None


def _session(daemon: Daemon, sid: str, parent: str | None, **fields: Any) -> LiveSession:
    record: dict[str, Any] = {
        "id": sid,
        "name": sid,
        "prompt": "p",
        "model": "scripted/echo",
        "state": "RUNNING",
        "kind": "agent",
        "parent_id": parent,
        "root_id": parent or sid,
        "depth": 0 if parent is None else 1,
        "created": time.time(),
        "started": time.time(),
        "options": {},
        "usage": usage_mod.empty(),
        **fields,
    }
    daemon.store.insert_session(record)
    live = daemon.live[sid] = LiveSession(record)
    return live


def _spend(live: LiveSession, tokens: int, cost: float = 0.0, calls: int = 1) -> None:
    live.record["usage"].update(total_tokens=tokens, cost=cost, model_calls=calls)


@pytest.fixture
def daemon(tmp_path: Path) -> Daemon:
    return Daemon(root_dir=str(tmp_path))


def test_children_spend_against_the_parent(daemon: Daemon) -> None:
    parent = _session(daemon, "p", None, budget={"tokens": 1000, "dollars": 1.0})
    child = _session(daemon, "c", "p")
    _spend(parent, 300)
    # A child may have what remains (700 tokens), not more.
    assert budget.admit(daemon, "p", {"tokens": 700}) == {"tokens": 700}
    with pytest.raises(PrimeError, match="more than what remains of the parent's budget"):
        budget.admit(daemon, "p", {"tokens": 701})
    with pytest.raises(PrimeError, match="dollars=2 is more than what remains"):
        budget.admit(daemon, "p", {"dollars": 2})
    budget.check(daemon, child)  # 300 of 1000: fine
    _spend(child, 700)  # the child's spend counts against the parent's budget
    assert budget.spent(daemon, "p")["tokens"] == 1000
    with pytest.raises(BudgetExceeded, match="ancestor session p") as info:
        budget.check(daemon, child)
    assert info.value.data["limit"] == "tokens"
    assert child.record["budget"]["exceeded"]["session_id"] == "p"
    assert daemon.store.get_session("c")["budget"]["exceeded"]["spent"] == 1000
    with pytest.raises(BudgetExceeded, match="this session's budget"):
        budget.check(daemon, parent)
    with pytest.raises(BudgetExceeded, match="cannot start a child"):
        budget.admit(daemon, "p", None)


def test_turns_seconds_and_dollars(daemon: Daemon) -> None:
    live = _session(daemon, "t", None, budget={"turns": 2})
    _spend(live, 10, calls=1)
    budget.check(daemon, live)
    _spend(live, 20, calls=2)
    with pytest.raises(BudgetExceeded, match="2 of 2 model calls"):
        budget.check(daemon, live)
    slow = _session(daemon, "s", None, budget={"seconds": 5}, started=time.time() - 6)
    with pytest.raises(BudgetExceeded, match="seconds"):
        budget.check(daemon, slow)
    pricey = _session(daemon, "d", None, budget={"dollars": 0.01})
    _spend(pricey, 10, cost=0.02)
    with pytest.raises(BudgetExceeded, match="dollars"):
        budget.check(daemon, pricey)


def test_root_default_budget_from_config(daemon: Daemon) -> None:
    assert budget.admit(daemon, None, None, {"tokens": 50}) == {"tokens": 50}
    assert budget.admit(daemon, None, {"turns": 3}, {"tokens": 50}) == {"turns": 3}
    with pytest.raises(PrimeError, match="configured default budget is invalid"):
        budget.admit(daemon, None, None, {"tokens": -5})


def test_cli_refuses_a_bad_budget_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(["--root", str(tmp_path), "run", "task", "--budget-tokens", "-5"])
    assert code == 2
    assert "budget tokens must not be negative" in capsys.readouterr().err
    assert not (tmp_path / ".prime").exists()  # no server was started, nothing written
