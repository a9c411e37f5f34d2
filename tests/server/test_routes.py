"""The server mounts exactly the routes the protocol lists (prime_kernel.protocol.rest.ROUTES),
so the reference (docs/reference.md) and the generated TypeScript cannot fall behind."""

from __future__ import annotations

from typing import Any

from prime_kernel.protocol.rest import ROUTES

from .routes import mounted


async def test_the_mounted_routes_are_the_protocols(daemon: Any, jp_serverapp: Any) -> None:
    listed = {(r.method, r.path) for r in ROUTES}
    assert mounted(jp_serverapp) == listed
