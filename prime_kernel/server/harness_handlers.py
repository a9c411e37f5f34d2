"""User-facing REST API of the Continual Harness under /api/prime/harness (jupyter_server auth).

The request parsing here is shared with the kernel-facing API (kernel_harness_handlers.py);
only the author differs: "user" here, the calling session there.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..daemon.errors import PrimeError
from ..export.files import under_root
from ..harness import interop, refine
from ..harness.harness import Harness
from .base import number_arg, prime_errors
from .handlers import UserHandler

_WRITE_FIELDS = {"title", "content", "metadata", "files", "reason", "evidence", "scope"}


def write_args(body: dict[str, Any], *, extra: set[str] = frozenset()) -> dict[str, Any]:  # type: ignore[assignment]
    """Keyword arguments for Harness.create/update from a JSON body; unknown fields refused."""
    unknown = set(body) - _WRITE_FIELDS - set(extra)
    if unknown:
        raise PrimeError(f"unknown fields: {', '.join(sorted(unknown))}")
    for key in ("title", "content", "reason", "scope"):
        if key in body and body[key] is not None and not isinstance(body[key], str):
            raise PrimeError(f"'{key}' must be a string")
    if body.get("metadata") is not None and not isinstance(body["metadata"], dict):
        raise PrimeError("'metadata' must be an object")
    if body.get("files") is not None and not isinstance(body["files"], dict):
        raise PrimeError("'files' must be an object of file name -> text")
    if body.get("evidence") is not None and not isinstance(body["evidence"], list):
        raise PrimeError("'evidence' must be a list")
    return {k: body[k] for k in _WRITE_FIELDS & set(body) if body[k] is not None}


def base_version(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit():
        raise PrimeError(f"base_version must be a version number, not {value!r}")
    return int(value)


def entry_json(harness: Harness, kind: str, entry_id: str) -> dict[str, Any]:
    entry = harness.get(kind, entry_id)
    out = entry.to_json()
    out["file"] = str(harness.files.location(entry.scope, entry.kind, entry.id))
    return out


def listing(harness: Harness, kind: str | None) -> dict[str, Any]:
    entries, errors = harness.list(kind or None)
    return {
        "entries": [e.to_json(full=False) for e in entries],
        "errors": errors,
        "policy": harness.review_policy,
        "roots": {s: str(harness.files.root(s)) for s in ("project", "global")},
    }


def create(
    harness: Harness, body: dict[str, Any], author: str, kind: str | None = None
) -> dict[str, Any]:
    args = write_args(body, extra={"id", "kind"})
    kind = kind or body.get("kind")
    if not isinstance(kind, str):
        raise PrimeError("'kind' is required: note, memory, skill or spec")
    entry = harness.create(kind, body.get("id"), author=author, **args)  # type: ignore[arg-type]
    return entry_json(harness, entry.kind, entry.id)


def update(
    harness: Harness, kind: str, entry_id: str, body: dict[str, Any], author: str
) -> dict[str, Any]:
    args = write_args(body, extra={"base_version"})
    entry = harness.update(
        kind, entry_id, base_version=base_version(body.get("base_version")), author=author, **args
    )
    return entry_json(harness, entry.kind, entry.id)


class HarnessHandler(UserHandler):
    @property
    def harness(self) -> Harness:
        return self.daemon.harness


class IndexHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self) -> None:
        self.write_json(listing(self.harness, self.get_argument("kind", None)))

    @web.authenticated
    @authorized
    @prime_errors
    async def post(self) -> None:
        self.write_json(create(self.harness, self.json_body(), "user"), status=201)


class EntryHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self, kind: str, entry_id: str) -> None:
        self.write_json(entry_json(self.harness, kind, entry_id))

    @web.authenticated
    @authorized
    @prime_errors
    async def put(self, kind: str, entry_id: str) -> None:
        self.write_json(update(self.harness, kind, entry_id, self.json_body(), "user"))

    @web.authenticated
    @authorized
    @prime_errors
    async def delete(self, kind: str, entry_id: str) -> None:
        base = base_version(self.get_argument("base_version", None))
        reason = self.get_argument("reason", "")
        self.write_json(
            self.harness.delete(kind, entry_id, base_version=base, author="user", reason=reason)
        )


class HistoryHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self, kind: str, entry_id: str) -> None:
        self.write_json({"versions": self.harness.history(kind, entry_id)})


class VersionHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self, kind: str, entry_id: str, version: str) -> None:
        self.write_json(self.harness.version(kind, entry_id, int(version)))


class DiffHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self, kind: str, entry_id: str) -> None:
        a = number_arg(self.get_argument("a", None), "a")
        b = number_arg(self.get_argument("b", None), "b")
        if a is None:
            raise PrimeError("'a' (a version number) is required")
        text = self.harness.diff(kind, entry_id, int(a), int(b) if b is not None else None)
        self.write_json({"diff": text})


class RollbackHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def post(self, kind: str, entry_id: str) -> None:
        body = self.json_body()
        version = base_version(body.get("version"))
        if version is None:
            raise PrimeError("'version' (the version to restore) is required")
        self.write_json(
            self.harness.rollback(
                kind, entry_id, version, author="user", reason=body.get("reason") or ""
            )
        )


class RefineHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def post(self) -> None:
        body = self.json_body()
        unknown = set(body) - {"instructions", "session_id"}
        if unknown:
            raise PrimeError(f"unknown fields: {', '.join(sorted(unknown))}")
        record = await refine.refine(
            self.daemon,
            instructions=body.get("instructions") or None,
            author="user",
            trigger="user request",
            session_id=body.get("session_id") or None,
        )
        self.write_json(record, status=201)


class RefinementsHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self) -> None:
        limit = number_arg(self.get_argument("limit", None), "limit", default=50)
        self.write_json({"refinements": self.harness.versions().refinements(int(limit or 50))})


class RefinementHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self, refinement_id: str) -> None:
        self.write_json(refine.get_refinement(self.harness, refinement_id))


def edit_indices(body: dict[str, Any]) -> list[int] | None:
    edits = body.get("edits")
    if edits is None:
        return None
    if not isinstance(edits, list) or not all(isinstance(i, int) for i in edits):
        raise PrimeError("'edits' must be a list of edit indices")
    return edits


class ReviewHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def post(self, refinement_id: str, action: str) -> None:
        body = self.json_body()
        if action == "approve":
            out = refine.apply_edits(self.daemon, refinement_id, edit_indices(body))
        elif action == "reject":
            out = refine.reject_edits(self.harness, refinement_id, edit_indices(body))
        else:
            out = refine.rollback_refinement(self.harness, refinement_id)
        self.write_json(out)


class ImportHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def post(self) -> None:
        body = self.json_body()
        replace = bool(body.get("replace"))
        if "state" in body:
            out = interop.import_prime_state(self.harness, body["state"], replace=replace)
        elif isinstance(body.get("path"), str):
            path = under_root(
                self.daemon.root_dir, body["path"], store=self.daemon.store_dir, what="an import"
            )
            out = interop.import_path(self.harness, path, replace=replace)
        else:
            raise PrimeError(
                "give 'state' (a harness_state.json document) or 'path' (on the server)"
            )
        self.write_json(out)


class ExportHandler(HarnessHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def post(self) -> None:
        path = self.json_body().get("path")
        if not isinstance(path, str) or not path:
            raise PrimeError("'path' (a folder under the server root) is required")
        folder = under_root(
            self.daemon.root_dir, path, store=self.daemon.store_dir, what="a harness export"
        )
        self.write_json(interop.export(self.harness, folder))


KIND = r"(?P<kind>notes|note|memory|memories|skills|skill|specs|spec)"
EID = r"(?P<entry_id>[^/]+)"
RID = r"(?P<refinement_id>[A-Za-z0-9_-]+)"
_H = "/api/prime/harness"

HANDLERS: list[tuple[str, Any]] = [
    (_H, IndexHandler),
    (rf"{_H}/refine", RefineHandler),
    (rf"{_H}/import", ImportHandler),
    (rf"{_H}/export", ExportHandler),
    (rf"{_H}/refinements", RefinementsHandler),
    (rf"{_H}/refinements/{RID}", RefinementHandler),
    (rf"{_H}/refinements/{RID}/(?P<action>approve|reject|rollback)", ReviewHandler),
    (rf"{_H}/{KIND}/{EID}", EntryHandler),
    (rf"{_H}/{KIND}/{EID}/history", HistoryHandler),
    (rf"{_H}/{KIND}/{EID}/versions/(?P<version>[0-9]+)", VersionHandler),
    (rf"{_H}/{KIND}/{EID}/diff", DiffHandler),
    (rf"{_H}/{KIND}/{EID}/rollback", RollbackHandler),
]
