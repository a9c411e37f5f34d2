"""An agent fills the disk under the root (a small tmpfs mounted for the test): requests that
need space get a clear 507, never a 500; the session stops once, saying the disk is full,
instead of spending its turns; and once space is freed everything works again (review
red-team-a982054, finding 6: 38 x 500, 20 turns burnt in 13 s, 'database or disk is full')."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from tests.conftest import RAW_REQUEST, events, start_session

FILL = """
import os
written = 0
try:
    with open("fill.bin", "wb") as f:
        while True:
            f.write(b"x" * (1 << 20))
            f.flush()
            written += 1
except OSError as e:
    print("the disk is full after", written, "MB:", e)
# What the red team's agent got 500s for: a snapshot upload and its answer.
print("blob:", raw_request("POST", "blobs?what=snapshot", b"x" * 100)[0])
try:
    answer("done")
except Exception as e:
    print("answer:", type(e).__name__, e)
"""


@pytest.fixture
def jp_root_dir(tmp_path: Path) -> Iterator[Path]:
    """The server root on a 64 MB tmpfs of its own (the store lives under it too)."""
    root = tmp_path / "small"
    root.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m,mode=0755", "tmpfs", str(root)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False)


async def status_of(jp_fetch: Any, *path: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    try:
        resp = await jp_fetch("api", "prime", *path, **kwargs)
        return resp.code, json.loads(resp.body or b"{}")
    except HTTPClientError as e:
        assert e.response is not None
        return e.code, json.loads(e.response.body)


async def test_a_full_disk_fails_once_and_clearly_then_recovers(
    daemon, jp_fetch, jp_root_dir, script
):
    # Twenty turns it would spend if each failure were only another turn.
    model = script([{"code": RAW_REQUEST + FILL}] + [{"code": "print('still here')"}] * 19)
    sid = await start_session(jp_fetch, "fill the disk", model=model, max_turns=20)
    record = await daemon.runs.wait(sid, 120)
    assert record["state"] == "FAILED"
    assert f"the disk under {jp_root_dir.resolve()}" in record["error"]
    assert "is full" in record["error"]
    assert record["usage"]["own"]["model_calls"] == 1, record["usage"]  # one turn, not 20
    (cell,) = await events(daemon, sid, "cell")
    shown = cell["data"]["outputs"][0]["text"]
    assert "blob: 507" in shown and "answer: InsufficientStorage" in shown, shown

    # While it is full: a clear 507 where a request needs space, never a 500.
    codes = []
    for path, body in (
        (("sessions",), {"prompt": "another", "model": model}),
        (("sessions", sid, "export"), {"path": "x.ipynb"}),
        (("harness",), {"kind": "note", "id": "n", "content": "x"}),
    ):
        code, reply = await status_of(jp_fetch, *path, method="POST", body=json.dumps(body))
        codes.append(code)
        assert code == 507, (path, code, reply)
        assert reply["error"] == "disk_full" and "is full" in reply["message"]
    # Reading still works, the store's newest writes (not committed yet) included.
    assert (await status_of(jp_fetch, "sessions", sid))[0] == 200
    code, reply = await status_of(jp_fetch, "sessions", sid, "events")
    assert code == 200 and reply["events"][-1]["data"]["state"] == "FAILED"

    # Space freed: everything works again, and what the store kept meanwhile is written.
    (jp_root_dir / "fill.bin").unlink()
    again = await start_session(jp_fetch, "after", model=script([{"code": "answer(2)"}]))
    assert (await daemon.runs.wait(again, 120))["state"] == "DONE"
    await daemon.store.flush(timeout=30)
    kinds = [e["kind"] for e in await daemon.store.events(sid)]
    assert kinds.count("cell") == 1 and kinds[-1] == "state"
