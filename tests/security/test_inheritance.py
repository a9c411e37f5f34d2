"""An agent kernel inherits nothing of the server: no descriptor but /dev/null and its own log
(the server's stdout and stderr were fds 42/45 of every kernel, readable and writable through
/proc/self/fd), and no folder of the server's bound into its sandbox (the folders on the
server's Python path, its working folder first, were bound back even inside hidden folders).
Review red-team-a982054, findings 7 and 8. Both ways a kernel starts: forked from a template,
and exec'd from its command."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from prime_kernel.daemon.sandbox import Sandbox
from tests.conftest import server_config

pytestmark = pytest.mark.skipif(
    Sandbox(mode="auto").probe().mode != "bwrap", reason="bubblewrap does not work here"
)


@pytest.fixture(params=[True, False], ids=["forked", "exec"])
def jp_server_config(request: pytest.FixtureRequest, prime_config: dict[str, Any]) -> Config:
    return server_config(
        prime_config, Sandbox={"mode": "bwrap"}, LocalLauncher={"fork": request.param}
    )


@pytest.fixture
def server_folder(jp_environ: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder the server was started from, first on its Python path (as under `python
    -m jupyter_server`), inside a folder the sandbox hides (/tmp), with a secret in it. After
    `jp_environ`, which sets PYTHONPATH to the test's own path (a folder a person names in
    PYTHONPATH is bound in: the kernel imports from it)."""
    folder = tmp_path / "server-cwd"
    folder.mkdir()
    (folder / "token.txt").write_text("the server's secret")
    monkeypatch.syspath_prepend(str(folder))
    return folder


LOOK = r"""
import os
found = {"fds": {}}
for fd in os.listdir("/proc/self/fd"):
    try:
        found["fds"][fd] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
try:
    found["canary"] = open(CANARY).read()
except OSError as e:
    found["canary"] = type(e).__name__
"""


async def test_no_descriptor_and_no_folder_of_the_servers(
    server_folder, daemon, user_kernel, script
) -> None:
    code = f"CANARY = {str(server_folder / 'token.txt')!r}\n" + LOOK
    model = script([{"code": code}, {"code": "import json\nanswer(json.dumps(found))"}])
    nb = await user_kernel()
    out = await nb.value(f"rlm('look', model={model!r}).result(timeout=120)")
    found = json.loads(eval(out))
    sid = next(r.id for r in daemon.registry if r.is_agent)
    kernel_id = daemon.listing.session_json(sid)["kernel_id"]
    log = Path(daemon.store_dir).resolve() / "logs" / "kernels" / f"{kernel_id}.log"

    fds = found["fds"]
    assert fds["0"] == "/dev/null"
    assert fds["1"] == fds["2"] == str(log)
    ours = {
        os.readlink(f"/proc/self/fd/{n}") for n in (1, 2) if os.path.exists(f"/proc/self/fd/{n}")
    }
    # Its own files (IPython's history, in its home: an empty folder of the sandbox's).
    home = os.environ["HOME"].rstrip("/") + "/"
    for fd, target in fds.items():
        kind = target.split(":", 1)[0]
        own = target in ("/dev/null", str(log)) or target.startswith(home)
        assert kind in ("socket", "pipe", "anon_inode") or own, (fd, target)
        assert target not in ours or kind in ("socket", "pipe", "anon_inode"), (fd, target)
        assert "pidfd" not in target  # nothing to signal the server with
    assert found["canary"] == "FileNotFoundError"
    assert str(server_folder) in sys.path  # it was on the server's path all along
