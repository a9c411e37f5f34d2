"""The Continual Harness over REST: people under /api/prime/harness (jupyter_server auth),
kernels under /api/prime/kernel/harness (their session's token).

Both share the request parsing. A person's change is made at once, by "user" (or, from a
notebook's kernel, by the notebook's session). An agent's change from its kernel is a proposal
under the review policy (`harness.proposals.propose`), authored by the calling session (resolved
from its token, never from the body): under `review` it waits for a person (202, with the
proposal's id) and reaches no session before; under `auto` it is made at once (201 / 200, the
entry). Paths a request names (import, export) must lie under the server root, outside the
daemon's store.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ..export import target_parts, under_root
from ..harness import Harness, interop, proposals
from ..harness import entries as E
from ..protocol.errors import PrimeError
from ..protocol.harness import ALIASES
from ..protocol.states import SessionKind
from ..protocol.wire import API, KERNEL_API
from ..util.beneath import Beneath, copy_tree_into, explain
from .base import KernelHandler, PrimeHandler, UserHandler

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
        raise PrimeError("'kind' is required: note, memory, skill or subagent")
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


class _Harness(PrimeHandler):
    def path(self, value: Any, what: str) -> Path:
        """A path a request names, resolved under the server root (symlinks included)."""
        if not isinstance(value, str) or not value:
            raise PrimeError(f"'path' ({what}, relative to the server root) is required")
        return under_root(self.daemon.root_dir, value, store=self.daemon.store_dir, what=what)


class HarnessHandler(_Harness, UserHandler):
    pass


class IndexHandler(HarnessHandler):
    async def get(self) -> None:
        self.write_json(listing(self.harness, self.get_argument("kind", None)))

    async def post(self) -> None:
        self.write_json(create(self.harness, self.body(), "user"), status=201)


class EntryHandler(HarnessHandler):
    async def get(self, kind: str, entry_id: str) -> None:
        self.write_json(entry_json(self.harness, kind, entry_id))

    async def put(self, kind: str, entry_id: str) -> None:
        self.write_json(update(self.harness, kind, entry_id, self.body(), "user"))

    async def delete(self, kind: str, entry_id: str) -> None:
        base = base_version(self.get_argument("base_version", None))
        reason = self.get_argument("reason", "")
        self.write_json(
            self.harness.delete(kind, entry_id, base_version=base, author="user", reason=reason)
        )


class HistoryHandler(HarnessHandler):
    async def get(self, kind: str, entry_id: str) -> None:
        self.write_json({"versions": self.harness.history(kind, entry_id)})


class VersionHandler(HarnessHandler):
    async def get(self, kind: str, entry_id: str, version: str) -> None:
        self.write_json(self.harness.version(kind, entry_id, int(version)))


class DiffHandler(HarnessHandler):
    async def get(self, kind: str, entry_id: str) -> None:
        a = self.query_int("a", low=1)
        b = self.query_int("b", low=1)
        if a is None:
            raise PrimeError("'a' (a version number) is required")
        text = self.harness.diff(kind, entry_id, a, b)
        self.write_json({"diff": text})


class RollbackHandler(HarnessHandler):
    async def post(self, kind: str, entry_id: str) -> None:
        body = self.body()
        version = base_version(body.get("version"))
        if version is None:
            raise PrimeError("'version' (the version to restore) is required")
        self.write_json(
            self.harness.rollback(
                kind, entry_id, version, author="user", reason=body.get("reason") or ""
            )
        )


class RefineHandler(HarnessHandler):
    async def post(self) -> None:
        body = self.body("refine")
        record = await self.refiner.refine(
            instructions=body.get("instructions") or None,
            author="user",
            trigger="user request",
            session_id=body.get("session_id") or None,
        )
        self.write_json(record, status=201)


class RefinementsHandler(HarnessHandler):
    async def get(self) -> None:
        limit = self.query_int("limit", default=50, low=1) or 50
        self.write_json(
            {
                "refinements": self.harness.versions().refinements(limit),
                "running": self.refiner.progress(),
            }
        )


class RefinementHandler(HarnessHandler):
    async def get(self, refinement_id: str) -> None:
        self.write_json(proposals.get_refinement(self.harness, refinement_id))


def edit_indices(body: dict[str, Any]) -> list[int] | None:
    edits = body.get("edits")
    if edits is None:
        return None
    if not isinstance(edits, list) or not all(isinstance(i, int) for i in edits):
        raise PrimeError("'edits' must be a list of edit indices")
    return edits


class ReviewHandler(HarnessHandler):
    async def post(self, refinement_id: str, action: str) -> None:
        body = self.body()
        if action == "approve":
            out = proposals.apply_edits(self.harness, refinement_id, edit_indices(body))
        elif action == "reject":
            out = proposals.reject_edits(self.harness, refinement_id, edit_indices(body))
        else:
            out = proposals.rollback_refinement(self.harness, refinement_id)
        self.write_json(out)


class ImportHandler(HarnessHandler):
    async def post(self) -> None:
        body = self.body()
        replace = bool(body.get("replace"))
        if "state" in body:
            out = interop.import_prime_state(self.harness, body["state"], replace=replace)
        elif "path" in body:
            source = self.path(body["path"], "a harness_state.json or a folder of skills")
            out = interop.import_path(self.harness, str(source), replace=replace)
        else:
            raise PrimeError(
                "give 'state' (a harness_state.json document) or 'path' (under the server root)"
            )
        self.write_json(out)


class ExportHandler(HarnessHandler):
    async def post(self) -> None:
        """Written to a private temporary first, then copied in through folder descriptors
        (util/beneath.py): no link swapped in on the way can redirect it out of the root."""
        value = self.body().get("path")
        if not isinstance(value, str) or not value:
            raise PrimeError(
                "'path' (the folder to write, relative to the server root) is required"
            )
        root = Path(self.daemon.root_dir).resolve()
        parts = target_parts(root, value, store=self.daemon.store_dir, what="the folder to write")
        tmp_dir = self.store.tmp_dir
        tmp_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=tmp_dir) as tmp:
            out = interop.export(self.harness, tmp)
            try:
                with Beneath(root) as below:
                    copy_tree_into(below, parts, Path(tmp))
            except OSError as e:
                raise explain(e, value[:200]) from None
        out["folder"] = str(root.joinpath(*parts))
        self.write_json(out)


# -- kernels ----------------------------------------------------------------------------------
def kernel_write(
    handler: KernelHandler, op: str, kind: str, entry_id: Any, body: dict[str, Any]
) -> tuple[dict[str, Any], int]:
    """A change from a kernel: (what to reply, its status). A notebook's kernel is a person's
    REPL, whose change is made at once; an agent's goes through the review policy."""
    caller = handler.caller
    harness = handler.harness
    if caller.record.kind == SessionKind.NOTEBOOK:
        version = base_version(body.pop("base_version", None))
        if op == "create":
            entry = harness.create(kind, entry_id, author=caller.id, **body)
            return entry_json(harness, entry.kind, entry.id), 201
        if op == "update":
            entry = harness.update(kind, entry_id, base_version=version, author=caller.id, **body)
            return entry_json(harness, entry.kind, entry.id), 200
        reason = body.get("reason") or ""
        out = harness.delete(kind, entry_id, base_version=version, author=caller.id, reason=reason)
        return out, 200
    kind = E.kind_of(kind)
    edit: dict[str, Any] = {"op": op, "kind": kind, "id": entry_id, **body}
    if op != "create":
        edit["base_version"] = base_version(body.get("base_version"))
        if edit["base_version"] is None:
            del edit["base_version"]
    edit["reason"] = body.get("reason") or f"written by session {caller.id}"
    edit["evidence"] = body.get("evidence") or [{"session_id": caller.id}]
    record = proposals.propose(
        harness,
        [edit],
        author=caller.id,
        trigger=f"harness.{kind} {op} from session {caller.id}",
        summary=f"{op} {kind} {entry_id!r} (from session {caller.id})",
        max_turns=handler.host.max_turns,
        evidence=[caller.id],
        strict=True,
    )
    done = record["edits"][0]
    if done["status"] == "applied":
        if op == "delete":
            return {"kind": kind, "id": entry_id, "deleted": True}, 200
        return entry_json(harness, kind, entry_id), 201 if op == "create" else 200
    return {
        "proposed": True,
        "refinement_id": record["id"],
        "op": op,
        "kind": kind,
        "id": entry_id,
        "status": done["status"],
        "note": done.get("note") or "",
        "message": f"proposed: {op} {kind} {entry_id!r} waits for a person's review "
        f"(review policy; `prime-agent refinements approve {record['id']}`)",
    }, 202


class KernelIndexHandler(_Harness, KernelHandler):
    async def get(self) -> None:
        self.write_json(listing(self.harness, self.get_argument("kind", None)))


class KernelKindHandler(_Harness, KernelHandler):
    async def post(self, kind: str) -> None:
        body = self.body()
        args = write_args(body, extra={"id"})
        self.write_json(*kernel_write(self, "create", kind, body.get("id"), args))


class KernelEntryHandler(_Harness, KernelHandler):
    async def get(self, kind: str, entry_id: str) -> None:
        self.write_json(entry_json(self.harness, kind, entry_id))

    async def put(self, kind: str, entry_id: str) -> None:
        body = self.body()
        args = write_args(body, extra={"base_version"})
        args["base_version"] = body.get("base_version")
        self.harness.find(kind, entry_id)  # a clear NotFound now, not a failed proposal
        self.write_json(*kernel_write(self, "update", kind, entry_id, args))

    async def delete(self, kind: str, entry_id: str) -> None:
        self.harness.find(kind, entry_id)  # a clear NotFound now, not a failed proposal
        body = {
            "base_version": self.get_argument("base_version", None),
            "reason": self.get_argument("reason", ""),
        }
        self.write_json(*kernel_write(self, "delete", kind, entry_id, body))


class KernelHistoryHandler(_Harness, KernelHandler):
    async def get(self, kind: str, entry_id: str) -> None:
        self.write_json({"versions": self.harness.history(kind, entry_id)})


class KernelRefineHandler(_Harness, KernelHandler):
    async def post(self) -> None:
        caller = self.caller
        body = self.body("refine")
        # A session refines from its own evidence (itself or its descendants), never from
        # sessions it cannot reach, and only while its budget allows another model call.
        session_id = self.access.own_tree(caller, body.get("session_id"))
        self.host.check_limits(caller)
        record = await self.refiner.refine(
            instructions=body.get("instructions") or None,
            author=caller.id,
            trigger=f"refine() in session {caller.id}",
            session_id=session_id,
            caller=caller,
        )
        self.write_json(record, status=201)


KIND = rf"(?P<kind>{'|'.join(sorted(ALIASES))})"
EID = r"(?P<entry_id>[^/]+)"
RID = r"(?P<refinement_id>[A-Za-z0-9_-]+)"
_H = f"{API}/harness"
_KH = f"{KERNEL_API}/harness"

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
    (_KH, KernelIndexHandler),
    (rf"{_KH}/refine", KernelRefineHandler),
    (rf"{_KH}/{KIND}", KernelKindHandler),
    (rf"{_KH}/{KIND}/{EID}", KernelEntryHandler),
    (rf"{_KH}/{KIND}/{EID}/history", KernelHistoryHandler),
]
