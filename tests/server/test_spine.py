"""The spine end to end: notebook kernels call rlm(), child kernels run, answers come back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from prime_kernel.daemon import policy
from prime_kernel.models import profiles
from prime_kernel.protocol.requests import SessionRequest
from tests.conftest import (
    RAW_REQUEST,
    agent_records,
    events,
    grant_capability,
    until_opened,
    wait_for,
)


async def test_rlm_from_prime_kernel(daemon, user_kernel, script, jp_fetch):
    model = script(
        [
            {"code": "m = sum(context) / len(context)\nprint(m)"},
            {"code": "answer(m)"},
        ]
    )
    nb = await user_kernel()
    out = await nb.value(
        f"h = rlm('What is the mean of context?', context=[3, 5, 10], model={model!r}); h.status"
    )
    assert out.strip("'") in {"ADMITTED", "RUNNING"}
    assert await nb.value("h.result(timeout=60)") == "6.0"
    assert await nb.value("h.status, h.done()") == "('DONE', True)"
    sid = (await nb.value("h.session_id")).strip("'")
    record = json.loads((await jp_fetch("api", "prime", "sessions", sid)).body)
    assert record["state"] == "DONE"
    assert record["usage"]["own"]["model_calls"] == 2
    assert record["usage"]["own"]["cells"] == 2
    assert record["usage"]["own"]["total_tokens"] > 0
    assert record["context_type"] == "list"
    # The context reached the child as a variable, never through the prompt.
    events = json.loads((await jp_fetch("api", "prime", "sessions", sid, "events")).body)["events"]
    task = next(e for e in events if e["kind"] == "task")
    assert "[3, 5, 10]" not in task["data"]["prompt"]
    states = [e["data"]["state"] for e in events if e["kind"] == "state"]
    assert states == ["ADMITTED", "RUNNING", "DONE"]
    # The notebook shows up as the root of the child's tree.
    parent = json.loads((await jp_fetch("api", "prime", "sessions", record["parent_id"])).body)
    assert parent["kind"] == "notebook"
    assert parent["usage"]["subtree"]["model_calls"] == 2


async def test_await_map_gather_and_llm(daemon, user_kernel, script):
    model = script([{"code": "answer(context * 2)"}])
    talk = script([{"text": "forty-two"}])
    nb = await user_kernel()
    await nb.run(f"hs = rlm.map('double it', contexts=[1, 2, 3], model={model!r})")
    assert await nb.value("rlm.gather(*hs)") == "[2, 4, 6]"
    assert await nb.value(f"await rlm('double it', context=21, model={model!r})") == "42"
    assert await nb.value(f"llm('what is six times seven?', model={talk!r})") == "'forty-two'"
    assert await nb.value(f"llm.batch(['a', 'b'], model={talk!r})") == "['forty-two', 'forty-two']"
    assert await nb.value(f"llm_query('a', model={talk!r})") == "'forty-two'"


async def test_child_kernel_is_a_server_kernel(daemon, user_kernel, script, jp_fetch):
    gate = Path(daemon.root_dir) / "may-answer"
    model = script([{"code": until_opened(gate, "answer(1)")}])
    nb = await user_kernel()
    sid = (await nb.value(f"h = rlm('wait', model={model!r}); h.session_id")).strip("'")
    await wait_for(lambda: daemon.registry.get(sid).kernel_id is not None)
    kernel_id = daemon.registry.get(sid).kernel_id
    kernels = json.loads((await jp_fetch("api", "kernels")).body)
    assert kernel_id in {k["id"] for k in kernels}
    assert next(k for k in kernels if k["id"] == kernel_id)["name"] == "prime-agent"
    gate.touch()
    assert await nb.value("h.result()") == "1"


async def test_rlm_paper_aliases(daemon, user_kernel, script):
    model = script([{"code": "total = sum(range(10))\nFINAL_VAR('total')"}])
    nb = await user_kernel()
    assert await nb.value(f"rlm('sum', model={model!r}).result()") == "45"


async def test_an_iterator_answer_arrives_as_its_items(daemon, user_kernel, script):
    # A one-shot iterator would arrive as `<range_iterator object at 0x…>`: its items instead.
    model = script([{"code": "answer(reversed(range(1, 4)))"}])
    nb = await user_kernel()
    sid = (await nb.value(f"h = rlm('count down', model={model!r}); h.session_id")).strip("'")
    assert await nb.value("h.result()") == "[3, 2, 1]"
    assert daemon.registry.get(sid).answer_repr == "[3, 2, 1]"
    model = script([{"code": "answer({'a': 1}.keys())"}])
    assert await nb.value(f"rlm('keys', model={model!r}).result()") == "['a']"


async def test_fenced_code_fallback(daemon, user_kernel, script):
    # A model without tool calling: the ```python blocks of its reply are run.
    model = script(
        [
            {
                "text": "Let me compute.",
                "fenced": "x = sum(i * i for i in range(1, 101))\nprint(x)",
            },
            {"text": "Done.", "fenced": "answer(x)"},
        ],
        tools=False,
    )
    assert not daemon.router.supports_tools(model)
    nb = await user_kernel()
    assert await nb.value(f"rlm('sum of squares', model={model!r}).result()") == "338350"


async def test_reply_without_code_is_the_answer(daemon, user_kernel, script):
    model = script([{"text": "Paris."}])
    nb = await user_kernel()
    assert await nb.value(f"rlm('capital of France?', model={model!r}).result()") == "'Paris.'"


async def test_load_ext_in_a_plain_python_kernel(daemon, user_kernel, script, jp_fetch):
    model = script([{"code": "answer('hi from child')"}])
    nb = await user_kernel("python3")
    await nb.run("%load_ext prime_kernel")
    await grant_capability(jp_fetch, nb)  # as JupyterLab does, for the user
    assert await nb.value(f"rlm('greet', model={model!r}).result()") == "'hi from child'"


@pytest.mark.parametrize(
    "prime_config", [{"pool_size": 1, "max_depth": 1, "default_model": "scripted/echo"}]
)
async def test_depth_limit_is_enforced_by_the_daemon(daemon, user_kernel, script):
    # The child (depth 1) tries to go deeper, first politely, then by forging its request.
    forge = RAW_REQUEST + (
        "forged, _ = raw_request('POST', 'sessions', "
        "{'prompt': 'x', 'depth': 0, 'parent_id': None})\n"
    )
    model = script(
        [
            {"code": "try:\n    rlm('deeper')\nexcept Exception as e:\n    err = repr(e)"},
            {"code": forge},
            {"code": "answer((err, forged))"},
        ]
    )
    nb = await user_kernel()
    out = await nb.value(f"rlm('go deep', model={model!r}).result()")
    assert "DepthExceeded" in out and "maximum depth is 1" in out
    assert out.endswith("400)") or out.endswith("403)")
    assert len(agent_records(daemon)) == 1


async def test_bad_input_errors_in_the_calling_cell(daemon, user_kernel, script, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    nb = await user_kernel()
    # Once the warm pool has filled (in the background, since the daemon started).
    await wait_for(
        lambda: len(daemon.kernel_manager.list_kernel_ids()) == 1 + daemon.custody.pool_size
    )
    kernels_before = len(daemon.kernel_manager.list_kernel_ids())

    async def error_of(code: str) -> str:
        result = await nb.run(code)
        errors = [o for o in result.outputs if o["output_type"] == "error"]
        assert errors, f"no error from {code!r}: {result.outputs}"
        return f"{errors[0]['ename']}: {errors[0]['evalue']}"

    err = await error_of("rlm('x', context=lambda: 1)")
    assert err.startswith("TypeError") and "function" in err and "pickled" in err
    err = await error_of("rlm('x', model='no-such-provider-model')")
    assert err.startswith("ModelError") and "unknown model" in err
    err = await error_of("rlm('x', model='openai/gpt-4o-mini')")
    assert "OPENAI_API_KEY" in err
    assert len(daemon.kernel_manager.list_kernel_ids()) == kernels_before  # no kernel started
    # Bad arguments: the protocol's InvalidRequest, a ValueError (caught as one).
    err = await error_of("rlm('')")
    assert err == "InvalidRequest: rlm() needs a non-empty prompt string"
    assert (
        await nb.value("try:\n    rlm('')\nexcept ValueError as e:\n    x = 'caught'\nx")
        == "'caught'"
    )
    model = script([{"code": "answer(1)"}])
    err = await error_of(f"rlm('x', model={model!r}).result(timeout=0)")
    assert err.startswith("InvalidRequest") and "positive" in err
    err = await error_of(
        "from prime_kernel.kernel.client import DaemonClient\n"
        "DaemonClient('http://127.0.0.1:9/', 'tok').request('GET', 'whoami')"
    )
    assert err.startswith("DaemonUnreachable") and "http://127.0.0.1:9/" in err


async def test_failed_and_cancelled_children_raise(daemon, user_kernel, script):
    boom = script([{"code": "1/0"}, {"code": "1/0"}])
    slow = script([{"code": "import time; time.sleep(60)"}])
    nb = await user_kernel()
    await nb.run(f"h = rlm('fail', model={boom!r}, max_turns=2)")
    result = await nb.run("h.result()")
    err = next(o for o in result.outputs if o["output_type"] == "error")
    assert err["ename"] == "ChildFailed" and "turn limit (2)" in err["evalue"]
    await nb.run(f"h2 = rlm('slow', model={slow!r})")
    sid = (await nb.value("h2.session_id")).strip("'")
    await wait_for(lambda: events(daemon, sid, "model_call"))
    await nb.run("h2.cancel()")
    result = await nb.run("h2.result()")
    err = next(o for o in result.outputs if o["output_type"] == "error")
    assert err["ename"] == "Cancelled"
    assert await nb.value("h2.status") == "'CANCELLED'"


@pytest.mark.parametrize(
    "prime_config",
    [
        {
            "pool_size": 1,
            "cell_timeout": 1.0,
            "observation_chars": 500,
            "default_model": "scripted/echo",
        }
    ],
)
async def test_timeout_and_output_cap(daemon, user_kernel, script):
    seen = []

    def look(messages):
        seen.append(messages[-1]["content"])
        return (
            {"code": "answer(len(seen_text))"} if len(seen) > 1 else {"code": "print('z' * 20000)"}
        )

    model = script([{"code": "import time\ntime.sleep(20)"}, look, look])
    nb = await user_kernel()
    await nb.run(f"h = rlm('sleepy', model={model!r}, max_turns=3)")
    await nb.run("h.wait(timeout=60)")
    sid = (await nb.value("h.session_id")).strip("'")
    assert "interrupted" in seen[0]
    assert "characters cut" in seen[1] and len(seen[1]) < 1000
    cells = await events(daemon, sid, "cell")
    assert cells[0]["data"]["status"] == "timeout"
    assert cells[1]["data"]["outputs"][0]["text"] == "z" * 20000 + "\n"  # stored in full


async def test_rest_api(daemon, jp_fetch, script):
    model = script([{"code": "answer(7)"}])
    resp = await jp_fetch(
        "api",
        "prime",
        "sessions",
        method="POST",
        body=json.dumps({"prompt": "seven", "model": model}),
    )
    assert resp.code == 201
    sid = json.loads(resp.body)["id"]
    await daemon.runs.wait(sid, 60)
    listed = json.loads((await jp_fetch("api", "prime", "sessions")).body)["sessions"]
    assert sid in [s["id"] for s in listed]

    async def ids(*query: tuple[str, str]) -> list[str]:
        resp = await jp_fetch("api", "prime", "sessions", params=list(query))
        return [s["id"] for s in json.loads(resp.body)["sessions"]]

    # The query's filters (protocol/requests.py SessionFilter) reach the daemon's list.
    assert await ids(("state", "done"), ("state", "RUNNING"), ("root", sid)) == [sid]
    assert await ids(("state", "FAILED"), ("root", sid)) == []
    assert await ids(("parent", sid)) == [] and await ids(("limit", "1")) == [listed[0]["id"]]
    for query, message in [
        (("state", "bogus"), "unknown state 'BOGUS'"),
        (("limit", "0"), "limit must be an integer from 1"),
        (("changed_after", "x"), "changed_after must be an integer, not 'x'"),
    ]:
        with pytest.raises(HTTPClientError) as e:
            await ids(query)
        assert e.value.code == 400 and message in json.loads(e.value.response.body)["message"]
    assert json.loads((await jp_fetch("api", "prime", "sessions", sid)).body)["answer_repr"] == "7"
    again = json.loads((await jp_fetch("api", "prime", "sessions", sid, method="DELETE")).body)
    assert again["already_ended"] is True and again["cancelled"] == []
    models = json.loads((await jp_fetch("api", "prime", "models")).body)
    assert models["default"] == "scripted/echo"
    for bad in ({}, {"prompt": ""}, {"prompt": "x", "bogus": 1}, {"prompt": "x", "model": "nope"}):
        with pytest.raises(HTTPClientError) as e:
            await jp_fetch("api", "prime", "sessions", method="POST", body=json.dumps(bad))
        assert e.value.code == 400
    with pytest.raises(HTTPClientError) as e:
        await jp_fetch("api", "prime", "sessions", "nope")
    assert e.value.code == 404


async def test_a_second_daemon_on_the_same_root_is_refused(daemon, tmp_path):
    from prime_kernel.daemon.daemon import Daemon
    from prime_kernel.protocol.errors import Unavailable

    # Two daemons resuming the same sessions would run them twice: the store is claimed.
    other = Daemon(root_dir=daemon.root_dir, store_dir=daemon.store_dir)
    with pytest.raises(Unavailable, match="another Prime daemon is using the store"):
        other.open()


@pytest.mark.parametrize(
    "prime_config", [{"pool_size": 1, "max_blob_bytes": 2000, "default_model": "scripted/echo"}]
)
async def test_size_limits_are_enforced_by_the_daemon(daemon, user_kernel, script):
    model = script(
        [{"code": "try:\n    answer('y' * 5000)\nexcept Exception as e:\n    answer(repr(e))"}]
    )
    nb = await user_kernel()
    result = await nb.run(f"rlm('x', context='x' * 5000, model={model!r})")
    err = next(o for o in result.outputs if o["output_type"] == "error")
    assert err["ename"] == "TooLarge" and "at most 2000" in err["evalue"]
    assert agent_records(daemon) == []
    out = await nb.value(f"rlm('big answer', model={model!r}).result()")
    assert "TooLarge" in out and "the answer is" in out


async def test_the_coder_profile_has_convert_in_its_repl(
    daemon: Any, script: Callable[..., str], monkeypatch: Any
) -> None:
    # The setup imports the helper in the agent's own (sandboxed) kernel; the cookbook's unit
    # examples and the system prompt rely on it being there.
    model = script([{"text": "answer(convert('5 ft 3 in', 'cm'))\n"}] * 5, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.CODER)
    record = await daemon.admission.create_session(SessionRequest("5 ft 3 in in cm?", model=model))
    result = await daemon.runs.wait(record["id"], 120)
    cells = await daemon.store.events(result["id"], kinds=["cell"])
    assert result["state"] == "DONE", [c["data"]["code"] for c in cells]
    assert float(result["answer_repr"]) == 63 * 2.54


async def test_a_learned_example_copied_whole_is_refused_and_stays_shown(
    daemon: Any, script: Callable[..., str], monkeypatch: Any
) -> None:
    learned = "answer(sorted([61, 152, 140, 34])[-2])"
    daemon.harness.create(
        "example",
        "second-largest",
        title="What is the second largest number in the list [61, 152, 140, 34]?",
        content=f"```python\n{learned}\n```\n",
        metadata={
            "task": "What is the second largest number in the list [61, 152, 140, 34]?",
            "outcome": "right",
            "answer": "140",
        },
    )
    task = "What is the second largest number in the list [39, 7, 120, 88]?"
    own = "answer(sorted([39, 7, 120, 88])[-2])"
    sent: list[list[dict[str, Any]]] = []

    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        sent.append(messages)
        retrying = "example's code" in messages[-2]["content"]
        return {"text": f"{own}\n" if retrying else f"{learned}\n"}

    model = script([turn] * 5, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.CODER)
    record = await daemon.admission.create_session(SessionRequest(task, model=model))
    result = await daemon.runs.wait(record["id"], 120)
    assert result["state"] == "DONE" and result["answer_repr"] == "88", result["error"]
    # The copy never ran (its answer would have been the example's: 140) ...
    cells = await daemon.store.events(result["id"], kinds=["cell"])
    assert [c["data"]["code"] for c in cells[1:]] == [own]
    assert policy.copied_example_text() in sent[1][-2]["content"]
    # ... and the learned example is still shown, the last before the task.
    shown = [m["content"] for m in sent[1] if m.get("name") == "example"]
    assert len(shown) == 2 * profiles.CODER_EXAMPLES and learned in shown[-1]


async def test_a_learned_example_of_the_very_task_may_be_copied(
    daemon: Any, script: Callable[..., str], monkeypatch: Any
) -> None:
    task = "What is the second largest number in the list [61, 152, 140, 34]?"
    learned = "answer(sorted([61, 152, 140, 34])[-2])"
    daemon.harness.create(
        "example",
        "second-largest",
        title=task,
        content=f"```python\n{learned}\n```\n",
        metadata={"task": task, "outcome": "right", "answer": "140"},
    )
    model = script([{"text": f"{learned}\n"}] * 2, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.CODER)
    record = await daemon.admission.create_session(SessionRequest(task, model=model))
    result = await daemon.runs.wait(record["id"], 120)
    assert result["state"] == "DONE" and result["answer_repr"] == "140", result["error"]
