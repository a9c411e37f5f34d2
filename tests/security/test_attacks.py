"""The attacker suite: agent code tries what the red team did (review red-team-ae25e64 §5),
from inside a real agent kernel of a real server, in each sandbox mode.

Each attack is a scripted agent turn whose cell runs the attack and whose next turn answers
the findings; the test asserts that what the mode claims to protect (docs/sandbox.md) held,
and, where a mode does not claim something, that the exposure the docs state is real, so the
docs stay true.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from prime_kernel.daemon.access import TokenRegistry
from prime_kernel.protocol.requests import SessionRequest
from tests.conftest import RAW_REQUEST, wait_for
from tests.procs import descendants

# Runs in the agent: what it can learn about other processes, kernels, the server and the
# store. Leaves `found`.
RECON = r"""
import glob, json, os, re, sqlite3
found = {"self": os.getpid(), "environ": {}, "cmdline": {}, "refused": {}}
own_file = None
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == os.getpid():
        continue
    for part in ("environ", "cmdline"):
        try:
            data = open(f"/proc/{p}/{part}", "rb").read().decode("utf-8", "replace")
        except OSError as e:
            found["refused"].setdefault(part, []).append(int(p))
            continue
        found[part][p] = data
# Environment, memory and descriptors of every other kernel of this server it can see.
found["kernels"] = {}
for p, cmd in found["cmdline"].items():
    argv = cmd.split("\x00")
    if os.path.basename(argv[0]).startswith("python") and RUNTIME in cmd:
        out = found["kernels"][p] = {}
        for part in ("environ", "mem", "fd"):
            try:
                if part == "fd":
                    os.readlink(f"/proc/{p}/fd/0")
                else:
                    open(f"/proc/{p}/{part}", "rb").read(1)
                out[part] = "read"
            except OSError as e:
                out[part] = type(e).__name__
with open("/proc/self/cmdline", "rb") as f:
    own_argv = f.read().split(b"\0")
own_file = own_argv[own_argv.index(b"-f") + 1].decode()
# Connection files: in the runtime folder, and wherever other kernels' command lines say.
from jupyter_core.paths import jupyter_runtime_dir
runtime = jupyter_runtime_dir()
files = set(glob.glob(os.path.join(runtime, "kernel-*.json")))
for cmd in found["cmdline"].values():
    files.update(re.findall(r"-f\x00([^\x00]+\.json)", cmd))
found["connection_files"] = {}
for path in files - {own_file}:
    try:
        found["connection_files"][path] = json.load(open(path))["key"]
    except (OSError, ValueError) as e:
        found["connection_files"][path] = type(e).__name__
found["jpserver"] = {}
for path in glob.glob(os.path.join(RUNTIME, "jpserver-*.json")) + glob.glob(
    os.path.join(runtime, "jpserver-*.json")
):
    try:
        # Its hash: the daemon scrubs the token itself out of anything an agent hands it.
        token = json.load(open(path)).get("token", "")
        found["jpserver"][path] = __import__("hashlib").sha256(token.encode()).hexdigest()
    except OSError as e:
        found["jpserver"][path] = type(e).__name__
# The store: open it for writing and take the write lock.
try:
    db = sqlite3.connect(f"file:{STORE}/prime.sqlite3?mode=rw", uri=True, timeout=0.1)
    db.execute("BEGIN IMMEDIATE")
    db.execute("ROLLBACK")
    db.close()
    found["store"] = "locked"
except sqlite3.Error as e:
    found["store"] = f"{type(e).__name__}: {e}"
try:
    found["store_listing"] = os.listdir(STORE)
except OSError as e:
    found["store_listing"] = type(e).__name__
try:
    found["home"] = open(CANARY).read()
except OSError as e:
    found["home"] = type(e).__name__
with open("/proc/self/status") as f:
    status = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
found["caps"] = status["CapEff"].strip(), status["CapBnd"].strip()
found["no_new_privs"] = status.get("NoNewPrivs", "").strip()
try:
    found["own_environ"] = open("/proc/self/environ", "rb").read().decode("utf-8", "replace")
except PermissionError:  # a non-dumpable process of a uid of its own: not even itself
    found["own_environ"] = "PermissionError"
"""


@pytest.fixture
def minted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every token the daemon mints during the test (the ones an attacker would want)."""
    tokens: list[str] = []
    mint = TokenRegistry.mint

    def recording(self: TokenRegistry, kernel_id: str, *, notebook: bool = False) -> str:
        token = mint(self, kernel_id, notebook=notebook)
        tokens.append(token)
        return token

    monkeypatch.setattr(TokenRegistry, "mint", recording)
    return tokens


@pytest.fixture
def canary(jp_home_dir: Path) -> Path:
    path = jp_home_dir / ".secret-canary"
    path.write_text("the user's own file")
    return path


@pytest.fixture
def provider_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A provider key in the server's environment (set before the server starts)."""
    key = "sk-provider-key-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return key


def leaks(text: str, secrets: list[str]) -> list[str]:
    return [s for s in secrets if s and s in text]


async def test_recon(
    provider_key,
    prime_mode,
    daemon,
    attack,
    minted,
    canary,
    jp_serverapp,
    jp_runtime_dir,
    user_kernel,
):
    # Another Prime kernel besides the attacker: a person's notebook on the Prime kernel.
    await (await user_kernel()).value("1")
    jp_serverapp.write_server_info_file()  # as a running server does
    code = (
        f"RUNTIME = {str(jp_runtime_dir)!r}\nSTORE = {str(daemon.store_dir)!r}\n"
        f"CANARY = {str(canary)!r}\n" + RECON
    )
    found = await attack(code)
    server_token = jp_serverapp.identity_provider.token
    secrets = [*minted, server_token]
    environs = " ".join(found["environ"].values())
    cmdlines = " ".join(found["cmdline"].values())

    # Both modes: no capability token in any environment or command line it can read, its
    # own included; no capabilities; no new privileges.
    assert not leaks(environs + cmdlines + found["own_environ"], minted)
    # The provider key the server has is not in the agent's environment.
    assert provider_key not in found["own_environ"]
    assert found["caps"] == ["0000000000000000", "0000000000000000"]
    assert found["no_new_privs"] == "1"
    # Other Prime kernels' environment, memory and descriptors are closed to it.
    for pid, parts in found["kernels"].items():
        assert set(parts.values()) == {"PermissionError"}, (pid, parts)

    if prime_mode == "bwrap":
        # Only its own sandbox in /proc: bwrap's init, the placeholder a forked kernel joined
        # the sandbox by (both with the kernel's own environment, checked for secrets below)
        # and the kernel.
        assert {int(p) for p in found["environ"]} <= {1, 2}
        assert found["kernels"] == {}
        assert not leaks(environs + cmdlines, secrets)
        # No runtime folder, no connection file but its own, no server file, no store.
        assert found["connection_files"] == {}
        assert found["jpserver"] == {}
        assert found["store"].startswith("OperationalError") and found["store_listing"] == []
        assert found["home"] == "FileNotFoundError"
    else:
        # What docs/sandbox.md says this mode does not protect: the same OS user reads the
        # runtime folder (the server's token, every kernel's connection file). The store's
        # files are reachable too, but the daemon holds the database exclusively: it can
        # neither be read nor locked from outside.
        assert found["kernels"]  # it sees the other kernel, though it cannot read it
        token_hash = hashlib.sha256(server_token.encode()).hexdigest()
        assert token_hash in found["jpserver"].values(), found["jpserver"]
        assert any(len(key) > 8 for key in found["connection_files"].values())
        assert found["store"] == "OperationalError: database is locked"
        assert found["home"] == "the user's own file"


async def test_another_sessions_routes(
    prime_mode, daemon, attack, script, jp_http_port, jp_base_url
):
    # A victim: another user's root session, still running.
    victim = await daemon.admission.create_session(
        SessionRequest("victim", model=script([{"code": "import time\ntime.sleep(30)"}]))
    )
    code = RAW_REQUEST + (
        "import json, urllib.request, urllib.error\n"
        f"victim = {victim['id']!r}\n"
        "found = {\n"
        "  'get': raw_request('GET', f'sessions/{victim}')[0],\n"
        "  'cancel': raw_request('DELETE', f'sessions/{victim}')[0],\n"
        "  'wait': raw_request('GET', f'sessions/{victim}/wait?timeout=0')[0],\n"
        "  'forged_token': raw_request('GET', 'whoami', token='x' * 43)[0],\n"
        "}\n"
        "def rest(path):\n"
        f"    url = 'http://127.0.0.1:{jp_http_port}' + path\n"
        "    try:\n"
        "        return urllib.request.urlopen(url, timeout=5).status\n"
        "    except urllib.error.HTTPError as e:\n"
        "        return e.code\n"
        "    except OSError as e:\n"
        "        return type(e).__name__\n"
        f"base = {jp_base_url.rstrip('/')!r}\n"
        "found['user_api'] = [rest(base + '/api/prime/sessions'), rest(base + '/api/kernels')]\n"
    )
    found = await attack(code)
    assert found["get"] == 403 and found["cancel"] == 403 and found["wait"] == 403
    assert found["forged_token"] == 401
    assert all(status in (403, "URLError") for status in found["user_api"]), found
    assert daemon.listing.session_json(victim["id"])["state"] in (
        "ADMITTED",
        "RUNNING",
    )  # untouched
    await daemon.runs.cancel(victim["id"])


async def test_a_pool_kernels_token_makes_no_phantom_session(prime_mode, daemon):
    # Stolen from inside a pool kernel that serves no session yet.
    runner = await daemon.custody.pool.start_kernel()
    try:
        result = await runner.execute(
            RAW_REQUEST + "print(raw_request('GET', 'whoami')[0])\n"
            "import prime_kernel.kernel.client as c\nprint(c.credentials()[1])"
        )
        status, token = result.outputs[0]["text"].split()
        assert status == "403"
        assert daemon.tokens.kernel_for(token) == runner.kernel_id
        assert not [r for r in daemon.registry if not r.is_agent]
    finally:
        await daemon.custody.pool.discard(runner)


async def test_a_pickle_bomb_in_an_answer_runs_nothing(
    prime_mode, daemon, user_kernel, script, jp_root_dir
):
    marker = jp_root_dir / "pwned"
    bomb = (
        "import os\n"
        "class Bomb:\n"
        "    def __reduce__(self):\n"
        f"        return (os.system, ('touch {marker}',))\n"
        "answer(Bomb())"
    )
    model = script([{"code": bomb}])
    nb = await user_kernel()
    result = await nb.run(f"h = rlm('bomb', model={model!r})\nh.result(timeout=60)")
    error = next(o for o in result.outputs if o["output_type"] == "error")
    assert error["ename"] == "UnpicklingRefused"
    assert "posix.system" in error["evalue"] and "trusted=True" in error["evalue"]
    assert not marker.exists()
    # The same bomb as a context: the child refuses to load it and says why.
    await nb.run(bomb.replace("answer(Bomb())", ""))
    result = await nb.run(
        f"h2 = rlm('ctx', context=Bomb(), model={model!r})\nh2.result(timeout=60)"
    )
    error = next(o for o in result.outputs if o["output_type"] == "error")
    assert error["ename"] == "ChildFailed" and "refused to unpickle" in error["evalue"]
    assert not marker.exists()
    # For a child the person trusts, trusted=True is the way (and it does run the pickle).
    await nb.run("h.result(trusted=True)")
    await wait_for(marker.exists, 10)


async def test_no_tcp_port_for_prime_kernels(prime_mode, daemon, user_kernel, script):
    # A person's Prime notebook, an agent that stays up (persistent), a pool kernel that
    # serves no session (the tests' pool keeps none warm: one started as the pool does).
    nb = await user_kernel()
    model = script([{"code": "answer(1)"}])
    assert await nb.value(f"rlm('stay', model={model!r}, persistent=True).result()") == "1"
    spare = await daemon.custody.pool.start_kernel()
    manager = daemon.kernel_manager
    kernels = list(manager.list_kernel_ids())
    assert len(kernels) >= 3

    def pids(kernel_id: str) -> list[int]:
        pid = manager.get_kernel(kernel_id).provisioner.pid
        return [pid, *descendants(pid)]

    # A kernel that just started binds its sockets in a moment.
    await wait_for(lambda: all(_socket_inodes(pids(k)) for k in kernels), 60)
    listening = _listening_inodes()
    for kernel_id in kernels:
        assert manager.get_kernel(kernel_id).transport == "ipc"
        sockets = _socket_inodes(pids(kernel_id))
        assert not sockets & listening.keys(), [listening[i] for i in sockets & listening.keys()]
    await daemon.custody.pool.discard(spare)


async def test_store_is_private(prime_mode, daemon):
    store = Path(daemon.store_dir)
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    for name in ("prime.sqlite3", "prime.sqlite3-wal", "prime.sqlite3-shm"):
        if (store / name).exists():
            assert stat.S_IMODE((store / name).stat().st_mode) == 0o600, name


async def test_the_mode_is_reported(prime_mode, daemon, jp_fetch):
    status = json.loads((await jp_fetch("api", "prime", "status")).body)
    assert status["sandbox"]["mode"] == prime_mode
    assert status["sandbox"]["protects"] and status["sandbox"]["exposes"]


def _socket_inodes(pids: list[int]) -> set[str]:
    out = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    out.add(link[8:-1])
        except OSError:
            continue
    return out


def _listening_inodes() -> dict[str, str]:
    """Inodes of listening TCP sockets, with their local address."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    out[fields[9]] = fields[1]
    return out
