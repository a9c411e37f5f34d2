"""No secret is kept: a provider key and the server's token, planted through every input a
person or an agent has — prompts, names, contexts, answers, messages, goals, schedules, harness
entries, printed output — are found in none of the store's files, no REST answer, and no model
request (review red-team-a982054, finding 4: they were raw in sessions, mailbox, conversation,
blobs and harness files, and went into a later session's system prompt)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import get_session, post_message, start_session, wait_for


@pytest.fixture
def provider_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A provider key in the server's environment (set before the server starts)."""
    key = "sk-planted-key-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return key


def recording(requests: list[str], turns: list[dict[str, Any]]) -> list[Any]:
    """Scripted turns that record every model request they answer (its messages, as JSON)."""

    def turn(spec: dict[str, Any]) -> Any:
        def play(messages: list[dict[str, Any]]) -> dict[str, Any]:
            requests.append(json.dumps(messages))
            return dict(spec)

        return play

    return [turn(t) for t in turns]


async def test_a_planted_secret_is_kept_nowhere(
    provider_key, daemon, jp_fetch, jp_serverapp, script
):
    token = jp_serverapp.identity_provider.token
    secrets = [provider_key, token]
    planted = f"{provider_key} and {token}"
    requests: list[str] = []

    # An agent plants it through every call a kernel makes.
    child = script(recording(requests, [{"code": f"send('parent', {planted!r})\nanswer(S)"}]))
    agent_code = (
        f"S = {planted!r}\n"
        f"h = rlm('child ' + S, context={{'secret': S, 'list': [S, 1]}}, name='c ' + S[:20],"
        f" model={child!r})\n"
        "h.result(timeout=60)\n"
        "goal.set('goal ' + S)\n"
        "harness.memory.create('planted', 'memory ' + S)\n"
        "print('printed ' + S)\n"
        "answer({'answer': S})\n"
    )
    agent = script(recording(requests, [{"code": agent_code}]))
    sid = await start_session(
        jp_fetch, f"root {planted}", name=f"n {provider_key}", context={"s": planted}, model=agent
    )
    assert (await daemon.runs.wait(sid, 120))["state"] == "DONE"
    # The agent's memory is a proposal (the review policy): a person approves it, scrubbed.
    (proposal,) = [r for r in daemon.harness.versions().refinements() if "planted" in r["summary"]]
    await jp_fetch(
        "api",
        "prime",
        "harness",
        "refinements",
        proposal["id"],
        "approve",
        method="POST",
        body="{}",
    )

    # A person plants it too: a message, a goal and a schedule for a waiting session, a note.
    waiting_model = script(recording(requests, [{"code": "answer(1)"}, {"text": "noted"}]))
    waiting = await start_session(jp_fetch, "wait", persistent=True, model=waiting_model)
    await wait_for(lambda: daemon.listing.session_json(waiting)["state"] == "IDLE", 60)
    await post_message(jp_fetch, waiting, f"message {planted}")
    await wait_for(lambda: len(requests) >= 4, 60)
    goal = {"text": f"goal {planted}"}
    await jp_fetch("api", "prime", "sessions", waiting, "goal", method="PUT", body=json.dumps(goal))
    tick = {"every": 3600, "message": f"tick {planted}", "session_id": waiting}
    await jp_fetch("api", "prime", "schedules", method="POST", body=json.dumps(tick))
    note = {"kind": "note", "id": "user-note", "content": f"note {planted}"}
    await jp_fetch("api", "prime", "harness", method="POST", body=json.dumps(note))
    # A later, unrelated session: the memory and the note reach its prompt, scrubbed.
    later = await start_session(
        jp_fetch, "later", model=script(recording(requests, [{"text": "fine"}]))
    )
    await daemon.runs.wait(later, 60)
    assert "memory [REDACTED] and [REDACTED]" in requests[-1]
    assert "note [REDACTED] and [REDACTED]" in requests[-1]
    await daemon.store.flush()

    # Every model request.
    assert len(requests) >= 5
    for request in requests:
        assert not [s for s in secrets if s in request], request[:300]

    # Every file of the store, the harness and its history included.
    store = Path(daemon.store_dir)
    files = [p for p in store.rglob("*") if p.is_file()]
    assert any(p.parent.name == "blobs" for p in files) and any(p.suffix == ".md" for p in files)
    for path in files:
        data = path.read_bytes()
        assert not [s for s in secrets if s.encode() in data], path

    # Every REST answer about it.
    answers = [await fetch(jp_fetch, "sessions"), await fetch(jp_fetch, "schedules")]
    answers.append(await fetch(jp_fetch, "harness"))
    for kind, entry in (("memory", "planted"), ("note", "user-note")):
        answers.append(await fetch(jp_fetch, "harness", kind, entry))
        answers.append(await fetch(jp_fetch, "harness", kind, entry, "history"))
    for session_id in [sid, waiting, *daemon.listing.descendant_ids(sid)]:
        for part in ((), ("events",), ("goal",), ("export?with_context=1",)):
            answers.append(await fetch(jp_fetch, "sessions", session_id, *part))
    answers.append(await fetch(jp_fetch, "sessions", sid, "context"))
    record = await get_session(jp_fetch, sid)
    assert "[REDACTED]" in record["prompt"] and "[REDACTED]" in record["name"]
    for body in answers:
        assert not [s for s in secrets if s.encode() in body], body[:300]


async def fetch(jp_fetch: Any, *path: str) -> bytes:
    *parts, last = path
    name, _, query = last.partition("?")
    params = dict(p.split("=", 1) for p in query.split("&") if p)
    resp = await jp_fetch("api", "prime", *parts, name, params=params)
    return bytes(resp.body)
