"""The extension mounts exactly the routes the protocol lists (prime_kernel.protocol.rest.ROUTES),
so the reference (docs/reference.md) and the generated TypeScript cannot fall behind. The
handlers are the extension app's own; no server needs to run to read them (test_auth and
test_fuzz walk them on a running one)."""

from __future__ import annotations

from prime_kernel.protocol.rest import ROUTES
from prime_kernel.server.app import PrimeApp

from .routes import mounted


def test_the_mounted_routes_are_the_protocols() -> None:
    app = PrimeApp()
    app.initialize_handlers()
    assert mounted(app.handlers) == {(r.method, r.path) for r in ROUTES}
