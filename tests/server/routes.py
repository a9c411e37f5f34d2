"""The routes the running extension mounts, read from it (not listed by hand), with concrete
URLs that match them: the auth test and the fuzz test walk every one."""

from __future__ import annotations

import re
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")


def concrete(pattern: str) -> str:
    """A URL the route pattern matches, with made-up values for its parameters."""

    def sample(match: re.Match[str]) -> str:
        body = match.group(2)
        for candidate in (*body.split("|"), "x1", "1"):
            if re.fullmatch(body, candidate):
                return candidate
        raise AssertionError(f"no sample value for {match.group(0)}")

    url = re.sub(r"\(\?P<(\w+)>([^)]*)\)", sample, pattern).rstrip("$")
    assert re.fullmatch(pattern, url), (pattern, url)
    return url


def routes(serverapp: Any) -> list[tuple[str, str, bool]]:
    from tornado.web import RequestHandler

    apps = serverapp.extension_manager.extension_apps["prime_kernel"]
    out = []
    for app in apps:
        for pattern, handler, *_ in app.handlers:
            kernel = "/api/prime/kernel/" in pattern
            for method in METHODS:
                impl = getattr(handler, method, None)
                if impl is not None and impl is not getattr(RequestHandler, method):
                    out.append((method.upper(), concrete(pattern), kernel))
    return out


# How a route's parameters are spelled in prime_kernel.protocol.rest.ROUTES.
_PARAMS = {
    "session_id": "{id}",
    "kind": "{kind}",
    "entry_id": "{entry}",
    "refinement_id": "{rid}",
    "action": "{action}",
    "version": "{version}",
    "schedule_id": "{schedule}",
    "blob_id": "{blob}",
}


def mounted(handlers: list[Any]) -> set[tuple[str, str]]:
    """(METHOD, path) of every route of an extension's `handlers`, in the protocol's spelling
    (under /api/prime)."""
    from tornado.web import RequestHandler

    out = set()
    for pattern, handler, *_ in handlers:
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: _PARAMS[m.group(1)], pattern)
        path = path.removeprefix("/api/prime")
        for method in METHODS:
            impl = getattr(handler, method, None)
            if impl is not None and impl is not getattr(RequestHandler, method):
                out.add((method.upper(), path))
    return out
