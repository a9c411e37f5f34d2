"""The registry's change tracking: what a list asked `changed_after` a cursor returns."""

from __future__ import annotations

from prime_kernel.daemon.accounting import Accounting
from prime_kernel.protocol.requests import SessionFilter

from .conftest import session, spend


def test_changed_after_includes_ancestors_whose_subtree_changed(accounts: Accounting) -> None:
    registry = accounts.registry
    root = session(accounts, "r", None)
    child = session(accounts, "k", "r")
    session(accounts, "other", None)
    cursor = registry.version
    spend(child, 10)  # the root's subtree usage changed too
    assert {r.id for r in registry.select(SessionFilter(changed_after=cursor))} == {"k", "r"}
    cursor = registry.version
    root.update(name="renamed")
    assert [r.id for r in registry.select(SessionFilter(changed_after=cursor))] == ["r"]
