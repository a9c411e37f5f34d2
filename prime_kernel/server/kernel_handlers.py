"""Kernel-facing REST API under /api/prime/kernel/, authenticated by per-kernel tokens only.

These calls come from code running in a kernel, which holds no Jupyter cookie or server token;
it holds the capability token our provisioner minted for it. The token — never anything the
kernel says about itself — decides which session is calling.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from jupyter_server.auth.decorator import allow_unauthenticated

from ..daemon.daemon import LiveSession
from ..daemon.errors import Forbidden, PrimeError, Unauthorized
from ..kernel.client import TOKEN_HEADER
from .base import PrimeHandler, number_arg, prime_errors
from .handlers import create_options

MAX_WAIT = 300.0
MAX_REPR_CHARS = 4000


class KernelHandler(PrimeHandler):
    """Base: resolves the calling session from the token header."""

    def check_xsrf_cookie(self) -> None:
        # Authenticated by a header token, never by a cookie: cross-site requests cannot
        # forge it, so the XSRF cookie check does not apply.
        return

    async def caller(self) -> LiveSession:
        token = self.request.headers.get(TOKEN_HEADER)
        kernel_id = self.daemon.tokens.kernel_for(token)
        if kernel_id is None:
            if not token:
                raise Unauthorized(f"missing {TOKEN_HEADER} header")
            raise Unauthorized("unknown or revoked session token")
        live = await self.daemon.caller(kernel_id)
        if live.state.terminal and live.record["kind"] == "agent":
            # A kernel kept alive after its session ended may still be used by a person,
            # but it cannot act as the session any more.
            raise Unauthorized(f"session {live.id} has ended ({live.state.value})")
        return live

    async def reachable(self, session_id: str) -> LiveSession:
        caller = await self.caller()
        if not self.daemon.can_reach(caller, session_id):
            self.daemon._record(session_id)  # a clear 404 for ids that do not exist
            raise Forbidden(f"session {session_id} is not a descendant of session {caller.id}")
        return caller

    def own_tree(self, caller: LiveSession, session_id: object) -> str:
        """`session_id` (default: the caller) if it is the caller or one of its descendants."""
        session_id = session_id or caller.id
        if not isinstance(session_id, str):
            raise PrimeError("'session_id' must be a string")
        if session_id != caller.id and not self.daemon.can_reach(caller, session_id):
            self.daemon._record(session_id)  # a clear 404 for ids that do not exist
            raise Forbidden(f"session {session_id} is not {caller.id} or one of its descendants")
        return session_id


class ChildrenHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def post(self) -> None:
        caller = await self.caller()
        body = self.json_body()
        record = await self.daemon.create_session(
            body.get("prompt"),  # type: ignore[arg-type]
            parent_id=caller.id,
            context_blob=body.get("context_blob"),
            context_type=body.get("context_type"),
            **create_options(body),
        )
        self.write_json(record, status=201)


class BatchChildrenHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def post(self) -> None:
        caller = await self.caller()
        bodies = self.json_body().get("sessions")
        if not isinstance(bodies, list) or not bodies:
            raise PrimeError("'sessions' must be a non-empty list")
        if not all(isinstance(b, dict) for b in bodies):
            raise PrimeError("every item of 'sessions' must be an object")
        # Validate every request before admitting any, so a bad one admits nothing.
        options = [create_options(b) for b in bodies]
        records = []
        for body, opts in zip(bodies, options, strict=True):
            records.append(
                await self.daemon.create_session(
                    body["prompt"],
                    parent_id=caller.id,
                    context_blob=body.get("context_blob"),
                    context_type=body.get("context_type"),
                    **opts,
                )
            )
        self.write_json({"sessions": records}, status=201)


class ChildHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self, session_id: str) -> None:
        await self.reachable(session_id)
        self.write_json(self.daemon.session_json(session_id))

    @allow_unauthenticated
    @prime_errors
    async def delete(self, session_id: str) -> None:
        await self.reachable(session_id)
        self.write_json(await self.daemon.cancel(session_id))


class WaitHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self, session_id: str) -> None:
        caller = await self.reachable(session_id)
        timeout = number_arg(self.get_argument("timeout", None), "timeout", default=MAX_WAIT)
        timeout = MAX_WAIT if timeout is None else min(timeout, MAX_WAIT)
        # A parent blocked on its child gives its concurrency slot to others meanwhile.
        self.daemon.scheduler.suspend(caller.id)
        try:
            record = await self.daemon.wait(session_id, timeout)
        finally:
            self.daemon.scheduler.resume(caller.id)
        self.write_json(record)


class AnswerOfHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self, session_id: str) -> None:
        await self.reachable(session_id)
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(self.daemon.answer_bytes(session_id))


class BlobsHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def post(self) -> None:
        await self.caller()
        self.daemon.check_blob_size(len(self.request.body), "the context")
        blob_id = self.daemon.store.put_blob(self.request.body)
        self.write_json({"blob_id": blob_id, "size": len(self.request.body)}, status=201)


class ContextHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self) -> None:
        caller = await self.caller()
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(self.daemon.context_bytes(caller.id))


class AnswerHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def post(self) -> None:
        caller = await self.caller()
        body = self.json_body()
        text = body.get("repr")
        if not isinstance(text, str):
            raise PrimeError("'repr' must be a string")
        raw = body.get("pickle")
        if not isinstance(raw, str) or not raw:
            raise PrimeError("'pickle' must be a non-empty base64 string")
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise PrimeError("'pickle' must be base64") from None
        if len(text) > MAX_REPR_CHARS:  # the kernel caps it too, but the kernel is not trusted
            text = text[:MAX_REPR_CHARS] + "…"
        self.daemon.check_blob_size(len(data), "the answer")
        self.daemon.record_answer(caller, data, text, "answer")
        self.write_json({"session_id": caller.id, "answered": True})


class LLMHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def post(self) -> None:
        caller = await self.caller()
        body = self.json_body()
        texts = await self.daemon.llm(caller, body.get("prompts"), body.get("model"))  # type: ignore[arg-type]
        self.write_json({"texts": texts})


class WhoAmIHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self) -> None:
        caller = await self.caller()
        self.write_json(self.daemon.session_json(caller.id))


_ID = r"(?P<session_id>[A-Za-z0-9_-]+)"
_K = "/api/prime/kernel"

HANDLERS: list[tuple[str, Any]] = [
    (rf"{_K}/sessions", ChildrenHandler),
    (rf"{_K}/sessions/batch", BatchChildrenHandler),
    (rf"{_K}/sessions/{_ID}", ChildHandler),
    (rf"{_K}/sessions/{_ID}/wait", WaitHandler),
    (rf"{_K}/sessions/{_ID}/answer", AnswerOfHandler),
    (rf"{_K}/blobs", BlobsHandler),
    (rf"{_K}/context", ContextHandler),
    (rf"{_K}/answer", AnswerHandler),
    (rf"{_K}/llm", LLMHandler),
    (rf"{_K}/whoami", WhoAmIHandler),
]
