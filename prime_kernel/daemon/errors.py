"""Errors the daemon reports to callers; `status` is the HTTP status the server maps them to."""

from __future__ import annotations


class PrimeError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, message: str, **data: object) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, object]:
        return {"error": self.code, "message": self.message, **self.data}


class NotFound(PrimeError):
    status = 404
    code = "not_found"


class Forbidden(PrimeError):
    status = 403
    code = "forbidden"


class DepthExceeded(Forbidden):
    code = "depth_exceeded"


class ModelError(PrimeError):
    code = "model_error"


class Conflict(PrimeError):
    status = 409
    code = "conflict"


class Unauthorized(PrimeError):
    status = 401
    code = "unauthorized"


class BudgetExceeded(Forbidden):
    """A session (or an ancestor whose budget it draws on) has spent its budget."""

    code = "budget_exceeded"


class TooLarge(PrimeError):
    status = 413
    code = "too_large"


class RateLimited(PrimeError):
    status = 429
    code = "rate_limited"


class MailboxFull(RateLimited):
    code = "mailbox_full"
