"""`prime-agent export`: offline from the store, or through a running daemon for its secrets."""

from __future__ import annotations

import asyncio
import json

from prime_kernel.cli.main import main

from .conftest import by_kind, code_cells, finish, read


async def cli(root, *args: str) -> int:
    # In a thread: with a daemon running on this loop the CLI calls back into it over HTTP.
    return await asyncio.to_thread(main, ["--root", str(root), "export", *args])


async def test_export_through_the_running_daemon(
    daemon, script, jp_root_dir, jp_serverapp, tmp_path, capsys
):
    child = script([{"code": "print(len(context))"}, {"text": "counted"}])
    model = script(
        [
            {"code": f"h = rlm('count', context='abc', model={child!r})\nh.result(timeout=60)"},
            {"text": "done"},
        ]
    )
    record = await finish(daemon, "delegate", model)
    sid, child_id = record["id"], record["children"][0]
    # The daemon holds its store: the CLI finds it (as with `jupyter lab`) and reads through it.
    jp_serverapp.write_server_info_file()

    out = tmp_path / "one.ipynb"
    assert await cli(jp_root_dir, sid, "-o", str(out)) == 0
    assert capsys.readouterr().out.split() == [str(out)]
    nb = read(out)
    assert nb.metadata.prime.id == sid and f"]({child_id}.ipynb)" in by_kind(nb, "child")[0].source

    assert await cli(jp_root_dir, sid, "-o", str(out)) == 1
    # The CLI names its own option for replacing.
    assert f"{out} already exists (add --force to replace it)" in capsys.readouterr().err
    assert await cli(jp_root_dir, sid, "-o", str(out), "--force") == 0

    folder = tmp_path / "tree"
    assert await cli(jp_root_dir, sid, "-o", str(folder), "--subtree", "--with-context") == 0
    names = sorted(p.name for p in folder.iterdir())
    # A JSON-able context is written as JSON.
    assert names == sorted([f"{sid}.ipynb", f"{child_id}.ipynb", f"{child_id}.context.json"])
    assert json.loads((folder / f"{child_id}.context.json").read_text()) == "abc"
    child_nb = read(folder / f"{child_id}.ipynb")
    assert code_cells(child_nb)[0].metadata.prime.kind == "context"
    assert await cli(jp_root_dir, sid, "-o", str(folder), "--subtree") == 1
    assert f"{folder} already exists (add --force to replace it)" in capsys.readouterr().err

    # A folder with anything an export did not write is never replaced, even with --force.
    (folder / "mine.txt").write_text("keep me")
    assert await cli(jp_root_dir, sid, "-o", str(folder), "--subtree", "--force") == 1
    assert "mine.txt, which an export did not write" in capsys.readouterr().err
    assert (folder / "mine.txt").read_text() == "keep me"
    (folder / "mine.txt").unlink()
    assert await cli(jp_root_dir, sid, "-o", str(folder), "--subtree", "--force") == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{sid}.ipynb", f"{child_id}.ipynb"])


async def test_bad_input_leaves_nothing_behind(
    daemon, script, jp_root_dir, jp_serverapp, tmp_path, capsys
):
    record = await finish(daemon, "hi", script([{"text": "hi"}]))
    jp_serverapp.write_server_info_file()
    work = tmp_path / "work"
    work.mkdir()
    assert await cli(jp_root_dir, "nope", "-o", str(work / "x.ipynb")) == 1
    assert "no session nope" in capsys.readouterr().err

    blocker = work / "file"
    blocker.write_text("")
    assert await cli(jp_root_dir, record["id"], "-o", str(blocker / "x.ipynb")) == 1
    assert f"{blocker} is not a folder" in capsys.readouterr().err
    assert await cli(jp_root_dir, record["id"], "-o", str(blocker / "t"), "--subtree") == 1
    assert sorted(p.name for p in work.iterdir()) == ["file"]

    assert await cli(work, record["id"]) == 2
    assert "no Prime store" in capsys.readouterr().err


async def test_export_through_running_daemon_redacts_its_secrets(
    daemon, script, jp_serverapp, jp_root_dir, tmp_path
):
    # The running daemon holds the store and knows the secrets: the CLI exports through it.
    server_token = jp_serverapp.identity_provider.token
    model = script([{"code": f"print({server_token!r})"}, {"text": "ok"}])
    record = await finish(daemon, "leak", model)
    # The daemon never even stores the token (it scrubs what it records) ...
    cell = next(e for e in await daemon.listing.events(record["id"]) if e["kind"] == "cell")["data"]
    assert cell["outputs"][0]["text"].strip() == "[REDACTED]"

    jp_serverapp.write_server_info_file()  # what `jupyter lab` does: the CLI now finds it
    out = tmp_path / "via-server.ipynb"
    assert await cli(jp_root_dir, record["id"], "-o", str(out)) == 0
    text = out.read_text()
    assert server_token not in text and "[REDACTED]" in text
    read(out)
