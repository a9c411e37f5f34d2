"""Refinement: one model call turns trajectory evidence into typed, reviewable harness edits.

The model reads recent sessions (tasks, failures, errors, outcomes, usage), the current harness
and past refinements, and replies with JSON validated against `REPLY_SCHEMA`. An invalid reply
changes nothing and is recorded as `invalid`. Each edit then passes the safety rules:

- only notes, memories, skills and specs exist: an edit of any other kind (the base system
  prompt, the review policy, budgets, limits) is refused;
- a spec's budget cannot be set or changed, and its `max_turns` cannot go above its current
  value (or `Daemon.max_turns` for a new spec): limits are raised by people, not refinement;
- a note, memory or skill that claims to override the system prompt, the review policy,
  budgets, limits or safety is refused (it could not do so, and saying so misleads agents);
- a skill whose instructions or files read the environment or name secrets (`os.environ`,
  `getenv`, `*_API_KEY`, `*_TOKEN`, ...) is flagged and waits for a person even under `auto`.

Under `review` every valid edit waits; under `auto` unflagged edits apply at once. Edits are
written to the project scope with author `refinement <id>`, so a whole refinement can be rolled
back at once. Refinements are never deleted: the table is the audit history.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import jsonschema

from ..protocol.errors import Conflict, NotFound, PrimeError
from ..util.files import new_id
from . import entries as E

if TYPE_CHECKING:
    from .harness import Harness

# Asks the model: (model, messages) -> (reply text, usage with cost). Given by the caller, which
# validates the model, and accounts for the call, as it sees fit.
Complete = Callable[[str, list[dict[str, Any]]], Awaitable[tuple[str, dict[str, Any]]]]

REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["summary", "rationale", "expected_outcome", "edits"],
    "additionalProperties": False,
    "properties": {
        "summary": {"type": "string", "minLength": 1},
        "rationale": {"type": "string"},
        "expected_outcome": {"type": "string"},
        "edits": {
            "type": "array",
            "maxItems": 20,
            "items": {
                "type": "object",
                "required": ["op", "kind", "id", "reason"],
                "additionalProperties": False,
                "properties": {
                    "op": {"enum": ["create", "update", "delete"]},
                    "kind": {"type": "string"},
                    "id": {"type": "string"},
                    "title": {"type": "string"},
                    "content": {"type": "string"},
                    "metadata": {"type": "object"},
                    "files": {"type": "object", "additionalProperties": {"type": "string"}},
                    "reason": {"type": "string"},
                    "evidence": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["session_id"],
                            "properties": {
                                "session_id": {"type": "string"},
                                "turn": {"type": "integer"},
                            },
                        },
                    },
                },
            },
        },
    },
}

SYSTEM = """\
You improve the harness of a recursive agent system: the persistent prompt notes, memories,
skills (Agent Skills: name, one-line description, instructions, optional Python files with an
`entrypoint: module:function` in metadata) and sub-agent specs (instructions plus metadata
`model`, `max_turns`) that every agent session sees. Read the evidence (recent sessions and their
failures), the current harness and past refinements, and propose a few small, specific edits
that would have prevented the failures or made the work cheaper. Cite the sessions (and turns)
each edit is based on.

Reply with ONE JSON object and nothing else, matching this JSON Schema:
{schema}

Rules: ids are lowercase names ([a-z0-9][a-z0-9._-]*). "update" changes only the fields you give.
Only kinds note, memory, skill and spec exist; the base system prompt, the review policy, budgets
and limits cannot be edited (such edits are refused). Skills must not read secrets or the
environment. If nothing should change, reply with an empty "edits" list.
"""

_POLICY_CLAIM = re.compile(
    r"\b(ignore|override|overrides|bypass|disable|change|raise|increase|lift|remove|skip|"
    r"turn off)\b[^.\n]{0,60}\b(system prompt|review policy|review|budgets?|limits?|"
    r"max[_ ]?turns|max[_ ]?depth|safety)\b",
    re.IGNORECASE,
)
_SECRETS = re.compile(
    r"os\.environ|getenv|environ\s*\[|environ\.get|PRIME_TOKEN|\.netrc|\.aws/credentials|"
    r"\b[A-Z0-9_]*(API_KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)[A-Z0-9_]*\b"
)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + "…"


def _harness_view(harness: Harness) -> list[dict[str, Any]]:
    entries, errors = harness.list()
    view = [
        {
            "kind": e.kind,
            "id": e.id,
            "title": e.title,
            "version": e.version,
            "scope": e.scope,
            "metadata": e.metadata,
            "content": _clip(e.content, 1500),
            "files": sorted(e.files),
        }
        for e in entries
    ]
    view += [{"kind": x["kind"], "id": x["id"], "broken": x["message"]} for x in errors]
    return view


# -- the model call ---------------------------------------------------------------------------
def parse_reply(text: str) -> dict[str, Any]:
    """The JSON object in a model reply (a ```json fence is allowed); PrimeError if invalid."""
    body = text.strip()
    fence = re.search(r"```(?:json)?\s*\n(.*?)```", body, re.DOTALL)
    if fence:
        body = fence.group(1).strip()
    try:
        data = json.loads(body)
    except ValueError as e:
        raise PrimeError(f"the refinement reply is not JSON: {e}") from None
    try:
        jsonschema.validate(data, REPLY_SCHEMA)
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise PrimeError(
            f"the refinement reply does not match the schema at {where}: {e.message}"
        ) from None
    return data


async def refine(
    harness: Harness,
    complete: Complete,
    *,
    evidence: list[dict[str, Any]],
    model: str,
    max_turns: int,
    instructions: str | None = None,
    author: str = "user",
    trigger: str = "manual",
) -> dict[str, Any]:
    """Run one refinement; returns its record (status invalid / failed / proposed / applied).

    `evidence` is what the recent sessions did (the daemon gathers it from its store);
    `max_turns` is the daemon's limit, which a role's max_turns may never exceed.
    """
    if instructions is not None and not isinstance(instructions, str):
        raise PrimeError("refinement instructions must be a string")
    past = [
        {k: r[k] for k in ("id", "created", "status", "summary", "expected_outcome")}
        | {"edits": [f"{e['op']} {e['kind']} {e['id']} ({e['status']})" for e in r["edits"]]}
        for r in harness.versions().refinements(limit=5)
    ]
    user = json.dumps(
        {
            "instructions": instructions or "Improve the harness from the evidence.",
            "evidence": evidence,
            "harness": _harness_view(harness),
            "past_refinements": past,
        },
        indent=1,
        default=str,
    )
    record: dict[str, Any] = {
        "id": new_id("r"),
        "created": time.time(),
        "author": author,
        "trigger": trigger,
        "instructions": instructions,
        "status": "failed",
        "evidence": [e["session_id"] for e in evidence],
        "edits": [],
        "model": model,
        "usage": {},
    }
    messages = [
        {"role": "system", "content": SYSTEM.format(schema=json.dumps(REPLY_SCHEMA))},
        {"role": "user", "content": user},
    ]
    try:
        text, usage = await complete(model, messages)
    except PrimeError as e:
        record["error"] = e.message
        harness.versions().put_refinement(record)
        return record
    record["reply"] = text
    record["usage"] = usage
    try:
        reply = parse_reply(text)
    except PrimeError as e:
        record["status"] = "invalid"
        record["error"] = e.message
        harness.versions().put_refinement(record)
        return record
    record.update(
        summary=reply["summary"],
        rationale=reply["rationale"],
        expected_outcome=reply["expected_outcome"],
    )
    record["edits"] = [
        _checked(harness, max_turns, i, edit) for i, edit in enumerate(reply["edits"])
    ]
    harness.versions().put_refinement(record)
    auto = [e["index"] for e in record["edits"] if e["status"] == "pending" and not e["flags"]]
    if harness.review_policy == "auto" and auto:
        return apply_edits(harness, record["id"], auto, approver="auto (review policy)")
    return _finish(harness, record)


# -- safety -----------------------------------------------------------------------------------
def _checked(harness: Harness, max_turns: int, index: int, raw: dict[str, Any]) -> dict[str, Any]:
    edit: dict[str, Any] = {**raw, "index": index, "status": "pending", "flags": [], "note": ""}
    edit.setdefault("evidence", [])
    try:
        edit["kind"] = E.kind_of(raw["kind"])
    except E.InvalidEntry:
        return _refused(
            edit,
            f"kind {raw['kind']!r} is not editable: refinement edits only notes, memories, "
            "skills and specs (never the base system prompt, the review policy, budgets or limits)",
        )
    try:
        E.check_id(raw["id"])
        for name in raw.get("files") or {}:
            E.check_file_name(name)
    except E.InvalidEntry as e:
        return _refused(edit, e.message)
    try:
        _, files, version = harness.find(edit["kind"], raw["id"], "project")
        current: E.Entry | None = E.parse(edit["kind"], raw["id"], files)
        edit["base_version"] = version
    except NotFound:
        current = None
    except E.InvalidEntry:
        current = None
    if raw["op"] == "delete":
        return edit
    text = " ".join(
        [raw.get("title") or "", raw.get("content") or "", *(raw.get("files") or {}).values()]
    )
    if edit["kind"] in ("note", "memory", "skill") and _POLICY_CLAIM.search(text):
        return _refused(
            edit,
            "the text claims to change the system prompt, review policy, budgets, limits or "
            f"safety ({_POLICY_CLAIM.search(text).group(0)!r}); refinement cannot change those",  # type: ignore[union-attr]
        )
    if edit["kind"] == "spec":
        old_meta = current.metadata if current else {}
        new_meta = raw.get("metadata", old_meta) or {}
        if new_meta.get("budget") != old_meta.get("budget"):
            return _refused(edit, "refinement cannot set or change a spec's budget")
        old_turns = old_meta.get("max_turns") or max_turns
        new_turns = new_meta.get("max_turns") or max_turns
        if not isinstance(new_turns, int) or new_turns > min(old_turns, max_turns):
            return _refused(
                edit,
                f"refinement cannot raise a spec's max_turns (to {new_turns}; the limit here "
                f"is {min(old_turns, max_turns)})",
            )
    if edit["kind"] == "skill":
        found = _SECRETS.search(text)
        if found:
            edit["flags"].append("reads-secrets")
            edit["note"] = (
                f"flagged: the skill reads the environment or names a secret ({found.group(0)!r}); "
                "it waits for a person even under the auto review policy"
            )
    return edit


def _refused(edit: dict[str, Any], why: str) -> dict[str, Any]:
    edit["status"] = "refused"
    edit["note"] = why
    return edit


# -- review, apply, roll back -----------------------------------------------------------------
def _finish(harness: Harness, record: dict[str, Any]) -> dict[str, Any]:
    statuses = {e["status"] for e in record["edits"]}
    if record.get("status") == "rolled_back":
        pass
    elif "pending" in statuses:
        record["status"] = "proposed"
    elif "applied" in statuses:
        record["status"] = "applied"
    elif record["edits"]:
        record["status"] = "rejected"
    else:
        record["status"] = "empty"
    harness.versions().put_refinement(record)
    return record


def get_refinement(harness: Harness, refinement_id: str) -> dict[str, Any]:
    record = harness.versions().refinement(str(refinement_id))
    if record is None:
        raise NotFound(f"no refinement {refinement_id}")
    return record


def _pending(record: dict[str, Any], indices: list[int] | None) -> list[dict[str, Any]]:
    edits = record["edits"]
    if indices is None:
        return [e for e in edits if e["status"] == "pending"]
    out = []
    for i in indices:
        if not isinstance(i, int) or not 0 <= i < len(edits):
            raise PrimeError(f"refinement {record['id']} has no edit {i} (it has {len(edits)})")
        if edits[i]["status"] != "pending":
            raise Conflict(
                f"edit {i} of refinement {record['id']} is {edits[i]['status']}, not pending"
            )
        out.append(edits[i])
    return out


def apply_edits(
    harness: Harness,
    refinement_id: str,
    indices: list[int] | None = None,
    *,
    approver: str = "user",
) -> dict[str, Any]:
    """Approve and apply pending edits (all, or those indices)."""
    record = get_refinement(harness, refinement_id)
    for edit in _pending(record, indices):
        try:
            _apply(harness, record, edit)
            edit["status"] = "applied"
            edit["approved_by"] = approver
        except PrimeError as e:
            edit["status"] = "failed"
            edit["note"] = e.message
    return _finish(harness, record)


def reject_edits(
    harness: Harness, refinement_id: str, indices: list[int] | None = None, *, who: str = "user"
) -> dict[str, Any]:
    record = get_refinement(harness, refinement_id)
    for edit in _pending(record, indices):
        edit["status"] = "rejected"
        edit["rejected_by"] = who
    return _finish(harness, record)


def _apply(harness: Harness, record: dict[str, Any], edit: dict[str, Any]) -> None:
    rid = record["id"]
    common: dict[str, Any] = {
        "author": f"refinement {rid}",
        "reason": edit.get("reason") or record.get("summary") or "",
        "evidence": edit.get("evidence") or [],
        "refinement_id": rid,
    }
    kind, entry_id = edit["kind"], edit["id"]
    if edit["op"] == "create":
        harness.create(
            kind,
            entry_id,
            title=edit.get("title") or "",
            content=edit.get("content") or "",
            metadata=edit.get("metadata"),
            files=edit.get("files"),
            scope="project",
            **common,
        )
    elif edit["op"] == "update":
        harness.update(
            kind,
            entry_id,
            title=edit.get("title"),
            content=edit.get("content"),
            metadata=edit.get("metadata"),
            files=edit.get("files"),
            base_version=edit.get("base_version"),
            scope="project",
            **common,
        )
    else:
        harness.delete(
            kind, entry_id, base_version=edit.get("base_version"), scope="project", **common
        )


def rollback_refinement(
    harness: Harness, refinement_id: str, *, who: str = "user"
) -> dict[str, Any]:
    """Restore every entry the refinement changed to what it was just before."""
    record = get_refinement(harness, refinement_id)
    if record["status"] == "rolled_back":
        raise Conflict(f"refinement {refinement_id} is already rolled back")
    rows = harness.versions("project").by_refinement(record["id"])
    if not rows:
        raise PrimeError(f"refinement {refinement_id} applied no edits; nothing to roll back")
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        first.setdefault((row["kind"], row["entry_id"]), row)
    restored = []
    for (kind, entry_id), row in first.items():
        harness._change(
            "project",
            kind,
            entry_id,
            row["before"],
            base_version=None,
            author=who,
            reason=f"rollback of refinement {refinement_id}",
            op="rollback",
        )
        restored.append({"kind": kind, "id": entry_id, "to_version": row["version"] - 1})
    record["status"] = "rolled_back"
    record["rolled_back"] = {"by": who, "ts": time.time(), "entries": restored}
    harness.versions().put_refinement(record)
    return record


# -- `/refine [instructions]` as a message to an agent ----------------------------------------
def refine_command(message: str) -> str | None:
    """The instructions of a `/refine [instructions]` message ('' for none), else None."""
    if not isinstance(message, str):
        return None
    text = message.strip()
    if text != "/refine" and not text.startswith("/refine "):
        return None
    return text[len("/refine") :].strip()
