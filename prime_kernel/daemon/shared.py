"""What the daemon's services share: one argument instead of the same six or seven in every
constructor.

The daemon builds one `Shared` and hands it to each service it builds; a service takes from it,
in its constructor, only the pieces it reads and keeps those (a `Goals` keeps the registry and
the event log, nothing else), so what a service depends on stays visible in its `__init__` and
a unit test's fakes stay few (tests/daemon/conftest.py `shared` builds one from fakes). What
only some services need (the router, the harness, custody, ...) is passed to those by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traitlets.config import Configurable

    from .accounting import Accounting
    from .events import EventLog
    from .lifecycle import Lifecycle
    from .registry import SessionRegistry
    from .store import Store

# Runs a coroutine in a task the daemon cancels when it stops (tasks.Background.spawn).
Spawn = Callable[[Coroutine[Any, Any, Any], str], "asyncio.Task[Any]"]


@dataclass(frozen=True)
class Shared:
    registry: SessionRegistry
    store: Store
    events: EventLog
    accounting: Accounting
    lifecycle: Lifecycle
    spawn: Spawn
    # Whose config the configurable services read their settings from (`c.<Service>.<name>`,
    # under the daemon): their traitlets parent. None in unit tests, which pass `config=`.
    parent: Configurable | None = None
