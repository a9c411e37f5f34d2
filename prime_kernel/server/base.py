"""What every handler shares, as jupyter_server does it: errors turned into JSON once
(`write_error`), bodies parsed and validated by their schema once (`body`), authentication
applied once per audience (`UserHandler`, `KernelHandler`) instead of decorators on every
method, and the calling session resolved once per kernel request (`KernelHandler.caller`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any

import jsonschema
from jsonschema.validators import validator_for
from jupyter_server.auth.decorator import allow_unauthenticated, authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from referencing import Registry, Resource
from tornado import web

from ..daemon.access import Access, TokenRegistry
from ..daemon.admission import Admission
from ..daemon.answers import Answers
from ..daemon.daemon import Daemon
from ..daemon.disk import DiskSpace, is_full
from ..daemon.goals import Goals
from ..daemon.host import Host
from ..daemon.learning import Learner
from ..daemon.listing import Listing
from ..daemon.mailbox import Mailbox
from ..daemon.refining import Refiner
from ..daemon.registry import SessionRegistry
from ..daemon.replay import Replays
from ..daemon.runs import Runs
from ..daemon.schedules import Schedules
from ..daemon.secrets import Secrets
from ..daemon.session import LiveSession
from ..daemon.snapshots import Snapshots
from ..daemon.spills import Spills
from ..daemon.store import Store
from ..harness import Harness
from ..protocol import rest
from ..protocol.errors import InsufficientStorage, InvalidRequest, NotFound, PrimeError, Unavailable
from ..protocol.wire import MAX_INT, TOKEN_HEADER

AUTH_RESOURCE = "prime"
_METHODS = ("get", "post", "put", "delete", "patch")
# Deeper JSON is refused before it is validated (a validator recursing on it could overflow).
MAX_DEPTH = 64


# The daemon's services a handler calls, each in the settings as `prime_<name>` (put there by
# the extension: PrimeApp.initialize_settings), as jupyter_server's are (`kernel_manager`).
SERVICES = (
    "access",
    "admission",
    "answers",
    "disk",
    "goals",
    "harness",
    "host",
    "learner",
    "listing",
    "mailbox",
    "refiner",
    "registry",
    "replays",
    "runs",
    "schedules",
    "secrets",
    "snapshots",
    "spills",
    "store",
    "tokens",
)


def service(name: str) -> Any:
    """A handler's property: the daemon's service `name` (set if the daemon runs)."""
    return property(lambda self: self.settings.get(f"prime_{name}"))


class PrimeHandler(ExtensionHandlerMixin, APIHandler):
    @property
    def daemon(self) -> Daemon:
        """The daemon itself: its folders, whether it runs (set if it runs)."""
        return self.settings.get("prime_daemon")  # type: ignore[return-value]

    access: Access = service("access")
    admission: Admission = service("admission")
    answers: Answers = service("answers")
    disk: DiskSpace = service("disk")
    goals: Goals = service("goals")
    harness: Harness = service("harness")
    host: Host = service("host")
    learner: Learner = service("learner")
    listing: Listing = service("listing")
    mailbox: Mailbox = service("mailbox")
    refiner: Refiner = service("refiner")
    registry: SessionRegistry = service("registry")
    replays: Replays = service("replays")
    runs: Runs = service("runs")
    schedules: Schedules = service("schedules")
    secrets: Secrets = service("secrets")
    snapshots: Snapshots = service("snapshots")
    spills: Spills = service("spills")
    store: Store = service("store")
    tokens: TokenRegistry = service("tokens")

    # Whether the route is for the server's users (False: for kernels, by their token).
    for_people = True
    # Whether its changes need disk space: refused with 507 while the disk is full (not an
    # interrupt: stopping what fills the disk must stay possible).
    needs_space = True

    async def prepare(self, **kwargs: Any) -> None:
        await super().prepare(**kwargs)
        if self._finished:
            return
        self.check_available()
        if self.daemon.stopping:
            # Its store closes next: a request taken now would fail halfway. A client that
            # follows a session says the server went away (the session can be resumed).
            raise Unavailable("the server is stopping", stopping=True)
        if self.needs_space and self.request.method in ("POST", "PUT", "PATCH"):
            self.disk.check("this request")

    def check_available(self) -> None:
        """A JSON 503 saying why, when the extension could not start its daemon (a damaged
        store, say): the server runs on, and /api/prime/* says what is wrong — to the
        server's users (a kernel's token cannot be checked without the daemon)."""
        error = self.settings.get("prime_unavailable")
        if error is not None:
            if self.for_people and not self.current_user:
                raise web.HTTPError(403)
            raise type(error)(f"Prime is not running on this server: {error.message}", **error.data)

    # -- errors ---------------------------------------------------------------------------------
    def _handle_request_exception(self, e: BaseException) -> None:
        if is_full(e) and not isinstance(e, PrimeError):
            # Wherever a write found the disk full: a 507 that says so, not a 500.
            where = self.daemon.root_dir if self.daemon is not None else "the server root"
            self.log.warning(
                "%s %s: the disk is full: %s", self.request.method, self.request.path, e
            )
            e = InsufficientStorage(f"the disk under {where} is full ({e})")
        if isinstance(e, PrimeError) and not self._finished:
            self.send_error(e.status, exc_info=(type(e), e, None))
            return
        super()._handle_request_exception(e)

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, PrimeError):  # the caller's mistake, answered: no traceback
            self.log.info(
                "%s %s: %s %s", self.request.method, self.request.path, value.status, value
            )
            return
        super().log_exception(typ, value, tb)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        error = (kwargs.get("exc_info") or (None, None, None))[1]
        if isinstance(error, PrimeError):
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(error.to_json(), default=str))
            return
        super().write_error(status_code, **kwargs)

    # -- requests -------------------------------------------------------------------------------
    def body(self, schema: str | None = None) -> dict[str, Any]:
        """The request's JSON object, checked against `schema` (a name in protocol/schemas)."""
        try:
            data = json.loads(self.request.body or b"{}")
        except RecursionError:
            raise InvalidRequest("the request body is nested too deeply") from None
        except ValueError as e:
            raise InvalidRequest(f"the request body is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise InvalidRequest("the request body must be a JSON object")
        check_json(data)
        if schema is not None:
            validate(schema, data)
        return data

    def query_int(self, name: str, *, default: int | None = None, low: int = 0) -> int | None:
        value = self.get_argument(name, None)
        if value is None or value == "":
            return default
        try:
            number = int(value)
        except ValueError:
            raise InvalidRequest(f"{name} must be an integer, not {value[:40]!r}") from None
        if not low <= number <= MAX_INT:
            raise InvalidRequest(f"{name} must be an integer from {low} to {MAX_INT}")
        return number

    def query_seconds(self, name: str, default: float, maximum: float) -> float:
        value = self.get_argument(name, None)
        if value is None or value == "":
            return default
        try:
            number = float(value)
        except ValueError:
            raise InvalidRequest(
                f"{name} must be a number of seconds, not {value[:40]!r}"
            ) from None
        if not 0 <= number < float("inf"):
            raise InvalidRequest(f"{name} must be a finite, non-negative number of seconds")
        return min(number, maximum)

    def write_json(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data, default=str))

    async def reply(self, data: Any, status: int = 200) -> None:
        """Answer a request that changed something, once the change is durable."""
        await self.store.flush(timeout=30)
        self.write_json(data, status)


class UserHandler(PrimeHandler):
    """A route for people: jupyter_server's authentication and authorization (resource
    `prime`), applied to every HTTP method the subclass defines."""

    auth_resource = AUTH_RESOURCE

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in _METHODS:
            if name in cls.__dict__:
                setattr(cls, name, web.authenticated(authorized(cls.__dict__[name])))


class KernelHandler(PrimeHandler):
    """A route for kernels: authenticated by the session capability token in the
    X-Prime-Token header alone, never by a cookie. `self.caller` is the calling session."""

    caller: LiveSession
    for_people = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in _METHODS:
            if name in cls.__dict__:
                setattr(cls, name, allow_unauthenticated(cls.__dict__[name]))

    def check_xsrf_cookie(self) -> None:
        # Authenticated by a header token, never by a cookie: cross-site requests cannot
        # forge it, so the XSRF cookie check does not apply.
        return

    async def prepare(self, **kwargs: Any) -> None:
        await super().prepare(**kwargs)
        self.caller = await self.access.caller(self.request.headers.get(TOKEN_HEADER))
        if not self.daemon.started and self.request.method != "GET":
            # A change made now would wait for the daemon's start on the server's side, with
            # nothing said in the cell; the kernel's client says so and retries.
            raise Unavailable("the Prime daemon is still starting", starting=True, retry_after=0.5)


@web.stream_request_body
class UploadHandler(KernelHandler):
    """A kernel's upload (a pickle: an answer, a context, a spilled value), taken as it
    arrives. Without streaming, tornado joins a body's chunks into one bytes on the event loop
    when the last one comes: for 150 MB a third of a second on a busy machine, with no other
    request served meanwhile. Here each chunk is appended as it comes (a large buffer grows in
    place), and what is past `c.Admission.max_blob_bytes` is counted, not kept.

    A request refused before its body is read (a bad token, a full disk) is answered once the
    body has arrived, unkept: an answer sent while the kernel still sends would end in a reset
    connection, not in the error."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in _METHODS:
            if name in cls.__dict__:
                setattr(cls, name, _refused_first(cls.__dict__[name]))

    async def prepare(self, **kwargs: Any) -> None:
        self.upload = bytearray()
        self.upload_size = 0
        self.refusal: Exception | None = None
        try:
            await super().prepare(**kwargs)
        except Exception as e:
            self.refusal = e

    def data_received(self, chunk: bytes) -> None:
        self.upload_size += len(chunk)
        if self.refusal is None and self.upload_size <= self.admission.max_blob_bytes:
            self.upload += chunk

    def uploaded(self, what: str) -> bytearray:
        """The whole body; TooLarge (413) if it is over the daemon's limit."""
        self.admission.check_blob_size(self.upload_size, what)
        return self.upload


def _refused_first(method: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    @functools.wraps(method)  # keeps jupyter_server's marks (allow_unauthenticated)
    async def wrapper(self: UploadHandler, *args: Any, **kwargs: Any) -> None:
        if self.refusal is not None:
            raise self.refusal
        await method(self, *args, **kwargs)

    return wrapper


class NoRouteHandler(PrimeHandler):
    """Any other path under /api/prime/: a JSON 404, not tornado's HTML page."""

    async def prepare(self) -> None:  # type: ignore[override]
        if self.settings.get("prime_unavailable") is not None:
            await super().prepare()  # a person's request: says why Prime is not running
        raise NotFound(f"no route {self.request.method} {self.request.path}")


def check_json(value: Any) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH or holding strings that are not valid Unicode
    (lone surrogates such as \\ud800, which nothing downstream could store)."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        node, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidRequest(f"the request body is nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, str):
            _unicode(node, path)
        elif isinstance(node, dict):
            for key, item in node.items():
                _unicode(key, path)
                stack.append((item, depth + 1, f"{path}/{key}"))
        elif isinstance(node, list):
            stack.extend((item, depth + 1, f"{path}/{i}") for i, item in enumerate(node))


def _unicode(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        where = f" at {path}" if path else ""
        raise InvalidRequest(
            f"the request body{where} is not valid Unicode: it holds a lone surrogate "
            "(such as \\ud800)"
        ) from None


@cache
def _validator(name: str) -> Any:
    registry: Registry[Any] = Registry().with_resources(
        (f"{n}.json", Resource.from_contents(rest.schema(n))) for n in rest.names()
    )
    schema = rest.schema(name)
    return validator_for(schema)(schema, registry=registry)


def validate(name: str, data: Any) -> None:
    """Check `data` against the schema `name`; InvalidRequest naming the field if it fails."""
    error = jsonschema.exceptions.best_match(_validator(name).iter_errors(data))
    if error is not None:
        raise InvalidRequest(_explain(error))


_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}


def _explain(error: Any) -> str:
    """A jsonschema error as one sentence a person can act on."""
    where = ".".join(str(p) for p in error.absolute_path)
    field = f"'{where}'" if where else "the request body"
    got = repr(error.instance)
    got = got if len(got) <= 60 else got[:57] + "..."
    rule, value = error.validator, error.validator_value
    if rule == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(known))
        inside = f" in '{where}'" if where else ""
        return (
            f"unknown field{'s' if len(extra) > 1 else ''}{inside}: {', '.join(extra)} "
            f"(known: {', '.join(known)})"
        )
    if rule == "type":
        kinds = [value] if isinstance(value, str) else list(value)
        return f"{field} must be {' or '.join(_TYPES.get(k, k) for k in kinds)}, not {got}"
    if rule == "required":
        missing = [k for k in value if k not in error.instance]
        return f"{field} needs '{missing[0] if missing else value[0]}'"
    if rule in ("minimum", "exclusiveMinimum"):
        bound = "at least" if rule == "minimum" else "more than"
        return f"{field} must be {bound} {value:g}, not {got}"
    if rule in ("maximum", "exclusiveMaximum"):
        return f"{field} must be at most {value:g}, not {got}"
    if rule == "minLength":
        return f"{field} must not be empty" if value == 1 else f"{field} is too short"
    if rule == "maxLength":
        return f"{field} is too long: at most {value} characters"
    if rule == "minItems":
        return f"{field} must not be empty" if value == 1 else f"{field} has too few items"
    if rule == "maxItems":
        return f"{field} has too many items: at most {value}"
    if rule == "enum":
        return f"{field} must be one of {', '.join(map(repr, value))}, not {got}"
    if rule == "pattern":
        return f"{field} is not a valid value: {got}"
    return f"{field}: {error.message[:200]}"
