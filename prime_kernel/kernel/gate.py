"""The gate of an autonomous session, run in its own kernel by the daemon (a silent cell).

Running here puts a shell gate in the session's sandbox, with the agent's files, programs and
limits (see prime_kernel/daemon/autonomy.py). Each function prints one line the daemon reads:
``PRIME_GATE {json}`` with `passed`, `output`, and `exit_code`/`timed_out`/`error`. Stdlib only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import traceback
from typing import Any

from .primitives import user_namespace

MARKER = "PRIME_GATE "
# Output kept (the end: failures are reported last).
MAX_OUTPUT = 20_000
_NOT_RUN = {
    126: "the command is not executable (exit status 126)",
    127: "the command was not found (exit status 127)",
}


def _print(report: dict[str, Any]) -> None:
    print(MARKER + json.dumps(report))


def shell(command: str, timeout: float, cwd: str) -> None:
    """Run `command` with /bin/sh in `cwd`; its whole process group is killed at `timeout`."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            command,
            shell=True,
            cwd=cwd if os.path.isdir(cwd) else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as e:
        _print({"passed": False, "exit_code": None, "output": "", "error": f"cannot run: {e}"})
        return
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        out, _ = proc.communicate()
    text = (out or b"").decode("utf-8", "replace")[-MAX_OUTPUT:]
    code = proc.returncode
    error = None
    if timed_out:
        error = f"the gate did not finish in {timeout:g} s: it was killed"
    elif code in _NOT_RUN:
        error = _NOT_RUN[code]
    _print(
        {
            "passed": code == 0 and not timed_out,
            "exit_code": None if timed_out else code,
            "output": text,
            "timed_out": timed_out,
            "error": error,
            "duration": round(time.monotonic() - start, 3),
        }
    )


def python(expression: str) -> None:
    """Evaluate `expression` in the REPL's namespace; a true value passes."""
    try:
        value = eval(compile(expression, "<gate>", "eval"), user_namespace())
    except Exception as e:
        text = "".join(traceback.format_exception(e))[-MAX_OUTPUT:]
        error = "".join(traceback.format_exception_only(e)).strip()
        _print({"passed": False, "output": text, "error": f"the gate raised {error}"})
        return
    try:
        passed, shown = bool(value), repr(value)[:MAX_OUTPUT]
    except Exception as e:  # a value whose truth or repr fails
        _print({"passed": False, "output": "", "error": f"the gate's value failed: {e!r}"})
        return
    _print({"passed": passed, "output": shown, "error": None})
