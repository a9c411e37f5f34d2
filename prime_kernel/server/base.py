"""Handler plumbing shared by the user-facing and kernel-facing APIs."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin

from ..daemon.daemon import Daemon
from ..daemon.errors import PrimeError

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def prime_errors(method: F) -> F:
    """Report a PrimeError (or bad JSON) as a JSON error with its status, not a 500."""

    @functools.wraps(method)
    async def wrapper(self: PrimeHandler, *args: Any, **kwargs: Any) -> Any:
        try:
            return await method(self, *args, **kwargs)
        except PrimeError as e:
            self.set_status(e.status)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(e.to_json()))
            return None

    return wrapper  # type: ignore[return-value]


class PrimeHandler(ExtensionHandlerMixin, APIHandler):
    @property
    def daemon(self) -> Daemon:
        return self.settings["prime_daemon"]

    def json_body(self) -> dict[str, Any]:
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError as e:
            raise PrimeError(f"the request body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise PrimeError("the request body must be a JSON object")
        return body

    def write_json(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data, default=str))


def number_arg(value: str | None, name: str, *, default: float | None = None) -> float | None:
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise PrimeError(f"{name} must be a number, not {value!r}") from None
    if not math.isfinite(number):
        raise PrimeError(f"{name} must be a finite number, not {value!r}")
    if number < 0:
        raise PrimeError(f"{name} must not be negative")
    return number
