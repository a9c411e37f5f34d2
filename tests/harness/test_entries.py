"""Files, versions, hand edits, import/export and bad input, over REST and in REPLs."""

from __future__ import annotations

import json
from pathlib import Path

from prime_kernel.daemon.daemon import Daemon
from prime_kernel.protocol.requests import SessionRequest
from tests.conftest import fetch_error

PRIME_STATE = {
    "schema": 1,
    "entries": {
        "prompt": {"be_careful": {"title": "Be careful", "content": "Check inputs first."}},
        "memory": {"gpu_count": {"title": "GPUs", "content": "The box has 2 GPUs.", "version": 3}},
        "skill": {
            "fetch_page": {
                "title": "Fetch a page",
                "content": "Call fetch(url).",
                "reference": {"type": "python", "import": "json", "callable": "dumps"},
            }
        },
        "subagent": {
            "critic": {
                "title": "Critic",
                "content": "Criticise.",
                "metadata": {"model": "scripted/echo"},
            }
        },
    },
    "refinements": [],
}


async def test_hand_edit_of_a_skill_is_versioned_and_broken_front_matter_is_named(
    daemon: Daemon, jp_fetch
):
    h = daemon.harness
    h.create(
        "skill",
        "csv-tools",
        title="Reads CSV files",
        content="Use read(path).",
        metadata={"entrypoint": "tool:read"},
        files={"tool.py": "def read(p):\n    return p\n"},
    )
    path = h.files.location("project", "skill", "csv-tools")
    path.write_text(path.read_text().replace("Use read(path).", "Use read(path, sep=';')."))
    hist = json.loads(
        (await jp_fetch("api", "prime", "harness", "skills", "csv-tools", "history")).body
    )
    assert [(v["version"], v["op"], v["author"]) for v in hist["versions"]] == [
        (1, "create", "user"),
        (2, "update", "user (hand edit)"),
    ]
    diff = json.loads(
        (
            await jp_fetch(
                "api", "prime", "harness", "skills", "csv-tools", "diff", params={"a": "1"}
            )
        ).body
    )["diff"]
    assert "-Use read(path)." in diff and "+Use read(path, sep=';')." in diff

    path.write_text("---\nname: csv-tools\ndescription: Reads\n  bad: [\n---\nbody\n")
    code, body = await fetch_error(jp_fetch("api", "prime", "harness", "skills", "csv-tools"))
    assert code == 400 and body["error"] == "front_matter"
    assert body["message"].startswith("skills/csv-tools/SKILL.md, line 4:")
    listing = json.loads((await jp_fetch("api", "prime", "harness")).body)
    assert listing["errors"][0]["id"] == "csv-tools" and listing["errors"][0]["line"] == 4
    # The broken file is itself a version, and rollback restores the exact earlier files.
    resp = await jp_fetch(
        "api",
        "prime",
        "harness",
        "skills",
        "csv-tools",
        "rollback",
        method="POST",
        body=json.dumps({"version": 2}),
    )
    assert json.loads(resp.body)["version"] == 4
    assert "sep=';'" in path.read_text()
    assert (path.parent / "tool.py").read_text() == "def read(p):\n    return p\n"
    # Deleting the folder by hand is noticed too.
    for f in path.parent.iterdir():
        f.unlink()
    path.parent.rmdir()
    hist = h.history("skill", "csv-tools")
    assert hist[-1]["op"] == "delete" and hist[-1]["author"] == "user (hand edit)"


async def test_skill_callable_and_project_wins_over_global(
    daemon: Daemon, script, global_harness: Path
):
    h = daemon.harness
    h.create(
        "skill",
        "adder",
        title="Adds numbers",
        content="adder(a, b)",
        metadata={"entrypoint": "impl:add"},
        # A sibling file, imported from the text the daemon sends (in the sandbox the
        # skill's folder is not visible).
        files={
            "impl.py": "from helper import twice\n\ndef add(a, b):\n    return twice(a + b) // 2\n",
            "helper.py": "def twice(x):\n    return 2 * x\n",
        },
    )
    h.create("note", "tone", content="global tone", scope="global")
    assert (global_harness / "notes" / "tone.md").is_file()
    h.create("note", "tone", content="project tone", scope="project")
    agent = script(
        [
            {
                "code": "s = skill('adder'); print(s.description, s(2, 3))\n"
                "print(harness.notes.get('tone').content)"
            },
            {"code": "answer(s(4, 5))"},
        ]
    )
    rec = await daemon.admission.create_session(SessionRequest("add", model=agent))
    done = await daemon.runs.wait(rec["id"], 60)
    assert done["answer_repr"] == "9"
    cells = [e["data"] for e in await daemon.listing.events(rec["id"]) if e["kind"] == "cell"]
    text = "".join(o.get("text", "") for o in cells[0]["outputs"])
    assert "Adds numbers 5" in text and "project tone" in text
    entries, _ = h.list("note")
    assert [(e.id, e.scope) for e in entries] == [("tone", "project")]


async def test_bad_input_is_refused_where_it_was_made(daemon: Daemon, jp_fetch, user_kernel):
    h = daemon.harness
    root = h.files.root("project")
    for bad in ("../x", "X", ".hidden", "a/b"):
        code, body = await fetch_error(
            jp_fetch(
                "api",
                "prime",
                "harness",
                method="POST",
                body=json.dumps({"kind": "note", "id": bad, "content": "x"}),
            )
        )
        assert code == 400 and "invalid id" in body["message"], bad
    assert not (root.parent / "x.md").exists()
    code, body = await fetch_error(
        jp_fetch(
            "api",
            "prime",
            "harness",
            "notes",
            "nothing",
            method="PUT",
            body=json.dumps({"content": "x"}),
        )
    )
    assert code == 404 and "no note named 'nothing'" in body["message"]
    h.create("note", "n1", content="one")
    code, body = await fetch_error(
        jp_fetch(
            "api",
            "prime",
            "harness",
            "notes",
            "n1",
            "rollback",
            method="POST",
            body=json.dumps({"version": 7}),
        )
    )
    assert code == 404 and "no version 7 (it has versions 1 to 1)" in body["message"]
    code, body = await fetch_error(
        jp_fetch(
            "api",
            "prime",
            "harness",
            method="POST",
            body=json.dumps({"kind": "policy", "id": "p", "content": "x"}),
        )
    )
    assert code == 400 and "unknown harness kind 'policy'" in body["message"]

    # Two sessions edit the same entry from the same version: the second is refused.
    a, b = await user_kernel(), await user_kernel()
    assert await a.value("harness.notes.get('n1').version") == "1"
    assert await b.value("harness.notes.get('n1').version") == "1"
    assert await a.value("harness.notes.update('n1', 'from a').version") == "2"
    result = await b.run("harness.notes.update('n1', 'from b')")
    error = next(o for o in result.outputs if o["output_type"] == "error")
    assert error["ename"] == "Conflict" and "now version 2" in error["evalue"]
    assert h.get("note", "n1").content.strip() == "from a"
    # Bad ids from a REPL are refused in the cell.
    result = await a.run("harness.memory.create('../escape', 'x')")
    error = next(o for o in result.outputs if o["output_type"] == "error")
    assert "invalid id '../escape'" in error["evalue"]
    authors = {v["author"] for v in h.history("note", "n1")}
    assert len(authors) == 2 and "user" in authors  # the creator, then session a


async def test_import_prime_agent_state_and_export(
    daemon: Daemon, jp_fetch, tmp_path: Path, jp_root_dir: Path
):
    resp = await jp_fetch(
        "api", "prime", "harness", "import", method="POST", body=json.dumps({"state": PRIME_STATE})
    )
    report = json.loads(resp.body)
    assert sorted(report["created"]) == [
        "memory/gpu-count",
        "note/be-careful",
        "skill/fetch-page",
        "subagent/critic",
    ]
    h = daemon.harness
    assert h.get("note", "be-careful").content.strip() == "Check inputs first."
    skill = h.get("skill", "fetch-page")
    assert skill.metadata["entrypoint"] == "json:dumps" and skill.title == "Fetch a page"
    assert h.subagent("critic")[1] == {"model": "scripted/echo"}
    assert h.history("memory", "gpu-count")[0]["reason"].startswith("imported from a Prime Agent")
    # Importing again skips what exists.
    again = json.loads(
        (
            await jp_fetch(
                "api",
                "prime",
                "harness",
                "import",
                method="POST",
                body=json.dumps({"state": PRIME_STATE}),
            )
        ).body
    )
    assert again["created"] == [] and len(again["skipped"]) == 4

    out = Path(daemon.root_dir) / "export"
    await jp_fetch(
        "api", "prime", "harness", "export", method="POST", body=json.dumps({"path": "export"})
    )
    # Paths a request names stay under the server root, and out of the daemon's store.
    for bad in (str(tmp_path / "elsewhere"), "../elsewhere", ".prime/harness"):
        for route in ("export", "import"):
            code, body = await fetch_error(
                jp_fetch(
                    "api", "prime", "harness", route, method="POST", body=json.dumps({"path": bad})
                )
            )
            assert code in (403, 404), (route, bad, body)
    assert not (tmp_path / "elsewhere").exists()
    assert (
        (out / "skills" / "fetch-page" / "SKILL.md")
        .read_text()
        .startswith("---\nname: fetch-page\n")
    )
    state = json.loads((out / "harness_state.json").read_text())
    assert state["entries"]["skill"]["fetch-page"]["reference"] == {
        "type": "python",
        "import": "json",
        "callable": "dumps",
    }
    # The exported folder of SKILL.md files imports into a fresh scope.
    from prime_kernel.harness import Harness, interop

    fresh = Harness(project_dir=str(tmp_path / "fresh"), global_dir=str(tmp_path / "g2"))
    assert interop.import_path(fresh, out / "skills")["created"] == ["skill/fetch-page"]
    code, body = await fetch_error(
        jp_fetch(
            "api",
            "prime",
            "harness",
            "import",
            method="POST",
            body=json.dumps({"state": {"schema": 1, "entries": {"tool": {}}}}),
        )
    )
    assert code == 400 and "keyed by prompt, memory, skill" in body["message"]
