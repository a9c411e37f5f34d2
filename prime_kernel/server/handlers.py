"""User-facing REST API under /api/prime/, behind jupyter_server authentication."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..daemon.errors import PrimeError
from .base import PrimeHandler, number_arg, prime_errors

AUTH_RESOURCE = "prime"

CREATE_FIELDS = ("model", "name", "budget", "max_turns", "persistent", "spec")


def create_options(body: dict[str, Any]) -> dict[str, Any]:
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise PrimeError("'prompt' is required and must be a non-empty string")
    unknown = set(body) - {"prompt", *CREATE_FIELDS, "context_blob", "context_type"}
    if unknown:
        raise PrimeError(f"unknown fields: {', '.join(sorted(unknown))}")
    return {k: body[k] for k in CREATE_FIELDS if body.get(k) is not None}


class UserHandler(PrimeHandler):
    auth_resource = AUTH_RESOURCE


class SessionsHandler(UserHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self) -> None:
        states = [s for s in self.get_arguments("state") if s]
        root = self.get_argument("root", None)
        limit = number_arg(self.get_argument("limit", None), "limit")
        sessions = self.daemon.list_sessions(
            states=states or None, root_id=root, limit=int(limit) if limit else None
        )
        self.write_json({"sessions": sessions})

    @web.authenticated
    @authorized
    @prime_errors
    async def post(self) -> None:
        body = self.json_body()
        options = create_options(body)
        record = await self.daemon.create_session(body["prompt"], **options)
        self.write_json(record, status=201)


class SessionHandler(UserHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self, session_id: str) -> None:
        self.write_json(self.daemon.session_json(session_id))

    @web.authenticated
    @authorized
    @prime_errors
    async def delete(self, session_id: str) -> None:
        self.write_json(await self.daemon.cancel(session_id))


class EventsHandler(UserHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self, session_id: str) -> None:
        after = number_arg(self.get_argument("after", None), "after", default=0)
        self.write_json({"events": self.daemon.events(session_id, after=int(after or 0))})


class InterruptHandler(UserHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def post(self, session_id: str) -> None:
        await self.daemon.interrupt(session_id)
        self.write_json({"interrupted": session_id})


class ModelsHandler(UserHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self) -> None:
        daemon = self.daemon
        models = daemon.gateway.known_models()
        default = daemon.resolve_model(None)
        if default not in models:
            models.insert(0, default)
        self.write_json({"default": default, "models": models})


_ID = r"(?P<session_id>[A-Za-z0-9_-]+)"

HANDLERS = [
    (r"/api/prime/sessions", SessionsHandler),
    (rf"/api/prime/sessions/{_ID}", SessionHandler),
    (rf"/api/prime/sessions/{_ID}/events", EventsHandler),
    (rf"/api/prime/sessions/{_ID}/interrupt", InterruptHandler),
    (r"/api/prime/models", ModelsHandler),
]
