"""/api/prime/sessions/{id}/export (GET downloads, POST writes), and export() from a kernel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from .conftest import finish, read


async def _error(jp_fetch, *parts, **params) -> tuple[int, str]:
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch(*parts, params=params)
    body = json.loads(info.value.response.body)
    return info.value.code, body["message"]


def _write(jp_fetch, *parts, **body):
    return jp_fetch(*parts, method="POST", body=json.dumps(body))


async def _write_error(jp_fetch, *parts, **body) -> tuple[int, str]:
    with pytest.raises(HTTPClientError) as info:
        await _write(jp_fetch, *parts, **body)
    return info.value.code, json.loads(info.value.response.body)["message"]


async def test_download_and_write_under_root(daemon, script, jp_fetch, jp_root_dir):
    record = await finish(daemon, "say hi", script([{"code": "print('hi')"}, {"text": "done"}]))
    sid = record["id"]
    url = ("api", "prime", "sessions", sid, "export")

    resp = await jp_fetch(*url)
    assert resp.headers["Content-Type"] == "application/x-ipynb+json"
    assert resp.headers["Content-Disposition"] == f'attachment; filename="{sid}.ipynb"'
    assert json.loads(resp.body)["metadata"]["prime"]["id"] == sid

    resp = await _write(jp_fetch, *url, path="out/run.ipynb")
    assert resp.code == 201
    assert json.loads(resp.body) == {
        "session_id": sid,
        "path": "out/run.ipynb",
        "files": ["out/run.ipynb"],
    }
    first = read(jp_root_dir / "out" / "run.ipynb")
    assert first.cells[-1].metadata.prime.kind == "summary"

    assert await _write_error(jp_fetch, *url, path="out/run.ipynb") == (
        409,
        "out/run.ipynb already exists (export with force to replace)",
    )
    resp = await _write(jp_fetch, *url, path="out/run.ipynb", force=True)
    assert resp.code == 201

    resp = await _write(jp_fetch, *url, path="tree", subtree=True)
    assert json.loads(resp.body)["files"] == [f"tree/{sid}.ipynb"]


async def test_bad_requests_write_nothing(daemon, script, jp_fetch, jp_root_dir):
    record = await finish(daemon, "say hi", script([{"text": "hi"}]))
    url = ("api", "prime", "sessions", record["id"], "export")
    before = sorted(p.name for p in jp_root_dir.iterdir())

    code, message = await _write_error(jp_fetch, *url, path="../escape.ipynb")
    assert code == 403 and "outside the server root" in message
    code, message = await _write_error(jp_fetch, *url, path="/tmp/escape.ipynb")
    assert code == 403 and "outside the server root" in message
    assert not Path("/tmp/escape.ipynb").exists()
    code, message = await _write_error(jp_fetch, *url, path=".prime/prime.sqlite3.ipynb")
    assert code == 403 and "inside the daemon's store" in message
    code, message = await _write_error(jp_fetch, *url, path="notes.txt")
    assert code == 400 and "does not end in .ipynb" in message
    code, message = await _write_error(jp_fetch, *url, subtree=True)
    assert code == 400 and "'path'" in message
    code, message = await _write_error(jp_fetch, *url, path="x.ipynb", force="maybe")
    assert code == 400 and "'force' must be true or false" in message
    code, message = await _error(jp_fetch, *url, path="x.ipynb")
    assert code == 400 and "POST" in message
    (jp_root_dir / "a-file").write_text("not a folder")
    code, message = await _write_error(jp_fetch, *url, path="a-file/x.ipynb")
    assert code == 400 and "a-file is not a folder" in message
    code, message = await _error(jp_fetch, "api", "prime", "sessions", "nope", "export")
    assert code == 404 and message == "no session nope"
    code, _ = await _write_error(
        jp_fetch, "api", "prime", "sessions", "nope", "export", path="y.ipynb"
    )
    assert code == 404

    assert sorted(p.name for p in jp_root_dir.iterdir()) == sorted([*before, "a-file"])


async def test_export_from_kernels(daemon, script, user_kernel, jp_root_dir):
    child_model = script([{"code": "print('child ran')"}, {"text": "ok"}])
    nb = await user_kernel()
    await nb.value(f"import os; os.chdir({str(jp_root_dir)!r})")  # a notebook's own folder
    await nb.value(f"h = rlm('work', model={child_model!r}); h.result(timeout=60)")
    child_id = (await nb.value("h.session_id")).strip("'")

    written = await nb.value("h.export('child.ipynb')")
    assert written.strip("'") == str(jp_root_dir / "child.ipynb")
    child_nb = read(jp_root_dir / "child.ipynb")
    assert child_nb.metadata.prime.id == child_id

    # The notebook's own session: its children are linked and, with subtree, written.
    folder = (await nb.value("export(subtree=True)")).strip("'")
    files = sorted(p.name for p in Path(folder).iterdir())
    assert f"{child_id}.ipynb" in files and len(files) == 2
    error = await nb.run("export(subtree=True)")
    assert "already exists" in error.outputs[0]["evalue"]

    # An agent may export itself and its descendants only, and only under the root.
    agent_model = script(
        [
            {
                "code": "from prime_kernel.kernel.primitives import client\n"
                "me = client().request('GET', 'whoami')\n"
                "print(export('me.ipynb'))\n"
                "export('parent.ipynb', session_id=me['parent_id'])"
            },
            {"code": "export('/tmp/elsewhere.ipynb')"},
            {"text": "done"},
        ]
    )
    await nb.value(f"g = rlm('try', model={agent_model!r}); g.result(timeout=60)")
    agent_id = (await nb.value("g.session_id")).strip("'")
    cells = [e["data"] for e in await daemon.listing.events(agent_id) if e["kind"] == "cell"]
    assert cells[0]["outputs"][0]["text"].strip() == str(jp_root_dir / "me.ipynb")
    assert cells[0]["outputs"][1]["ename"] == "Forbidden"
    assert "or one of its descendants" in cells[0]["outputs"][1]["evalue"]
    assert cells[1]["outputs"][0]["ename"] == "Forbidden"
    assert "outside the server root" in cells[1]["outputs"][0]["evalue"]
    assert not (jp_root_dir / "parent.ipynb").exists()
    assert not Path("/tmp/elsewhere.ipynb").exists()
