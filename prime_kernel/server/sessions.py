"""Sessions: create, list, read, wait for, answer, cancel and interrupt them.

People (jupyter_server auth) under /api/prime/sessions; kernels (their session's token) under
/api/prime/kernel/. Each handler is a thin call into the daemon, which decides everything.
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import InvalidRequest
from ..protocol.requests import QUERY, SessionFilter, SessionRequest
from ..protocol.wire import API, KERNEL_API, MAX_WAIT, SESSION_ID
from .base import KernelHandler, UploadHandler, UserHandler

ID = rf"(?P<session_id>{SESSION_ID})"
# Longest answer repr kept (the kernel caps it too, but the kernel is not trusted).
MAX_REPR_CHARS = 4000


# -- people -----------------------------------------------------------------------------------
class SessionsHandler(UserHandler):
    def compute_etag(self) -> None:
        # Tornado would hash every list it sends (megabytes for thousands of sessions) for an
        # ETag no client sends back: `changed_after` is how to ask for what changed.
        return None

    async def get(self) -> None:
        # Tornado's reading of each argument (decoded, control characters out, stripped).
        filters = SessionFilter.from_query({q: self.get_arguments(q) for q in QUERY.values()})
        # Made as JSON text by the daemon: most entries are kept ready-made (daemon/listing.py).
        self.set_header("Content-Type", "application/json")
        self.finish(self.listing.text(filters))

    async def post(self) -> None:
        # A `context` given here (JSON from a person) is pickled and kept by admission.
        request = SessionRequest.from_json(self.body("create_session"))
        record = await self.admission.create_session(request)
        await self.reply(record, status=201)


class SessionHandler(UserHandler):
    async def get(self, session_id: str) -> None:
        self.write_json(self.listing.session_json(session_id))

    async def delete(self, session_id: str) -> None:
        await self.reply(await self.runs.cancel(session_id))


class EventsHandler(UserHandler):
    async def get(self, session_id: str) -> None:
        after = self.query_int("after", default=0) or 0
        self.write_json({"events": await self.listing.events(session_id, after=after)})


class SessionContextHandler(UserHandler):
    async def get(self, session_id: str) -> None:
        data = await self.listing.context_bytes(session_id)
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(data)


class InterruptHandler(UserHandler):
    needs_space = False  # stopping what fills the disk must stay possible

    async def post(self, session_id: str) -> None:
        await self.runs.interrupt(session_id)
        self.write_json({"interrupted": session_id})


class ReplayReportHandler(UserHandler):
    async def get(self, session_id: str) -> None:
        self.write_json(await self.replays.report(session_id))


class ReplayOfHandler(KernelHandler):
    async def get(self, session_id: str) -> None:
        self.access.descendant_of(self.caller, session_id)
        self.write_json(await self.replays.report(session_id))


class ResumeHandler(UserHandler):
    async def post(self, session_id: str) -> None:
        await self.reply(self.runs.resume(session_id))


class ModelsHandler(UserHandler):
    async def get(self) -> None:
        self.write_json(self.admission.models())


# -- kernels ----------------------------------------------------------------------------------
def _check_replay(handler: KernelHandler, request: SessionRequest) -> None:
    """An agent replays only sessions of its own tree (what it could read anyway); a person's
    notebook kernel, any session."""
    if request.replay is not None and handler.caller.record.is_agent:
        handler.access.own_tree(handler.caller, request.replay)


class ChildrenHandler(KernelHandler):
    async def post(self) -> None:
        request = SessionRequest.from_json(self.body("create_child"))
        _check_replay(self, request)
        record = await self.admission.create_session(request, parent_id=self.caller.id)
        await self.reply(record, status=201)


class BatchChildrenHandler(KernelHandler):
    async def post(self) -> None:
        bodies = self.body("create_children")["sessions"]
        requests = [SessionRequest.from_json(body) for body in bodies]
        for request in requests:
            _check_replay(self, request)
        records = await self.admission.create_sessions(requests, parent_id=self.caller.id)
        await self.reply({"sessions": records}, status=201)


class ChildHandler(KernelHandler):
    async def get(self, session_id: str) -> None:
        self.access.descendant_of(self.caller, session_id)
        self.write_json(self.listing.session_json(session_id))

    async def delete(self, session_id: str) -> None:
        self.access.descendant_of(self.caller, session_id)
        await self.reply(await self.runs.cancel(session_id))


class WaitHandler(KernelHandler):
    async def get(self, session_id: str) -> None:
        self.access.descendant_of(self.caller, session_id)
        timeout = self.query_seconds("timeout", MAX_WAIT, MAX_WAIT)
        self.write_json(await self.runs.wait(session_id, timeout, caller=self.caller))


class AnswerOfHandler(KernelHandler):
    async def get(self, session_id: str) -> None:
        self.access.descendant_of(self.caller, session_id)
        data = await self.answers.answer_bytes(session_id)
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(data)


class BlobsHandler(UploadHandler):
    # What a kernel uploads, for the message if it is too large.
    WHAT = {"context": "the context", "snapshot": "the REPL snapshot"}

    async def post(self) -> None:
        kind = self.get_argument("what", "")
        if kind and kind not in self.WHAT:
            raise InvalidRequest(f"what must be one of {', '.join(self.WHAT)}, not {kind[:40]!r}")
        what = self.WHAT.get(kind, "the value")
        data = self.uploaded(what)
        blob_id = await self.admission.put_blob(data, what)
        self.write_json({"blob_id": blob_id, "size": len(data)}, status=201)


class ContextHandler(KernelHandler):
    async def get(self) -> None:
        data = await self.listing.context_bytes(self.caller.id)
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(data)


class AnswerHandler(UploadHandler):
    async def post(self) -> None:
        # The value comes pickled as the body and is stored as it came (never decoded on the
        # loop); its repr rides in the query, so answer() is one request.
        if self.request.headers.get("Content-Type") != "application/octet-stream":
            raise InvalidRequest(
                "answer() sends its value pickled, as an application/octet-stream body"
            )
        text = self.get_argument("repr", "", strip=False)
        if len(text) > MAX_REPR_CHARS:
            text = text[:MAX_REPR_CHARS] + "…"
        await self.answers.give(self.caller, self.uploaded("the answer"), text)
        await self.reply({"session_id": self.caller.id, "answered": True})


class LLMHandler(KernelHandler):
    async def post(self) -> None:
        body = self.body("llm")
        texts = await self.host.llm(self.caller, body["prompts"], body.get("model"))
        await self.reply({"texts": texts})


class WhoAmIHandler(KernelHandler):
    async def get(self) -> None:
        self.write_json(self.listing.session_json(self.caller.id))


class UsageHandler(KernelHandler):
    async def get(self) -> None:
        self.write_json(self.listing.session_json(self.caller.id)["usage"])


class SnapshotHandler(KernelHandler):
    async def get(self) -> None:
        data = await self.snapshots.latest_bytes(self.caller.id)
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(data)


class CompactHandler(KernelHandler):
    async def post(self) -> None:
        self.write_json(self.host.request_compaction(self.caller))


HANDLERS: list[tuple[str, Any]] = [
    (rf"{API}/sessions", SessionsHandler),
    (rf"{API}/sessions/{ID}", SessionHandler),
    (rf"{API}/sessions/{ID}/events", EventsHandler),
    (rf"{API}/sessions/{ID}/interrupt", InterruptHandler),
    (rf"{API}/sessions/{ID}/resume", ResumeHandler),
    (rf"{API}/sessions/{ID}/replay", ReplayReportHandler),
    (rf"{API}/sessions/{ID}/context", SessionContextHandler),
    (rf"{API}/models", ModelsHandler),
    (rf"{KERNEL_API}/sessions", ChildrenHandler),
    (rf"{KERNEL_API}/sessions/batch", BatchChildrenHandler),
    (rf"{KERNEL_API}/sessions/{ID}", ChildHandler),
    (rf"{KERNEL_API}/sessions/{ID}/wait", WaitHandler),
    (rf"{KERNEL_API}/sessions/{ID}/answer", AnswerOfHandler),
    (rf"{KERNEL_API}/sessions/{ID}/replay", ReplayOfHandler),
    (rf"{KERNEL_API}/blobs", BlobsHandler),
    (rf"{KERNEL_API}/context", ContextHandler),
    (rf"{KERNEL_API}/answer", AnswerHandler),
    (rf"{KERNEL_API}/llm", LLMHandler),
    (rf"{KERNEL_API}/whoami", WhoAmIHandler),
    (rf"{KERNEL_API}/usage", UsageHandler),
    (rf"{KERNEL_API}/snapshot", SnapshotHandler),
    (rf"{KERNEL_API}/compact", CompactHandler),
]
