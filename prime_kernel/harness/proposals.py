"""The one door every change a person did not make goes through: proposals, their safety
rules, review, apply and rollback.

A refinement's edits (`harness.refine`), what learning distils from a verified session and what
an agent writes from its kernel all become a proposal (`propose`; a refinement `submit`s the
record it started) — a refinement record, with the same review, approval and rollback. Each
edit passes the safety rules:

- only notes, memories, skills and sub-agents exist: an edit of any other kind (the base system
  prompt, the review policy, budgets, limits) is refused; worked examples come only from
  verified sessions (learning) or a person;
- an entry that would not validate (a skill without a description, a broken example) is
  refused when proposed, not when approved;
- a sub-agent's budget cannot be set or changed, and its `max_turns` cannot go above its current
  value (or `Host.max_turns` for a new sub-agent): limits are raised by people, not refinement;
- a note, memory or skill that claims to override the system prompt, the review policy,
  budgets, limits or safety is refused (it could not do so, and saying so misleads agents);
- a skill whose instructions or files read the environment or name secrets (`os.environ`,
  `getenv`, `*_API_KEY`, `*_TOKEN`, ...) is flagged and waits for a person even under `auto`.

Under `review` every valid edit waits; under `auto` unflagged edits apply at once. A
refinement's edits are written with author `refinement <id>`, a proposal's with its proposer's
name and `(proposal <id>)`, so either can be rolled back at once. Records are never deleted:
the table is the audit history.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from ..protocol.errors import Conflict, NotFound, PrimeError
from ..util.files import new_id
from . import entries as E
from .files import SCOPES

if TYPE_CHECKING:
    from .manager import Harness

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


def new_record(
    *,
    author: str,
    trigger: str,
    instructions: str | None = None,
    evidence: list[str] | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """A refinement record with no edits yet, `failed` until it gets further."""
    return {
        "id": new_id("r"),
        "created": time.time(),
        "author": author,
        "trigger": trigger,
        "instructions": instructions,
        "status": "failed",
        "evidence": list(evidence or []),
        "edits": [],
        "model": model,
        "usage": {},
    }


def propose(
    harness: Harness,
    edits: list[dict[str, Any]],
    *,
    author: str,
    trigger: str,
    summary: str,
    max_turns: int,
    rationale: str = "",
    evidence: list[str] | None = None,
    learned: bool = False,
    strict: bool = False,
) -> dict[str, Any]:
    """The one door for changes a person did not make: learning, an agent's writes, refinement.

    The edits are checked by the same rules as a refinement's, recorded as one proposal (a
    refinement record: listed, reviewed and rolled back like one), and applied at once under
    the `auto` review policy (unless flagged). `learned`: the edits come from verified
    sessions, the only source allowed to write worked examples. `strict`: a refused edit, or
    one that fails to apply, raises its error (for a caller making a single change).
    """
    record = new_record(author=author, trigger=trigger, evidence=evidence)
    record.update(summary=summary, rationale=rationale, expected_outcome="")
    return submit(harness, record, edits, max_turns, learned=learned, strict=strict)


def submit(
    harness: Harness,
    record: dict[str, Any],
    edits: list[dict[str, Any]],
    max_turns: int,
    *,
    learned: bool = False,
    strict: bool = False,
) -> dict[str, Any]:
    """Check `edits` by the safety rules, keep them on `record` (from `new_record`) and store
    it; under the `auto` review policy the unflagged ones are applied at once."""
    record["edits"] = [
        _checked(harness, max_turns, i, edit, learned=learned) for i, edit in enumerate(edits)
    ]
    harness.versions().put_refinement(record)
    refused = [e for e in record["edits"] if e["status"] == "refused"]
    if strict and refused:
        _finish(harness, record)
        raise E.InvalidEntry(refused[0]["note"], refinement_id=record["id"])
    auto = [e["index"] for e in record["edits"] if e["status"] == "pending" and not e["flags"]]
    if harness.review_policy == "auto" and auto:
        return apply_edits(
            harness, record["id"], auto, approver="auto (review policy)", strict=strict
        )
    return _finish(harness, record)


# -- safety -----------------------------------------------------------------------------------
def _checked(
    harness: Harness, max_turns: int, index: int, raw: dict[str, Any], *, learned: bool = False
) -> dict[str, Any]:
    edit: dict[str, Any] = {**raw, "index": index, "status": "pending", "flags": [], "note": ""}
    edit.setdefault("evidence", [])
    try:
        edit["kind"] = E.kind_of(raw["kind"])
    except E.InvalidEntry:
        return _refused(
            edit,
            f"kind {raw['kind']!r} is not editable: refinement edits only notes, memories, "
            "skills and sub-agents (never the base system prompt, the review policy, budgets or "
            "limits)",
        )
    if edit["kind"] == "example" and not learned:
        return _refused(
            edit,
            "worked examples are learned only from verified sessions (a person, a checker or "
            "a gate said the answer was right), or written by a person",
        )
    try:
        E.check_id(raw["id"])
        for name in raw.get("files") or {}:
            E.check_file_name(name)
    except E.InvalidEntry as e:
        return _refused(edit, e.message)
    # A new entry goes to the project unless the proposer says otherwise; a change goes to
    # where the entry is (the project's, over a global one of the same id).
    scope = edit.get("scope") or ("project" if raw["op"] == "create" else None)
    try:
        _, files, version = harness.find(edit["kind"], raw["id"], scope)
        current: E.Entry | None = E.parse(edit["kind"], raw["id"], files)
        edit.setdefault("base_version", version)  # the proposer's, if it gave one
    except NotFound:
        current = None
    except E.InvalidEntry:
        current = None
    if raw["op"] == "delete":
        return edit
    try:
        E.validate(_merged(edit, current), max_chars=harness.max_entry_chars)
    except E.InvalidEntry as e:
        return _refused(edit, e.message)
    text = " ".join(
        [raw.get("title") or "", raw.get("content") or "", *(raw.get("files") or {}).values()]
    )
    if edit["kind"] in ("note", "memory", "skill") and _POLICY_CLAIM.search(text):
        return _refused(
            edit,
            "the text claims to change the system prompt, review policy, budgets, limits or "
            f"safety ({_POLICY_CLAIM.search(text).group(0)!r}); refinement cannot change those",  # type: ignore[union-attr]
        )
    if edit["kind"] == "subagent":
        old_meta = current.metadata if current else {}
        new_meta = raw.get("metadata", old_meta) or {}
        if new_meta.get("budget") != old_meta.get("budget"):
            return _refused(edit, "refinement cannot set or change a sub-agent's budget")
        old_turns = old_meta.get("max_turns") or max_turns
        new_turns = new_meta.get("max_turns") or max_turns
        if not isinstance(new_turns, int) or new_turns > min(old_turns, max_turns):
            return _refused(
                edit,
                f"refinement cannot raise a sub-agent's max_turns (to {new_turns}; the limit here "
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


def _merged(edit: dict[str, Any], current: E.Entry | None) -> E.Entry:
    """The entry an edit would write (an update keeps the fields it does not give)."""
    old = current or E.Entry(edit["kind"], edit["id"], "", "")

    def pick(key: str, was: Any) -> Any:
        value = edit.get(key)
        return was if value is None else value

    return E.Entry(
        edit["kind"],
        edit["id"],
        pick("title", old.title),
        pick("content", old.content),
        dict(pick("metadata", old.metadata)),
        dict(pick("files", old.files)),
    )


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
    strict: bool = False,
) -> dict[str, Any]:
    """Approve and apply pending edits (all, or those indices); `strict` raises the error of
    the first that fails, once the record says so."""
    record = get_refinement(harness, refinement_id)
    failure: PrimeError | None = None
    for edit in _pending(record, indices):
        try:
            _apply(harness, record, edit)
            edit["status"] = "applied"
            edit["approved_by"] = approver
        except PrimeError as e:
            edit["status"] = "failed"
            edit["note"] = e.message
            failure = failure or e
    record = _finish(harness, record)
    if strict and failure is not None:
        raise failure
    return record


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
    # A model's refinement is its own author; other proposals are their proposer's.
    by = f"refinement {rid}" if record.get("model") else f"{record['author']} (proposal {rid})"
    common: dict[str, Any] = {
        "author": by,
        "reason": edit.get("reason") or record.get("summary") or "",
        "evidence": edit.get("evidence") or [],
        "refinement_id": rid,
    }
    kind, entry_id = edit["kind"], edit["id"]
    scope = edit.get("scope")
    if edit["op"] == "create":
        harness.create(
            kind,
            entry_id,
            title=edit.get("title") or "",
            content=edit.get("content") or "",
            metadata=edit.get("metadata"),
            files=edit.get("files"),
            scope=scope or "project",
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
            scope=scope,
            **common,
        )
    else:
        harness.delete(kind, entry_id, base_version=edit.get("base_version"), scope=scope, **common)


def rollback_refinement(
    harness: Harness, refinement_id: str, *, who: str = "user"
) -> dict[str, Any]:
    """Restore every entry the refinement changed to what it was just before."""
    record = get_refinement(harness, refinement_id)
    if record["status"] == "rolled_back":
        raise Conflict(f"refinement {refinement_id} is already rolled back")
    first: dict[tuple[str, str, str], dict[str, Any]] = {}
    for scope in SCOPES:
        if scope != "project" and not harness.files.root(scope).is_dir():
            continue
        for row in harness.versions(scope).by_refinement(record["id"]):
            first.setdefault((scope, row["kind"], row["entry_id"]), row)
    if not first:
        raise PrimeError(f"refinement {refinement_id} applied no edits; nothing to roll back")
    restored = []
    for (scope, kind, entry_id), row in first.items():
        harness.change(
            scope,
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
