"""Per-kernel caps, hit for real from inside an agent kernel: a fork bomb, a 20 GiB shared
mapping, a full /tmp and /dev/shm, a file past its size limit. Each ends in its own cell with a
clear error; the server and another session run on (review red-team-a982054, finding 10: a
shared 20 GiB mmap succeeded, /tmp and /dev/shm were unbounded, 600 processes started because
the agent ran as root). With the server as root, each agent kernel is a host uid of its own."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from prime_kernel.daemon.sandbox import Sandbox
from prime_kernel.protocol.requests import SessionRequest
from tests.conftest import cell_runs, events, server_config, until_opened, wait_for

pytestmark = pytest.mark.skipif(
    Sandbox(mode="auto").probe().mode != "bwrap", reason="bubblewrap does not work here"
)

LIMITS = {"process_limit": 64, "address_space_limit": 8 << 30, "file_size_limit": 32 << 20}
SIZES = {"tmp_size": 16 << 20, "shm_size": 8 << 20}

# Uids no other server on the machine hands out (they share one range by default, and a uid
# given back is the next one any of them takes): a process of this range is this test's.
OWN_UIDS = {"first_uid": 100_000 + os.getpid() * 8, "uids": 8}


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    # An ended session's kernel goes at once (none kept for co-working), and its sandbox
    # with it; no kernel is started ahead, so none can take the bomb's uid once it is given
    # back (the lowest free uid goes first) and pass for a survivor of the bomb.
    return {**prime_config, "keep_root_kernel": 0, "pool_size": 0}


@pytest.fixture(params=[True, False], ids=["forked", "exec"])
def jp_server_config(request: pytest.FixtureRequest, prime_config: dict[str, Any]) -> Config:
    return server_config(
        prime_config,
        Sandbox={"mode": "bwrap", **OWN_UIDS},
        KernelLimits=LIMITS,
        SandboxMounts=SIZES,
        LocalLauncher={"fork": request.param},
    )


# Runs in the agent: every cap hit once, each caught and reported.
BOMBS = r"""
import errno, json, mmap, os, time
found = {"uid": os.getuid()}
# A real fork bomb: every child forks on, until the process limit stops them all.
children = 0
try:
    while True:
        if os.fork() == 0:
            try:
                while True:
                    if os.fork() == 0:
                        time.sleep(60)
                        os._exit(0)
            except OSError:
                time.sleep(60)
                os._exit(0)
        children += 1
except OSError as e:
    found["fork"] = [children, e.errno, type(e).__name__]
# 20 GiB of shared memory, which RLIMIT_DATA does not count.
try:
    m = mmap.mmap(-1, 20 << 30, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    found["mmap"] = "mapped"
except OSError as e:
    found["mmap"] = [e.errno, type(e).__name__]
def fill(path, mb):
    try:
        with open(path, "wb") as f:
            for _ in range(mb):
                f.write(b"x" * (1 << 20))
                f.flush()
        return "written"
    except OSError as e:
        return [e.errno, type(e).__name__]
    finally:
        if os.path.exists(path):
            os.unlink(path)
found["tmp"] = fill("/tmp/big", 40)
found["shm"] = fill("/dev/shm/big", 40)
found["file"] = fill("big.bin", 64)
"""


async def test_caps_end_in_their_own_cell(daemon, script, jp_fetch) -> None:
    other_model = script([{"code": "import time\ntime.sleep(3)\nanswer(2)"}])
    other = await daemon.admission.create_session(SessionRequest("meanwhile", model=other_model))
    bomber = await daemon.admission.create_session(
        SessionRequest(
            "bombs", model=script([{"code": BOMBS}, {"code": "answer(json.dumps(found))"}])
        )
    )
    # The server answers all along.
    for _ in range(10):
        assert (await jp_fetch("api", "prime", "sessions")).code == 200
        await asyncio.sleep(0.3)  # sampled over the bombs' 3 s, not a wait for a state
    done = await daemon.runs.wait(bomber["id"], 180)
    assert done["state"] == "DONE", done.get("error")
    assert (await daemon.runs.wait(other["id"], 120))["state"] == "DONE"
    found = json.loads(daemon.listing.session_json(bomber["id"])["answer_repr"].strip("'"))

    uid = found["uid"]
    if os.geteuid() == 0:  # a host uid of its own, in Sandbox.first_uid's range
        sandbox = Sandbox(parent=daemon)
        assert sandbox.first_uid <= uid < sandbox.first_uid + sandbox.uids
    assert found["fork"][2] == "BlockingIOError" and found["fork"][0] < 64, found
    assert found["mmap"] == [12, "OSError"], found  # ENOMEM: RLIMIT_AS
    assert found["tmp"] == [28, "OSError"] and found["shm"] == [28, "OSError"], found
    assert found["file"] == [27, "OSError"], found  # EFBIG: File too large

    # Its kernel is gone with the session, and every process of the bomb with it: the
    # kernel's uid is given back (its kernel leaves the kernel manager) only once no process
    # of it runs (a zombie has ended: only its parent's wait is left).
    cells = await events(daemon, bomber["id"], "cell")
    assert all(c["data"]["status"] == "ok" for c in cells)
    await daemon.store.flush()

    def running(uid: int) -> list[int]:
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            if int(fields["Uid"].split()[0]) == uid and fields["State"].split()[0] not in "ZX":
                out.append(int(pid))
        return out

    if os.geteuid() == 0:
        kernel_id = daemon.registry.get(bomber["id"]).kernel_id
        assert kernel_id is not None and daemon.kernel_manager is not None
        kernels = daemon.kernel_manager
        await wait_for(lambda: kernel_id not in kernels, 60, "the bomb's kernel shut down")
        assert running(uid) == []


async def test_each_kernel_has_a_uid_of_its_own(daemon, script) -> None:
    if os.geteuid() != 0:
        pytest.skip("uids of their own only when the server runs as root")
    # Both kernels run at once (a uid goes back once its kernel is gone): each answers once
    # both run their cell.
    gate = Path(daemon.root_dir) / "both-run"
    model = script([{"code": until_opened(gate, "answer(os.getuid())")}])
    sessions = [
        await daemon.admission.create_session(SessionRequest(f"uid {i}", model=model))
        for i in range(2)
    ]
    for s in sessions:
        await cell_runs(daemon, s["id"], 120)
    gate.touch()
    uids = set()
    for s in sessions:
        assert (await daemon.runs.wait(s["id"], 120))["state"] == "DONE"
        uids.add(daemon.listing.session_json(s["id"])["answer_repr"])
    assert len(uids) == 2 and "0" not in uids, uids
