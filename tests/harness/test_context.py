"""A memory written by one session is in the next session's context; specs drive children."""

from __future__ import annotations

from typing import Any

from prime_kernel.daemon.daemon import Daemon


async def test_memory_from_one_session_is_in_the_next_sessions_prompt(
    daemon: Daemon, script, capture
):
    writer = script(
        [
            {
                "code": "e = harness.memory.create('csv-separator', 'The data files use ; as "
                "the separator', title='CSV separator', reason='found by trial')\nprint(e.version)"
            },
            {"code": "answer('noted')"},
        ]
    )
    first = await daemon.create_session("learn the data format", model=writer)
    assert (await daemon.wait(first["id"], 60))["state"] == "DONE"

    seen: list[list[dict[str, Any]]] = []
    reader = script([capture(seen, {"text": "ok"})])
    second = await daemon.create_session("read the csv data files", model=reader)
    assert (await daemon.wait(second["id"], 60))["state"] == "DONE"
    system = seen[0][0]
    assert system["role"] == "system"
    assert (
        "[csv-separator] CSV separator: The data files use ; as the separator" in system["content"]
    )

    history = daemon.harness.history("memory", "csv-separator")
    assert [(v["version"], v["op"], v["author"], v["reason"]) for v in history] == [
        (1, "create", first["id"], "found by trial")
    ]
    path = daemon.harness.files.location("project", "memory", "csv-separator")
    assert path == daemon.harness.files.root("project") / "memory" / "csv-separator.md"
    assert "title: CSV separator" in path.read_text()


async def test_context_stays_within_its_budget(daemon: Daemon, script):
    h = daemon.harness
    h.context_chars = 700
    h.create("note", "style", title="Style", content="Print shapes before using data.")
    for i in range(30):
        h.create(
            "memory", f"fact-{i:02d}", title=f"Fact {i}", content=f"alpha fact number {i} " * 5
        )
    h.create("memory", "kernel-fact", title="Kernels", content="kernels restart in two seconds")
    text = h.context({"prompt": "why do kernels restart"})
    assert len(text) <= 700
    assert "Print shapes before using data." in text
    # The memory sharing words with the task comes first; the rest are counted.
    assert text.index("[kernel-fact]") < text.index("[fact-")
    assert "more: harness.memory.list()" in text


async def test_spec_drives_a_childs_model_budget_and_instructions(
    daemon: Daemon, script, user_kernel, capture
):
    seen: list[list[dict[str, Any]]] = []
    child_model = script([capture(seen, {"code": "answer('looks fine')"})])
    daemon.harness.create(
        "spec",
        "reviewer",
        title="Reviews a change for bugs",
        content="You are a strict code reviewer. List every bug you find.",
        metadata={"model": child_model, "max_turns": 3, "budget": {"tokens": 50000}},
    )
    nb = await user_kernel()
    out = await nb.value("h = rlm('review this diff', spec='reviewer'); h.result(timeout=60)")
    assert out == "'looks fine'"
    sid = (await nb.value("h.session_id")).strip("'")
    child = daemon.session_json(sid)
    assert child["model"] == child_model
    assert child["options"]["max_turns"] == 3
    assert child["options"]["spec"] == "reviewer"
    assert child["budget"]["tokens"] == 50000
    assert "You are a strict code reviewer." in seen[0][0]["content"]

    # An explicit argument wins over the spec.
    out = await nb.value("rlm('again', spec='reviewer', max_turns=2).session_id")
    assert daemon.session_json(out.strip("'"))["options"]["max_turns"] == 2

    # A missing spec is a clear error in the calling cell, and nothing is admitted.
    before = len(daemon.list_sessions()["sessions"])
    result = await nb.run("rlm('x', spec='nope')")
    error = next(o for o in result.outputs if o["output_type"] == "error")
    assert error["ename"] == "NotFound"
    assert "no sub-agent spec named 'nope'" in error["evalue"]
    assert "reviewer" in error["evalue"]
    assert len(daemon.list_sessions()["sessions"]) == before
