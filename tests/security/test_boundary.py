"""The trust boundary, round two (review red-team-a982054): attacks an agent makes from inside
a real agent kernel of a real server, in each sandbox mode — a folder swapped for a link to
outside the root while exports run, a pickle that runs code when an exported notebook is
opened, a 30-byte answer that would allocate a GiB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import RAW_REQUEST

# Runs in the agent: a folder `race` and a link `racelink` to a folder outside the root,
# swapped in one step (renameat2 RENAME_EXCHANGE) by a thread as fast as it can, while the
# agent asks the daemon N times to export into `race/` (a notebook, or a subtree folder).
RACE = r"""
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs("race", exist_ok=True)
if not os.path.lexists("racelink"):
    os.symlink(OUTSIDE, "racelink")
stop = False
swaps = 0
def swap():
    global swaps
    while not stop:
        if libc.renameat2(-100, b"race", -100, b"racelink", 2) == 0:
            swaps += 1
thread = threading.Thread(target=swap, daemon=True)
thread.start()
codes = {}
said = {}
for i in range(N):
    body = {"path": "race/pwn.ipynb", "force": True}
    if i % 2:
        body = {"path": "race/tree", "force": True, "subtree": True}
    status, reply = raw_request("POST", "export", body)
    codes[str(status)] = codes.get(str(status), 0) + 1
    if status != 201:
        said.setdefault(str(status), (reply or {}).get("message"))
stop = True
thread.join()
found = {"codes": codes, "swaps": swaps, "said": said}
"""


async def race(attack, outside: Path, n: int) -> tuple[dict[str, int], int, list[str]]:
    """`n` exports racing the swap; (status counts, swaps made, files found outside)."""
    outside.mkdir(exist_ok=True)
    (outside / "existing.ipynb").write_text("the user's own file")
    found = await attack(f"OUTSIDE = {str(outside)!r}\nN = {n}\n" + RAW_REQUEST + RACE)
    files = sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
    return found["codes"], found["swaps"], files


async def test_no_export_escapes_the_root_while_folders_are_swapped(
    prime_mode, daemon, attack, tmp_path
):
    codes, swaps, outside = await race(attack, tmp_path / "outside", 300)
    assert outside == ["existing.ipynb"]  # nothing written there, nothing replaced
    assert (tmp_path / "outside" / "existing.ipynb").read_text() == "the user's own file"
    assert swaps > 300, swaps  # the race really ran
    assert sum(codes.values()) == 300
    assert not [c for c in codes if c.startswith("5")], codes
    # Through the real folder the exports land (in whichever name it has by then); through
    # the link they are refused.
    assert codes.get("201", 0) > 0 and codes.get("403", 0) > 0, codes
    exported = list(Path(daemon.root_dir).glob("race*/pwn.ipynb"))
    assert exported and all(
        p.resolve().is_relative_to(Path(daemon.root_dir).resolve()) for p in exported
    )


# Runs in the agent: a child whose context is a pickle that runs a command when loaded, sent
# as a "list" (the type a sender claims is its own word).
POISON = r"""
import os, pickle
class Bomb:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))
status, blob = raw_request("POST", "blobs?what=context", pickle.dumps(Bomb()))
status, child = raw_request(
    "POST", "sessions",
    {"prompt": "use the context", "context_blob": blob["blob_id"], "context_type": "list",
     "model": MODEL},
)
found = {"child": child["id"]}
"""


async def test_an_exported_notebook_never_unpickles_what_an_agent_chose(
    prime_mode, daemon, attack, script, jp_fetch, jp_root_dir, tmp_path
):
    marker = tmp_path / "pwned"
    child_model = script([{"text": "done"}])
    found = await attack(
        f"MARKER = {str(marker)!r}\nMODEL = {child_model!r}\n" + RAW_REQUEST + POISON
    )
    child = found["child"]
    parent = daemon.registry.get(child).parent_id
    await daemon.runs.wait(child, 60)
    assert not marker.exists()  # the child refused to load it
    await jp_fetch(
        "api",
        "prime",
        "sessions",
        parent,
        "export",
        method="POST",
        body=json.dumps({"path": "tree", "subtree": True, "with_context": True}),
    )
    tree = jp_root_dir / "tree"
    for path in tree.glob("*.ipynb"):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                assert "pickle.load" not in "".join(cell["source"]), path
    notebook = json.loads((tree / f"{child}.ipynb").read_text())
    loader = next(c for c in notebook["cells"] if c["id"] == "prime-context-load")
    source = "".join(loader["source"])
    assert "safe_pickle import load" in source and f"{child}.context.pkl" in source
    intro = next(c for c in notebook["cells"] if c["id"] == "prime-context")
    assert "posix.system" in "".join(intro["source"])  # what the pickle names, said plainly
    # A person opens the notebook and runs the cell, outside any sandbox.
    done = subprocess.run(
        [sys.executable, "-c", source],
        cwd=tree,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode != 0 and "UnpicklingRefused" in done.stderr, done.stderr
    assert not marker.exists()


async def test_a_30_byte_answer_is_refused_by_its_parent(prime_mode, daemon, user_kernel, script):
    bomb = b"\x80\x04cbuiltins\nbytearray\nJ\x00\x00\x00\x40\x85R."
    child = script(
        [{"code": RAW_REQUEST + f"raw_request('POST', 'answer?repr=x', {bomb!r})"}, {"text": "ok"}]
    )
    nb = await user_kernel()
    peak = "import resource; resource.getrusage(resource.RUSAGE_SELF).ru_maxrss"
    before = int(await nb.value(peak))
    result = await nb.run(f"h = rlm('bomb', model={child!r})\nh.result(timeout=60)")
    error = next(o for o in result.outputs if o["output_type"] == "error")
    assert error["ename"] == "UnpicklingRefused"
    assert "more than" in error["evalue"] and "bytes" in error["evalue"]
    # The notebook kernel is still there, and never built the bomb's 1 GiB (its peak memory,
    # in KiB, grew by far less: a kernel forked from a big template starts with a high peak).
    assert int(await nb.value(peak)) - before < 256 * 1024
