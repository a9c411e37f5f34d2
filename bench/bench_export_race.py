"""Racing exports: N exports from an agent while a thread of the same agent swaps the folder they
go into with a link to outside the root (renameat2 RENAME_EXCHANGE), as fast as it can.

    python bench/bench_export_race.py [--exports 10000] [--mode bwrap|none]

One real server (the `prime-agent run` code path, pool size 1), one agent session on the
scripted provider whose cell runs the race (the attack of tests/security/test_boundary.py, at
full count). Prints how many exports were written, refused and failed, how many swaps the
thread made, the exports per second, and how many files appeared outside the root (the goal:
0, with 0 answers of 5xx). On a982054 the same race wrote 145 of 300 exports outside the root.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prime_kernel.cli.headless import serve
from prime_kernel.models import scripted
from prime_kernel.protocol.requests import SessionRequest
from tests.conftest import RAW_REQUEST
from tests.security.test_boundary import RACE


async def main(args: argparse.Namespace, app: Any, outside: Path) -> None:
    daemon = app.web_app.settings["prime_daemon"]
    print(app.web_app.settings["prime_sandbox"].describe())
    code = f"OUTSIDE = {str(outside)!r}\nN = {args.exports}\n" + RAW_REQUEST + RACE
    model = scripted.register_script(
        "race", [{"code": code}, {"code": "import json\nanswer(json.dumps(found))"}]
    )
    started = time.perf_counter()
    record = await daemon.admission.create_session(SessionRequest("race", model=model))
    done = await daemon.runs.wait(record["id"], None)
    elapsed = time.perf_counter() - started
    if done["state"] != "DONE":
        print(f"the session ended {done['state']}: {done.get('error')}")
        return
    found = json.loads(daemon.listing.session_json(record["id"])["answer_repr"].strip("'"))
    codes = found["codes"]
    escaped = sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
    print(
        f"exports: {sum(codes.values())} in {elapsed:.1f} s ({sum(codes.values()) / elapsed:.0f}/s)"
    )
    print(f"answers: {dict(sorted(codes.items()))}; swaps: {found['swaps']}")
    for code, message in sorted(found["said"].items()):
        print(f"  {code}: {message}")
    print(f"5xx answers: {sum(n for c, n in codes.items() if c.startswith('5'))}")
    print(f"files outside the root: {len(escaped)} {escaped[:5]}")


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exports", type=int, default=10_000)
    parser.add_argument("--mode", choices=["bwrap", "none"], default="bwrap")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as out:
        argv = [
            "--KernelCustody.pool_size=1",
            f"--Sandbox.mode={args.mode}",
            "--KernelCustody.cell_timeout=7200",
        ]
        serve(Path(root), argv, lambda app: main(args, app, Path(out)))


if __name__ == "__main__":
    run()
