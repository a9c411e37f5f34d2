"""Refinement, and the one door every change a person did not make goes through.

Refinement: one model call turns trajectory evidence into typed, reviewable harness edits. The
model reads recent sessions (tasks, failures, errors, outcomes, verifications, usage), the
current harness and past refinements, and replies with JSON validated against `REPLY_SCHEMA`.
Where the backend can (llama.cpp, hosted models litellm says take a schema) decoding is
constrained to that schema, whose strings and arrays are all bounded so the reply ends. The call
is bounded in time (`Harness.refine_timeout`). An invalid, failed or late reply changes nothing
and is recorded as `invalid` or `failed`.

`propose` is the same door without the model: what learning distils from a verified session
and what an agent writes from its kernel become a proposal — a record like a refinement's, with
the same review, approval and rollback. Each edit passes the safety rules:

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

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import jsonschema

from ..protocol.errors import Conflict, NotFound, PrimeError
from ..util.files import new_id
from . import entries as E
from .files import SCOPES

if TYPE_CHECKING:
    from .harness import Harness

# Asks the model: (model, messages, response_format or None) -> (reply text, usage with cost).
# Given by the caller, which validates the model, streams the reply (progress) and accounts
# for the call as it sees fit; `response_format` is only passed where the backend constrains
# decoding to the schema (`constrained=True` in `refine`).
Complete = Callable[
    [str, list[dict[str, Any]], "dict[str, Any] | None"], Awaitable[tuple[str, dict[str, Any]]]
]


# What a refinement may edit (worked examples are learned, never refined).
EDITABLE = ("note", "memory", "skill", "subagent")


def _text(most: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": most}


# Every string and array is bounded: under a grammar (llama.cpp's json_schema) the bounds are
# what ends the reply — a small model otherwise rambles inside one string until max_tokens.
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["summary", "rationale", "expected_outcome", "edits"],
    "additionalProperties": False,
    "properties": {
        "summary": {"type": "string", "minLength": 1, "maxLength": 300},
        "rationale": _text(800),
        "expected_outcome": _text(300),
        "edits": {
            "type": "array",
            "maxItems": 8,
            "items": {
                "type": "object",
                "required": ["op", "kind", "id", "reason"],
                "additionalProperties": False,
                "properties": {
                    "op": {"enum": ["create", "update", "delete"]},
                    "kind": _text(20),
                    "id": _text(64),
                    "title": _text(200),
                    "content": _text(3000),
                    "metadata": {
                        "type": "object",
                        "maxProperties": 6,
                        "properties": {
                            "model": _text(100),
                            "max_turns": {"type": "integer", "minimum": 1, "maximum": 1000},
                            "entrypoint": _text(100),
                            "budget": {
                                "type": "object",
                                "maxProperties": 4,
                                "additionalProperties": {"type": "number"},
                            },
                        },
                        "additionalProperties": {
                            "type": ["string", "number", "boolean"],
                            "maxLength": 200,
                        },
                    },
                    "files": {
                        "type": "object",
                        "maxProperties": 4,
                        "additionalProperties": _text(6000),
                    },
                    "reason": _text(300),
                    "evidence": {
                        "type": "array",
                        "maxItems": 8,
                        "items": {
                            "type": "object",
                            "required": ["session_id"],
                            "additionalProperties": False,
                            "properties": {
                                "session_id": _text(64),
                                "turn": {"type": "integer", "minimum": 0, "maximum": 100000},
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
`entrypoint: module:function` in metadata) and sub-agents (instructions plus metadata
`model`, `max_turns`) that every agent session sees. Read the evidence (recent sessions, their
failures, and whether a person or a checker verified their answers), the current harness and
past refinements, and propose a few small, specific edits that would have prevented the failures
or made the work cheaper. Cite the sessions (and turns) each edit is based on.

{shape}

Rules: ids are lowercase names ([a-z0-9][a-z0-9._-]*). "update" changes only the fields you give.
Only kinds note, memory, skill and subagent exist; the base system prompt, the review policy,
budgets and limits cannot be edited (such edits are refused). Skills must not read secrets or the
environment. If nothing should change, reply with an empty "edits" list.
"""
# Where decoding is constrained to the schema the model needs no copy of it, and a small one
# reads a long prompt slowly: the shape in words is enough.
SHAPE_CONSTRAINED = (
    "Reply with one JSON object: summary, rationale, expected_outcome, and edits — a list of "
    "{op: create|update|delete, kind: note|memory|skill|subagent, id, title, content, reason, "
    "evidence: [{session_id, turn}]}."
)
SHAPE_FREE = "Reply with ONE JSON object and nothing else, matching this JSON Schema:\n{schema}"


# Characters a reply token stands for, at the least, when sizing a grammar to a token budget
# (JSON of English words runs about four; digits and punctuation fewer).
CHARS_PER_TOKEN = 3


def _longest(schema: dict[str, Any]) -> int:
    """The most characters an instance of a (bounded, closed) schema can take, compact JSON."""
    kinds = schema.get("type")
    if "enum" in schema:
        return max(len(json.dumps(v)) for v in schema["enum"])
    if kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
        return int(schema["maxLength"]) + 2
    if kinds in ("integer", "number"):
        return 16
    if kinds == "array":
        return 2 + int(schema["maxItems"]) * (_longest(schema["items"]) + 1)
    if kinds == "object":
        props = schema.get("properties") or {}
        return 2 + sum(len(k) + 4 + _longest(v) for k, v in props.items())
    return 8


def _scaled(schema: dict[str, Any], factor: float) -> dict[str, Any]:
    """A copy with every length and count cut by `factor` (at least 1 item, 8 characters) and
    free-form keys closed off (their number and names would be unbounded)."""
    out = dict(schema)
    if "maxLength" in out:
        out["maxLength"] = max(8, int(out["maxLength"] * factor))
    if "maxItems" in out:
        out["maxItems"] = max(1, int(out["maxItems"] * factor))
    if isinstance(out.get("items"), dict):
        out["items"] = _scaled(out["items"], factor)
    if "properties" in out:
        out["properties"] = {k: _scaled(v, factor) for k, v in out["properties"].items()}
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = False
        out.pop("maxProperties", None)
    return out


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """Only edits that can pass: the kinds refinement may edit, ids spelled as ids, and a title
    and content in each (a small model left the title out, and every skill it proposed was
    refused for want of one; the title comes first, so the content follows from it)."""
    item = schema["properties"]["edits"]["items"]
    item["required"] = ["op", "kind", "id", "title", "content", "reason"]
    edit = item["properties"]
    edit["kind"] = {"enum": list(EDITABLE)}
    edit["title"] = {**edit["title"], "minLength": 3}
    edit["content"] = {**edit["content"], "minLength": 8}
    most = edit["id"]["maxLength"]
    edit["id"] = {
        "type": "string",
        "maxLength": most,
        "pattern": f"^[a-z0-9][a-z0-9._-]{{0,{most - 1}}}$",
    }
    return schema


def constrained_schema(reply_tokens: int) -> dict[str, Any]:
    """REPLY_SCHEMA tightened for decoding under a grammar: the longest reply it allows fits in
    `reply_tokens`, so the grammar — not the token limit — ends it, and it always parses; and
    only kinds and ids an edit may have. Every reply it allows matches REPLY_SCHEMA too."""
    budget = max(1, reply_tokens) * CHARS_PER_TOKEN
    low, high = 0.0, 1.0
    if _longest(_scaled(REPLY_SCHEMA, high)) <= budget:
        return _closed(_scaled(REPLY_SCHEMA, high))
    for _ in range(30):
        mid = (low + high) / 2
        if _longest(_scaled(REPLY_SCHEMA, mid)) <= budget:
            low = mid
        else:
            high = mid
    return _closed(_scaled(REPLY_SCHEMA, low))


def response_format(reply_tokens: int) -> dict[str, Any]:
    """The OpenAI-style `response_format` that constrains a reply to the schema."""
    schema = constrained_schema(reply_tokens)
    return {
        "type": "json_schema",
        "json_schema": {"name": "harness_refinement", "schema": schema, "strict": False},
    }


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
        if e.kind != "example"
    ]
    # Worked examples are learned, not refined: their number is all the model needs.
    learned = sum(1 for e in entries if e.kind == "example")
    if learned:
        view.append({"kind": "example", "count": learned, "note": "learned; not editable here"})
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
    constrained: bool = False,
    fits: Callable[[list[dict[str, Any]]], bool] | None = None,
    instructions: str | None = None,
    author: str = "user",
    trigger: str = "manual",
) -> dict[str, Any]:
    """Run one refinement; returns its record (status invalid / failed / proposed / applied).

    `evidence` is what the recent sessions did (the daemon gathers it from its store);
    `max_turns` is the daemon's limit, which a role's max_turns may never exceed;
    `constrained`: the model's backend takes `response_format` and decodes to the schema;
    `fits(messages)`: whether a prompt leaves the reply room in the model's window (evidence
    is left out, the last sessions first, until it does). The model call is stopped after
    `Harness.refine_timeout` seconds (the refinement fails).
    """
    if instructions is not None and not isinstance(instructions, str):
        raise PrimeError("refinement instructions must be a string")
    past = [
        {k: r[k] for k in ("id", "created", "status", "summary", "expected_outcome")}
        | {"edits": [f"{e['op']} {e['kind']} {e['id']} ({e['status']})" for e in r["edits"]]}
        for r in harness.versions().refinements(limit=20)
        if r.get("model")  # refinements, not the proposals of learning and agents
    ][:5]
    view = _harness_view(harness)

    def prompt(shown: list[dict[str, Any]]) -> list[dict[str, Any]]:
        user = json.dumps(
            {
                "instructions": instructions or "Improve the harness from the evidence.",
                "evidence": shown,
                "harness": view,
                "past_refinements": past,
            },
            default=str,
        )
        shape = (
            SHAPE_CONSTRAINED if constrained else SHAPE_FREE.format(schema=json.dumps(REPLY_SCHEMA))
        )
        return [
            {"role": "system", "content": SYSTEM.format(shape=shape)},
            {"role": "user", "content": user},
        ]

    # The prompt must leave room for the reply in the model's window: the evidence of the
    # sessions furthest down the list goes first.
    shown = list(evidence)
    messages = prompt(shown)
    while fits is not None and shown and not fits(messages):
        shown.pop()
        messages = prompt(shown)
    record = _record(
        author=author,
        trigger=trigger,
        instructions=instructions,
        evidence=[e["session_id"] for e in shown],
        model=model,
    )
    limit = harness.refine_timeout or None
    try:
        text, usage = await asyncio.wait_for(
            complete(
                model,
                messages,
                response_format(harness.refine_reply_tokens) if constrained else None,
            ),
            limit,
        )
    except asyncio.TimeoutError:
        record["error"] = (
            f"the model {model!r} did not finish its reply within {limit:g} s "
            "(c.Harness.refine_timeout); nothing changed"
        )
        harness.versions().put_refinement(record)
        return record
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
    # A refinement writes the project's harness only (a global entry gets a project override).
    edits = [{**edit, "scope": "project"} for edit in reply["edits"]]
    return _propose(harness, record, edits, max_turns)


def _record(
    *,
    author: str,
    trigger: str,
    instructions: str | None = None,
    evidence: list[str] | None = None,
    model: str | None = None,
) -> dict[str, Any]:
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
    record = _record(author=author, trigger=trigger, evidence=evidence)
    record.update(summary=summary, rationale=rationale, expected_outcome="")
    return _propose(harness, record, edits, max_turns, learned=learned, strict=strict)


def _propose(
    harness: Harness,
    record: dict[str, Any],
    edits: list[dict[str, Any]],
    max_turns: int,
    *,
    learned: bool = False,
    strict: bool = False,
) -> dict[str, Any]:
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


# -- `/refine [instructions]` as a message to an agent ----------------------------------------
def refine_command(message: str) -> str | None:
    """The instructions of a `/refine [instructions]` message ('' for none), else None."""
    if not isinstance(message, str):
        return None
    text = message.strip()
    if text != "/refine" and not text.startswith("/refine "):
        return None
    return text[len("/refine") :].strip()
