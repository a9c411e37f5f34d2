"""Exported notebooks of real sessions (scripted model, real kernels) tell the whole story."""

from __future__ import annotations

import json
import time
from typing import Any

import nbformat
import pytest

from prime_kernel.daemon import usage
from prime_kernel.export import NotebookExporter, export_to
from prime_kernel.protocol.requests import SessionRequest

from ..conftest import events, wait_for
from .conftest import (
    SHOW_PNG,
    by_kind,
    code_cells,
    finish,
    notebook_of,
    person_runs,
    read,
    text_of,
)

STORED_CAP = 1_000_000


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    # A small per-cell store cap, so "a huge print" needs only a few MB.
    return {**prime_config, "max_cell_output_bytes": STORED_CAP}


async def test_tree_with_child_image_error_person_and_answer(daemon, script, exporter, tmp_path):
    child_model = script(
        [{"code": "total = sum(context)\nprint(total)"}, {"code": "answer(total)"}]
    )
    root_model = script(
        [
            {
                "text": "I will ask a sub-agent.",
                "code": f"h = rlm('add these up', context=[1, 2, 3], model={child_model!r})\n"
                "print(h.result(timeout=60))",
            },
            {"text": "Here is a picture.", "code": SHOW_PNG},
            {"code": "1 / 0"},
            {"code": "answer(6)"},
        ]
    )
    root = await finish(daemon, "Sum 1..3 with help", root_model)
    assert root["state"] == "DONE"
    child_id = root["children"][0]

    # A person runs a cell in the agent's REPL (its kernel stays up after the session ends).
    await person_runs(daemon, root["id"], "print('a person was here')")

    async def person_cell() -> bool:
        cells = await events(daemon, root["id"], "cell")
        return any(e["data"].get("source") == "user" for e in cells)

    await wait_for(person_cell)

    nb = await notebook_of(daemon, exporter, root["id"])
    nbformat.validate(nb)
    assert nb.nbformat == 4 and nb.nbformat_minor == nbformat.current_nbformat_minor
    assert nb.metadata.kernelspec == {
        "name": "prime-agent",
        "display_name": "Prime Agent",
        "language": "python",
    }
    assert nb.metadata.language_info.name == "python"
    prime = nb.metadata.prime
    assert prime.id == root["id"] and prime.state == "DONE" and prime.ended_when_exported
    assert prime.usage.own.model_calls == 4
    assert prime.usage.subtree.model_calls == 6

    header = nb.cells[0].source
    assert "Sum 1..3 with help" in header and root_model in header and "Started" in header
    models = by_kind(nb, "model")
    assert [c.source.split("\n\n", 1)[1] for c in models] == [
        "I will ask a sub-agent.",
        "Here is a picture.",
    ]
    assert models[0].metadata.prime.model_call["usage"]["total_tokens"] > 0

    agent = [c for c in code_cells(nb) if c.metadata.prime.source == "agent"]
    assert [c.execution_count for c in agent] == [1, 2, 3, 4]
    assert agent[0].outputs[0].text.strip().endswith("6")
    assert agent[1].outputs[0].output_type == "display_data"
    assert agent[1].outputs[0].data["image/png"].strip()
    error = agent[2].outputs[0]
    assert error.output_type == "error" and error.ename == "ZeroDivisionError"
    assert error.traceback and agent[2].metadata.prime.status == "error"

    user = [c for c in code_cells(nb) if c.metadata.prime.source == "user"]
    assert len(user) == 1 and user[0].outputs[0].text == "a person was here\n"
    label = nb.cells[nb.cells.index(user[0]) - 1]
    assert label.cell_type == "markdown" and "A person ran the next cell" in label.source

    child = by_kind(nb, "child")[0]
    assert f"]({child_id}.ipynb)" in child.source and "DONE" in child.source
    answer = by_kind(nb, "answer")[0]
    assert "6" in answer.source
    summary = nb.cells[-1]
    assert summary.metadata.prime.kind == "summary" and "DONE" in summary.source
    assert f"]({child_id}.ipynb)" in summary.source

    # The subtree as a folder: linked notebooks, the child's context beside its notebook.
    files = await export_to(
        daemon.listing, exporter, root["id"], tmp_path / "tree", subtree=True, with_context=True
    )
    assert sorted(f.name for f in files) == sorted(
        [f"{root['id']}.ipynb", f"{child_id}.ipynb", f"{child_id}.context.json"]
    )
    child_nb = read(tmp_path / "tree" / f"{child_id}.ipynb")
    assert f"]({root['id']}.ipynb)" in child_nb.cells[0].source
    load = [c for c in code_cells(child_nb) if c.metadata.prime.get("kind") == "context"]
    # Plain data travels as JSON, loaded by json.load: nothing in the notebook unpickles it.
    assert f'open("{child_id}.context.json", encoding="utf-8")' in load[0].source
    assert "json.load(f)" in load[0].source and "pickle" not in load[0].source
    assert json.loads((tmp_path / "tree" / f"{child_id}.context.json").read_text()) == [1, 2, 3]
    read(tmp_path / "tree" / f"{root['id']}.ipynb")

    # Without --with-context the notebook says how to get the context.
    plain = await notebook_of(daemon, exporter, child_id)
    assert "--with-context" in by_kind(plain, "context")[0].source
    assert not [c for c in code_cells(plain) if c.metadata.prime.get("kind") == "context"]


async def test_failed_cancelled_empty_and_running_sessions(daemon, script, exporter):
    failed = await finish(
        daemon, "fail", script([{"code": "raise ValueError('boom')"}]), max_turns=1
    )
    assert failed["state"] == "FAILED"
    nb = await notebook_of(daemon, exporter, failed["id"])
    assert code_cells(nb)[0].outputs[0].ename == "ValueError"
    assert "turn limit" in nb.cells[-1].source and nb.metadata.prime.error

    empty = await finish(daemon, "just talk", script([{"text": "Nothing to run."}]))
    assert empty["state"] == "DONE"
    nb = await notebook_of(daemon, exporter, empty["id"])
    assert code_cells(nb) == []
    assert "Answer (the model's reply)" in by_kind(nb, "answer")[0].source

    slow = script([{"code": "print('started')"}, {"sleep": 60, "text": "late"}])
    running = await daemon.admission.create_session(SessionRequest("slow", model=slow))
    sid = running["id"]
    await wait_for(lambda: events(daemon, sid, "cell"))
    nb = await notebook_of(daemon, exporter, sid)
    assert "Not finished" in nb.cells[0].source and not nb.metadata.prime.ended_when_exported
    assert code_cells(nb)[0].outputs[0].text == "started\n"

    await daemon.runs.cancel(sid)
    nb = await notebook_of(daemon, exporter, sid)
    assert nb.metadata.prime.state == "CANCELLED"
    assert "CANCELLED" in nb.cells[-1].source and "Not finished" not in nb.cells[0].source


async def test_huge_print_is_cut_with_a_note(daemon, script, exporter, tmp_path):
    model = script([{"code": "print('x' * 5_000_000)"}, {"code": "answer('printed')"}])
    record = await finish(daemon, "print a lot", model)
    stored = next(e for e in await daemon.listing.events(record["id"]) if e["kind"] == "cell")[
        "data"
    ]
    assert "not stored" in stored["truncated_note"]

    started = time.monotonic()
    (path,) = await export_to(daemon.listing, exporter, record["id"], tmp_path / "big.ipynb")
    elapsed = time.monotonic() - started
    assert path.stat().st_size < 200_000, path.stat().st_size
    cell = code_cells(read(path))[0]
    text = "".join(o.get("text", "") for o in cell.outputs)
    assert "characters cut from the middle" in text
    assert "not stored (cap per cell reached)" in text
    assert cell.outputs[-1].name == "stderr" and len(cell.metadata.prime.notes) == 2
    # Not a timing test; a loose bound that a pathological export would still trip.
    assert elapsed < 30


def test_record_only_events_render_and_validate():
    """Kinds a live run rarely produces together, rendered from data alone (no daemon)."""
    sid = "sunit1"
    record = {
        "id": sid,
        "name": "n",
        "prompt": "p",
        "model": "scripted/x",
        "state": "DONE",
        "kind": "agent",
        "parent_id": None,
        "root_id": sid,
        "depth": 0,
        "created": time.time(),
        "started": time.time(),
        "ended": time.time(),
        "options": {},
        "usage": {"own": usage.empty(), "subtree": usage.empty()},
        "budget": {"max_cost": 1.0},
        "children": [],
    }
    events = [
        (
            "mail_in",
            {"from": "user", "sender": "user", "message": "hello\nthere", "message_id": "m1"},
        ),
        ("mail_in", {"from": "sparent", "sender": "boss", "message": "go", "message_id": "m3"}),
        ("mail_out", {"to": "sparent", "message": {"n": 1}, "message_id": "m2"}),
        (
            "cell",
            {
                "code": "while True: pass",
                "source": "agent",
                "execution_count": None,
                "outputs": [],
                "status": "timeout",
                "duration": 600.0,
            },
        ),
        (
            "cell",
            {
                "code": "x",
                "source": "agent",
                "execution_count": 3,
                "status": "ok",
                "outputs": [
                    {
                        "output_type": "execute_result",
                        "execution_count": 3,
                        "data": {
                            "text/plain": "1",
                            "application/json": {"a": 1},
                            "text/html": "<b>" + "y" * 100 + "</b>",
                        },
                        "metadata": {},
                    }
                ],
            },
        ),
        ("error", {"message": "something broke"}),
        (
            "compaction",
            {
                "reason": "window",
                "summarised_messages": 6,
                "before_tokens": 2225,
                "after_tokens": 984,
                "summary": "x holds 42",
            },
        ),
        ("heartbeat", {"note": "a kind this exporter does not know"}),
        ("answer", {"repr": "'```tricky```'", "kind": "answer"}),
    ]
    trajectory = [
        {"seq": seq, "session_id": sid, "ts": time.time(), "kind": kind, "data": data}
        for seq, (kind, data) in enumerate(events, 1)
    ]
    exporter = NotebookExporter(max_cell_data_chars=50)
    nb = exporter.notebook(record, trajectory)
    from_user, from_parent = by_kind(nb, "mail_in")
    assert "from** the user\n\n> hello\n> there" in from_user.source
    assert "from** `sparent` (boss)" in from_parent.source
    assert "Message sent to" in by_kind(nb, "mail_out")[0].source
    timeout, result = code_cells(nb)
    assert "interrupted" in timeout.outputs[-1].text and timeout.execution_count is None
    data = result.outputs[0].data
    assert data["application/json"] == {"a": 1} and "text/html" not in data
    assert "text/html output of 107 characters left out" in result.outputs[-1].text
    assert "something broke" in by_kind(nb, "error")[0].source
    compacted = by_kind(nb, "compaction")[0].source
    assert "6 earlier messages summarised, 2225 → 984 tokens" in compacted
    assert "> x holds 42" in compacted
    assert "a kind this exporter does not know" in by_kind(nb, "heartbeat")[0].source
    assert "````\n'```tricky```'\n````" in by_kind(nb, "answer")[0].source
    assert '"max_cost": 1.0' in nb.cells[0].source
    assert nbformat.reads(nbformat.writes(nb), as_version=4) == nb
    assert "sparent" in text_of(nb)


async def test_unknown_session(daemon, jp_fetch):
    from tests.conftest import fetch_error

    code, body = await fetch_error(jp_fetch("api", "prime", "sessions", "nope", "export"))
    assert code == 404 and "no session nope" in body["message"]
