"""Refinement: one model call turns trajectory evidence into typed, reviewable harness edits.

The model reads recent sessions (tasks, failures, errors, outcomes, verifications, usage), the
current harness and past refinements, and replies with JSON matching the reply's schema
(`harness.reply`), decoded under its grammar where the backend can. The call is bounded in time
(`c.Refiner.refine_timeout`, passed in as `timeout`). An invalid, failed or late reply changes
nothing and is recorded as `invalid` or `failed`; a valid one's edits go through
`harness.proposals`, the one door every change a person did not make goes through.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..protocol.errors import PrimeError
from ..util.format import clip
from .proposals import new_record, submit
from .reply import REPLY_SCHEMA, parse_reply, response_format, tokens_needed

if TYPE_CHECKING:
    from .manager import Harness

# Asks the model: (model, messages, response_format or None, max_tokens) -> (reply text, usage
# with cost). Given by the caller, which validates the model, streams the reply (progress) and
# accounts for the call as it sees fit; `response_format` is only passed where the backend
# constrains decoding to the schema (`constrained=True` in `refine`).
Complete = Callable[
    [str, list[dict[str, Any]], "dict[str, Any] | None", int],
    Awaitable[tuple[str, dict[str, Any]]],
]


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

# The brief refinement (a profile's `brief_refinement`: a small model on a CPU, which reads
# every prompt token before it writes): the same job in fewer words, and the evidence as a
# digest (`digest`) instead of each session's record.
SYSTEM_BRIEF = """\
You improve the harness every agent session sees: notes, memories, skills and sub-agents. Read
the evidence (recent sessions: task, outcome, last error) and propose the one small, specific
edit that would best have prevented the failures, citing the sessions. ids are lowercase names
([a-z0-9][a-z0-9._-]*). If nothing should change, reply with an empty "edits" list.
Reply with one JSON object: summary, rationale, expected_outcome, and edits — a list of
{op: create|update|delete, kind: note|memory|skill|subagent, id, title, content, reason,
evidence: [{session_id}]}.
"""


def digest(session: dict[str, Any]) -> str:
    """One session's evidence (as the Refiner gathers it) in the few lines an edit needs: its
    task, how it ended (a verdict first), its answer and its last error with the code that
    raised it. The rest — its usage, model, parent, earlier errors — is left out: an edit
    needs none of it, and a small model on a CPU reads every token."""
    verdict = session.get("verified")
    if verdict:
        outcome = "verified " + ("right" if verdict.get("correct") else "wrong")
        outcome += f" ({verdict['note']})" if verdict.get("note") else ""
    else:
        outcome = str(session.get("state", "")).lower()
    lines = [f"session {session['session_id']}: {outcome}", f"task: {clip(session['task'], 300)}"]
    if session.get("answer"):
        lines.append(f"answer: {clip(session['answer'], 100)}")
    last = (session.get("errors") or [None])[-1]
    if last is not None:
        lines.append(f"last error (turn {last['turn']}): {clip(last['error'], 200)}")
        if last.get("code"):
            lines.append(f"in: {clip(last['code'], 200)}")
    elif session.get("error"):
        lines.append(f"last error: {clip(session['error'], 200)}")
    return "\n".join(lines)


def _brief_prompt(
    view: list[dict[str, Any]], shown: list[dict[str, Any]], instructions: str
) -> str:
    """The brief refinement's user message: the harness first (what changes least), so that
    llama.cpp reuses the prompt it read for the previous refinement; the instructions last.
    Past refinements are left out: shown them, the default model took a past refinement's id
    for its edit's in 3 of 5 replies, and summed one up as its own proposal."""
    entries = []
    for e in view:
        if "broken" in e:
            entries.append(f"- {e['kind']} {e['id']}: broken ({e['broken']})")
        elif "count" not in e:  # the learned examples' count: not editable here
            content = clip(" ".join(e["content"].split()), 240)  # on one line
            entries.append(f"- {e['kind']} {e['id']} (v{e['version']}): {e['title']} — {content}")
    parts = [
        "Harness entries:\n" + ("\n".join(entries) or "none"),
        "Evidence:\n" + ("\n\n".join(digest(e) for e in shown) or "none"),
        f"Instructions: {instructions}",
    ]
    return "\n\n".join(parts)


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
            "content": clip(e.content, 1500),
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


async def refine(
    harness: Harness,
    complete: Complete,
    *,
    evidence: list[dict[str, Any]],
    model: str,
    max_turns: int,
    reply_tokens: int,
    timeout: float,
    constrained: bool = False,
    brief: bool = False,
    fits: Callable[[list[dict[str, Any]]], bool] | None = None,
    instructions: str | None = None,
    author: str = "user",
    trigger: str = "manual",
) -> dict[str, Any]:
    """Run one refinement; returns its record (status invalid / failed / proposed / applied).

    `evidence` is what the recent sessions did (the daemon gathers it from its store);
    `max_turns` is the daemon's limit, which a role's max_turns may never exceed;
    `reply_tokens`: the most the reply may have (sizes the grammar);
    `constrained`: the model's backend takes `response_format` and decodes to the schema;
    `brief`: a small model's refinement — a shorter prompt (each session as its `digest`) and
    a shorter reply (`reply.BRIEF_LENGTHS`);
    `fits(messages)`: whether a prompt leaves the reply room in the model's window (evidence
    is left out, the last sessions first, until it does). The model call is stopped after
    `timeout` seconds (0: never; the refinement fails).
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
    asked = instructions or "Improve the harness from the evidence."

    def prompt(shown: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if brief:
            system, user = SYSTEM_BRIEF, _brief_prompt(view, shown, asked)
        else:
            shape = (
                SHAPE_CONSTRAINED
                if constrained
                else SHAPE_FREE.format(schema=json.dumps(REPLY_SCHEMA))
            )
            system = SYSTEM.format(shape=shape)
            # What changes least first (a provider's prompt cache reuses a prefix).
            user = json.dumps(
                {
                    "harness": view,
                    "past_refinements": past,
                    "evidence": shown,
                    "instructions": asked,
                },
                default=str,
            )
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    # The prompt must leave room for the reply in the model's window: the evidence of the
    # sessions furthest down the list goes first.
    shown = list(evidence)
    messages = prompt(shown)
    while fits is not None and shown and not fits(messages):
        shown.pop()
        messages = prompt(shown)
    record = new_record(
        author=author,
        trigger=trigger,
        instructions=instructions,
        evidence=[e["session_id"] for e in shown],
        model=model,
    )
    limit = timeout or None
    shape = response_format(reply_tokens, brief=brief) if constrained else None
    # Under a grammar, as many tokens as its longest reply needs (a brief one needs fewer).
    tokens = (
        min(reply_tokens, tokens_needed(shape["json_schema"]["schema"])) if shape else reply_tokens
    )
    try:
        text, usage = await asyncio.wait_for(complete(model, messages, shape, tokens), limit)
    except asyncio.TimeoutError:
        record["error"] = (
            f"the model {model!r} did not finish its reply within {limit:g} s "
            "(c.Refiner.refine_timeout); nothing changed"
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
    return submit(harness, record, edits, max_turns)


# -- `/refine [instructions]` as a message to an agent ----------------------------------------
def refine_command(message: str) -> str | None:
    """The instructions of a `/refine [instructions]` message ('' for none), else None."""
    if not isinstance(message, str):
        return None
    text = message.strip()
    if text != "/refine" and not text.startswith("/refine "):
        return None
    return text[len("/refine") :].strip()
