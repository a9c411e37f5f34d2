"""`prime-agent export`: offline from the store (a recorded tree loaded into it; no server, no
kernel), or through a running daemon, which holds the store and knows its secrets."""

from __future__ import annotations

import asyncio
import base64
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.cli.main import main

from .conftest import by_kind, code_cells, finish, load, read


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str, str, Any]:
    """A root folder whose store holds a root session and a child whose context is a list (a
    JSON-able one), served by no daemon: the folder, the two ids, the child's context."""
    root = tmp_path / "work"
    root.mkdir()
    recording = load(root, "context")
    sid = recording["root"]
    (child,) = [s["record"] for s in recording["sessions"] if s["record"]["parent_id"] == sid]
    context = pickle.loads(base64.b64decode(recording["blobs"][child["context_blob"]]))
    return root, sid, child["id"], context


def test_export_offline_from_the_store(
    recorded: tuple[Path, str, str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, sid, child_id, context = recorded

    def cli(*args: str) -> int:
        return main(["--root", str(root), "export", *args])

    out = tmp_path / "one.ipynb"
    assert cli(sid, "-o", str(out)) == 0
    assert capsys.readouterr().out.split() == [str(out)]
    assert read(out).metadata.prime.id == sid

    assert cli(sid, "-o", str(out)) == 1
    # The CLI names its own option for replacing.
    assert f"{out} already exists (add --force to replace it)" in capsys.readouterr().err
    assert cli(sid, "-o", str(out), "--force") == 0

    folder = tmp_path / "tree"
    assert cli(sid, "-o", str(folder), "--subtree", "--with-context") == 0
    names = sorted(p.name for p in folder.iterdir())
    # A JSON-able context is written as JSON.
    assert f"{child_id}.context.json" in names
    assert {f"{sid}.ipynb", f"{child_id}.ipynb"} <= set(names)
    assert json.loads((folder / f"{child_id}.context.json").read_text()) == context
    child_nb = read(folder / f"{child_id}.ipynb")
    assert code_cells(child_nb)[0].metadata.prime.kind == "context"
    assert cli(sid, "-o", str(folder), "--subtree") == 1
    assert f"{folder} already exists (add --force to replace it)" in capsys.readouterr().err

    # A folder with anything an export did not write is never replaced, even with --force.
    (folder / "mine.txt").write_text("keep me")
    assert cli(sid, "-o", str(folder), "--subtree", "--force") == 1
    assert "mine.txt, which an export did not write" in capsys.readouterr().err
    assert (folder / "mine.txt").read_text() == "keep me"
    (folder / "mine.txt").unlink()
    assert cli(sid, "-o", str(folder), "--subtree", "--force") == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{sid}.ipynb", f"{child_id}.ipynb"])


def test_bad_input_leaves_nothing_behind(
    recorded: tuple[Path, str, str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, sid, _, _ = recorded

    def cli(*args: str, at: Path = root) -> int:
        return main(["--root", str(at), "export", *args])

    work = tmp_path / "out"
    work.mkdir()
    assert cli("nope", "-o", str(work / "x.ipynb")) == 1
    assert "no session nope" in capsys.readouterr().err

    blocker = work / "file"
    blocker.write_text("")
    assert cli(sid, "-o", str(blocker / "x.ipynb")) == 1
    assert f"{blocker} is not a folder" in capsys.readouterr().err
    assert cli(sid, "-o", str(blocker / "t"), "--subtree") == 1
    assert sorted(p.name for p in work.iterdir()) == ["file"]

    assert cli(sid, at=work) == 2
    assert "no Prime store" in capsys.readouterr().err


async def test_export_through_running_daemon_redacts_its_secrets(
    daemon, script, jp_serverapp, jp_root_dir, tmp_path
):
    # The running daemon holds the store and knows the secrets: the CLI exports through it
    # (as it finds a `jupyter lab` of the root), a session's tree and all.
    server_token = jp_serverapp.identity_provider.token
    child = script([{"code": f"print({server_token!r})"}, {"text": "ok"}])
    model = script(
        [
            {"code": f"h = rlm('leak', model={child!r})\nh.result(timeout=60)"},
            {"text": "done"},
        ]
    )
    record = await finish(daemon, "delegate", model)
    sid, child_id = record["id"], record["children"][0]
    # The daemon never even stores the token (it scrubs what it records) ...
    cell = next(e for e in await daemon.listing.events(child_id) if e["kind"] == "cell")["data"]
    assert cell["outputs"][0]["text"].strip() == "[REDACTED]"

    jp_serverapp.write_server_info_file()  # what `jupyter lab` does: the CLI now finds it
    folder = tmp_path / "via-server"
    # In a thread: with the daemon on this loop, the CLI calls back into it over HTTP.
    argv = ["--root", str(jp_root_dir), "export", sid, "-o", str(folder), "--subtree"]
    assert await asyncio.to_thread(main, argv) == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{sid}.ipynb", f"{child_id}.ipynb"])
    text = (folder / f"{child_id}.ipynb").read_text()
    assert server_token not in text and "[REDACTED]" in text
    assert f"]({child_id}.ipynb)" in by_kind(read(folder / f"{sid}.ipynb"), "child")[0].source
