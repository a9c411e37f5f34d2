"""Schedules and heartbeats on a real server: ticks to a notebook's recv(), a cancel that stops
them, a person's schedule over REST, and every bad input refused where it was made."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import events, fetch_error, start_session, wait_for

# Everything recv() returns in 4 s.
COLLECT = """
import time
got, start = [], time.monotonic()
while time.monotonic() - start < 4:
    m = recv(timeout=max(0.01, 4 - (time.monotonic() - start)))
    if m is not None:
        got.append(m)
print(len(got), sorted({m['from'] for m in got}), sorted({m['message'] for m in got}))
"""


async def _refusal(kernel: Any, call: str) -> str:
    return await kernel.value(
        f"try:\n    {call}\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
        "else:\n    print('no error')"
    )


async def test_a_heartbeat_reaches_recv_until_it_is_cancelled(daemon, user_kernel):
    nb = await user_kernel()
    await nb.value("h = schedule.every(1, 'tick')")
    count, rest = (await nb.value(COLLECT)).split(" ", 1)
    assert int(count) >= 3
    assert rest == "['schedule'] ['tick']\n"
    listed = json.loads(await nb.value("import json; print(json.dumps(schedule.list()))"))
    assert [s["id"] for s in listed] == [json.loads(await nb.value("print(json.dumps(h['id']))"))]
    assert listed[0]["ticks"] >= 3 and listed[0]["state"] == "active"

    cancelled = json.loads(await nb.value("print(json.dumps(schedule.cancel(h)))"))
    assert (cancelled["state"], cancelled["next"]) == ("cancelled", None)
    # A tick already on its way when cancel() ran may still be read; none comes after.
    await nb.value("while recv(0) is not None: pass")
    assert await nb.value("print(recv(2.5))") == "None\n"
    sid = cancelled["id"]
    assert daemon.schedules.get(sid).state == "cancelled"
    kinds = [
        e["data"]["event"]
        for e in await daemon.store.events(cancelled["target_id"], kinds=["schedule"])
    ]
    assert kinds == ["created", "cancelled"]


async def test_bad_schedules_are_refused_where_they_are_made(daemon, user_kernel, jp_fetch):
    nb, other = await user_kernel(), await user_kernel()
    other_id = (
        await other.value(
            "from prime_kernel.kernel.primitives import client\n"
            "print(client().request('GET', 'whoami')['id'])"
        )
    ).strip()
    await nb.value("import datetime as dt")
    cases = {
        "schedule.every(0, 'x')": "at least 1 s",
        "schedule.every('soon', 'x')": "is not a duration",
        "schedule.cron('61 * * * *', 'x')": "the minute field '61': 61 is out of range 0-59",
        "schedule.cron('* * *', 'x')": "has 3 fields",
        "schedule.cron('0 0 31 2 *', 'x')": "never matches",
        "schedule.at(dt.datetime.now() - dt.timedelta(minutes=5), 'x')": "is in the past",
        "schedule.at('yesterday', 'x')": "is not a time",
        f"schedule.every(5, 'x', to={other_id!r})": "out of reach",
        "schedule.every(5, 'x', to='s000000000000')": "no session",
        "schedule.every(5, '')": "must not be empty",
        "schedule.cancel('h000000000000')": "no schedule",
    }
    for call, expected in cases.items():
        out = await _refusal(nb, call)
        assert expected in out, (call, out)
    assert await nb.value("print(schedule.list())") == "[]\n"
    assert daemon.schedules.listing() == []

    # People: REST, the same checks, and any session within their reach (all of them).
    async def post(body: dict[str, Any]) -> Any:
        return await jp_fetch("api", "prime", "schedules", method="POST", body=json.dumps(body))

    for body, code, expected in (
        ({"session_id": other_id, "every": 0, "message": "x"}, 400, "at least"),
        ({"session_id": other_id, "cron": "*/0 * * * *", "message": "x"}, 400, "positive"),
        (
            {"session_id": other_id, "every": 5, "cron": "* * * * *", "message": "x"},
            400,
            "exactly one",
        ),
        ({"session_id": "s000000000000", "every": 5, "message": "x"}, 404, "no session"),
        ({"session_id": other_id, "every": 5, "message": "x", "owner": "s1"}, 400, "unknown field"),
    ):
        status, error = await fetch_error(post(body))
        assert (status, expected in error["message"]) == (code, True), error
    assert daemon.schedules.listing() == []
    made = json.loads((await post({"session_id": other_id, "at": "in 1h", "message": "x"})).body)
    assert (made["owner"], made["target_id"], made["kind"]) == ("user", other_id, "at")
    # The notebook sees a person's schedule that ticks to it, but may not cancel it.
    assert "belongs to a person" in await _refusal(other, f"schedule.cancel({made['id']!r})")
    gone = await jp_fetch("api", "prime", "schedules", made["id"], method="DELETE")
    assert json.loads(gone.body)["state"] == "cancelled"
    listed = json.loads(
        (await jp_fetch("api", "prime", "schedules", params={"session": other_id})).body
    )
    assert [s["state"] for s in listed["schedules"]] == ["cancelled"]


async def test_ticks_respect_budgets_and_end_with_their_owner(daemon, jp_fetch, script):
    # An agent with one model call in its budget schedules a heartbeat to itself and answers:
    # it waits IDLE for the heartbeat; the first tick finds the budget spent, so its schedule
    # ends, and with nothing left to wait for the agent ends DONE.
    code = "h = schedule.every(1, 'beat')\nanswer('scheduled')"
    model = script([{"code": code}])
    sid = await start_session(jp_fetch, "beat", model=model, budget={"turns": 1})
    record = daemon.registry.get(sid)
    await wait_for(lambda: record.state.value == "DONE", timeout=120)
    (own,) = daemon.schedules.listing(session_id=sid)
    assert (own["owner"], own["state"], own["ticks"]) == (sid, "ended", 0)
    assert own["reason"].startswith("budget exceeded: 1 of 1 model calls spent")
    states = [e["data"]["state"] for e in await events(daemon, sid, "state")]
    assert states[-2:] == ["IDLE", "DONE"]
    assert await daemon.store.unread(sid, "model") == []

    # A person's schedule to such an agent: its ticks are skipped (the budget), and when the
    # agent is cancelled the schedule stays — a person's is never ended by the daemon.
    other = await start_session(
        jp_fetch,
        "idle",
        model=script([{"code": "answer(1)"}]),
        budget={"turns": 1},
        persistent=True,
    )
    await wait_for(lambda: daemon.registry.get(other).state.value == "IDLE", timeout=120)
    body = json.dumps({"session_id": other, "every": 1, "message": "yours"})
    made = json.loads((await jp_fetch("api", "prime", "schedules", method="POST", body=body)).body)
    person = daemon.schedules.get(made["id"])
    await wait_for(lambda: person.skipped >= 1, timeout=30)
    assert person.reason is not None and "budget exceeded" in person.reason
    await jp_fetch("api", "prime", "sessions", other, method="DELETE")
    await wait_for(lambda: person.reason is not None and "has ended" in person.reason, 30)
    assert (person.state, person.ticks) == ("active", 0)
    skipped = [e["data"] for e in await events(daemon, other, "schedule")]
    assert [e["event"] for e in skipped] == ["created", "skipped", "skipped"]
