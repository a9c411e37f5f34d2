"""Budget validation, admission of children and checks, over an in-memory registry."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.cli.main import main as cli_main
from prime_kernel.daemon import budget
from prime_kernel.daemon.accounting import Accounting
from prime_kernel.models.router import Completion
from prime_kernel.protocol.errors import BudgetExceeded, PrimeError

from .conftest import session, spend


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"tokens": -1}, "must not be negative"),
        ({"tokens": 0}, "leaves nothing to spend"),
        ({"tokens": 10**400}, "must be a finite number up to"),
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


def test_children_spend_against_the_parent(accounts: Accounting) -> None:
    parent = session(accounts, "p", None, budget={"tokens": 1000, "dollars": 1.0})
    child = session(accounts, "c", "p")
    spend(parent, 300)
    # A child may have what remains (700 tokens), not more.
    assert accounts.admit(parent, {"tokens": 700}, None) == {"tokens": 700}
    with pytest.raises(PrimeError, match="more than what remains of the parent's budget"):
        accounts.admit(parent, {"tokens": 701}, None)
    with pytest.raises(PrimeError, match="dollars=2 is more than what remains"):
        accounts.admit(parent, {"dollars": 2}, None)
    accounts.check(child)  # 300 of 1000: fine
    spend(child, 700)  # the child's spend counts against the parent's budget
    assert accounts.spent("p")["tokens"] == 1000
    with pytest.raises(BudgetExceeded, match="ancestor session p") as info:
        accounts.check(child)
    assert info.value.data["limit"] == "tokens"
    assert child.budget is not None and child.budget["exceeded"]["session_id"] == "p"
    assert child.budget["exceeded"]["spent"] == 1000
    with pytest.raises(BudgetExceeded, match="this session's budget"):
        accounts.check(parent)
    with pytest.raises(BudgetExceeded, match="cannot start a child"):
        accounts.admit(parent, None, None)


def test_turns_seconds_and_dollars(accounts: Accounting) -> None:
    live = session(accounts, "t", None, budget={"turns": 2})
    spend(live, 10, calls=1)
    accounts.check(live)
    spend(live, 20, calls=2)
    with pytest.raises(BudgetExceeded, match="2 of 2 model calls"):
        accounts.check(live)
    slow = session(accounts, "s", None, budget={"seconds": 5}, started=time.time() - 6)
    with pytest.raises(BudgetExceeded, match="seconds"):
        accounts.check(slow)
    pricey = session(accounts, "d", None, budget={"dollars": 0.01})
    spend(pricey, 10, cost=0.02)
    with pytest.raises(BudgetExceeded, match="dollars"):
        accounts.check(pricey)


def test_root_default_budget_from_config(accounts: Accounting) -> None:
    assert accounts.admit(None, None, {"tokens": 50}) == {"tokens": 50}
    assert accounts.admit(None, {"turns": 3}, {"tokens": 50}) == {"turns": 3}
    with pytest.raises(PrimeError, match="configured default budget is invalid"):
        accounts.admit(None, None, {"tokens": -5})


def test_cli_refuses_a_bad_budget_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(["--root", str(tmp_path), "run", "task", "--budget-tokens", "-5"])
    assert code == 2
    assert "budget tokens must not be negative" in capsys.readouterr().err
    assert not (tmp_path / ".prime").exists()  # no server was started, nothing written


def test_spent_follows_every_change_below(accounts: Accounting) -> None:
    """The subtree counters a budget check keeps are current however usage changes: added by
    the accounting, set on a record, in a child made after the first check."""
    root = session(accounts, "r", None, budget={"tokens": 10**9})
    child = session(accounts, "rc", "r")
    accounts.check(root)  # the root's subtree counters are now kept
    accounts.add(child, total_tokens=5, cost=0.25, model_calls=1)
    spend(root, 7, cost=0.5, calls=2)
    late = session(accounts, "rl", "r")
    accounts.add_completion(late, Completion({}, "stop", {"total_tokens": 11}, 0.125))
    whole = accounts.subtree("r")
    spent = accounts.spent("r")
    assert (spent["tokens"], spent["dollars"], spent["turns"]) == (
        whole["total_tokens"],
        round(whole["cost"], 10),
        whole["model_calls"],
    )
    assert (spent["tokens"], spent["turns"]) == (23, 4)
