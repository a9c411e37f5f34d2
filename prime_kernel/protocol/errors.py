"""The one error taxonomy: every error the daemon reports, by code, with its HTTP status.

The daemon raises these; the server turns any of them into `{"error": code, "message", ...data}`
with `status` (once, in the handlers' `write_error`); the kernel-side client turns such a reply
back into the same class, so agent code catches `NotFound`, `BudgetExceeded`, ... by name. Each
class also derives from the builtin exception a Python programmer would reach for
(`LookupError`, `PermissionError`, `ValueError`, ...). Stdlib only.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any

# prime_kernel/, with a separator: a user's file beside it (prime_kernel_notes.py) is not in it.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def without_package_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback `tb` without the frames of prime_kernel's own code (None if it had only
    those)."""
    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for frame in reversed(kept):
        out = TracebackType(out, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return out


class PrimeError(Exception):
    """An error the daemon reports (or, in a kernel, an error of a call to it)."""

    status = 400
    code = "bad_request"
    description = "the request is malformed or invalid; the message says what to change"

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.data}

    def _render_traceback_(self) -> list[str]:
        """How IPython shows this error in a cell (it asks the exception): the frames of the
        code that called a primitive and the daemon's message, not the frames of prime_kernel
        that made the call (the exception keeps them all: %tb, %debug)."""
        from IPython import get_ipython  # only IPython calls this

        tb = without_package_frames(self.__traceback__) or self.__traceback__
        return list(get_ipython().InteractiveTB.structured_traceback(type(self), self, tb))


class InvalidRequest(PrimeError, ValueError):
    code = "invalid_request"
    description = "a request body or argument does not match its schema"


class NotFound(PrimeError, LookupError):
    status = 404
    code = "not_found"
    description = "no such session, blob, entry or route"


class Forbidden(PrimeError, PermissionError):
    status = 403
    code = "forbidden"
    description = "the caller may not do this (reach, ownership, paths outside the root)"


class DepthExceeded(Forbidden):
    code = "depth_exceeded"
    description = "rlm() nesting would exceed the daemon's max_depth"


class BudgetExceeded(Forbidden):
    """A session (or an ancestor whose budget it draws on) has spent its budget."""

    code = "budget_exceeded"
    description = "a budget of the session or an ancestor is spent"


class Unauthorized(PrimeError, PermissionError):
    status = 401
    code = "unauthorized"
    description = "missing, unknown or revoked session token"


class ModelError(PrimeError, ValueError):
    code = "model_error"
    description = "the model is unknown, lacks its key, or its call failed"


class Conflict(PrimeError):
    status = 409
    code = "conflict"
    description = "the target changed or ended meanwhile (an ended session, a stale version)"


class TooLarge(PrimeError, ValueError):
    status = 413
    code = "too_large"
    description = "a body, prompt, message, context or answer is over its limit"


class RateLimited(PrimeError):
    status = 429
    code = "rate_limited"
    description = "too many messages too fast; `retry_after` says when to retry"


class MailboxFull(RateLimited):
    code = "mailbox_full"
    description = "the recipient has too many unread messages"


class LimitExceeded(PrimeError):
    status = 429
    code = "limit_exceeded"
    description = "a count limit (children per session, sessions per batch) is reached"


class InvalidEntry(PrimeError, ValueError):
    code = "invalid_entry"
    description = "a harness entry (kind, id, fields, files) is invalid"


class FrontMatterError(InvalidEntry):
    """A harness file's YAML front matter cannot be read; the message names the file and line."""

    code = "front_matter"
    description = "a harness file's YAML front matter cannot be parsed"

    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}, line {line}: {problem}", path=path, line=line)


class ExportFailed(PrimeError, OSError):
    code = "export_failed"
    description = "an export could not be written"


class InsufficientStorage(PrimeError, OSError):
    status = 507
    code = "disk_full"
    description = (
        "the disk under the server root (or the store) is full: nothing was changed; it works "
        "again once space is freed"
    )


class Unavailable(PrimeError):
    status = 503
    code = "unavailable"
    description = "the daemon cannot take this now (starting, stopping, or its store is failing)"


class StoreDamaged(Unavailable):
    code = "store_damaged"
    description = (
        "the store's database file is damaged; the message names the repair command "
        "(`prime-agent doctor --repair`), which keeps the damaged file"
    )


class KernelsUnavailable(Unavailable):
    code = "kernels_unavailable"
    description = (
        "agent kernels cannot be started or reached now (a kernel gateway that is down or "
        "refuses the daemon); a session that lost its kernel to it can run again once it is back"
    )
    # Set when a request went out and no answer came in time: whether the gateway did what was
    # asked (started a kernel) is unknown, so what it may have made is kept track of.
    unanswered = False


class UnsafePickle(PrimeError, ValueError):
    code = "unsafe_pickle"
    description = "a value would run code when loaded; load it with trusted=True if you trust it"


# -- errors raised in a kernel, never by the daemon ---------------------------------------------
class DaemonUnreachable(PrimeError, ConnectionError):
    code = "unreachable"
    description = "(kernel side) the daemon did not answer"


class NotConnected(PrimeError, RuntimeError):
    code = "not_connected"
    description = "(kernel side) this kernel has no capability for a daemon"


class Cancelled(PrimeError):
    """The session was cancelled before it answered."""

    code = "cancelled"
    description = "(kernel side) the awaited session was cancelled"


class ChildFailed(PrimeError):
    """The session ended in failure; `.error` says why, `.partial` holds any partial answer."""

    code = "failed"
    description = "(kernel side) the awaited session failed"

    @property
    def error(self) -> Any:
        return self.data.get("error")

    @property
    def partial(self) -> Any:
        return self.data.get("partial")


class ChildBudgetExceeded(ChildFailed, BudgetExceeded):
    """The session stopped because its budget (or one above it) ran out."""

    code = "child_budget_exceeded"
    description = "(kernel side) the awaited session stopped on a budget"


def _all(cls: type[PrimeError]) -> list[type[PrimeError]]:
    out = [cls]
    for sub in cls.__subclasses__():
        out += _all(sub)
    return out


ERRORS: dict[str, type[PrimeError]] = {c.code: c for c in _all(PrimeError)}


def from_json(body: dict[str, Any], *, status: int | None = None) -> PrimeError:
    """The error a daemon reply describes, as its own class (PrimeError for unknown codes)."""
    code = str(body.get("error") or "")
    message = str(body.get("message") or (f"HTTP {status}" if status else "error"))
    data = {k: v for k, v in body.items() if k not in ("error", "message")}
    return ERRORS.get(code, PrimeError)(message, **data)
