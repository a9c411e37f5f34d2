"""`prime-agent run`, `sessions` and `show` as a user types them: real processes, real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from prime_kernel.models import local


def prime_agent(
    *args: str, root: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PRIME_MODEL", None)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "prime_kernel.cli.main", "--root", str(root), *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    path = tmp_path / "scripts.json"
    path.write_text(
        json.dumps(
            {
                "squares": {
                    "turns": [
                        {"code": "total = sum(i * i for i in range(1, 101))\nprint(total)"},
                        {
                            "code": "h = rlm('double it', context=total)\nanswer(h.result())",
                        },
                    ]
                },
                "double": {"turns": [{"code": "answer(context * 2)"}]},
            }
        )
    )
    return path


def test_run_json_sessions_and_show(tmp_path: Path, scripts: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    env = {"PRIME_SCRIPTS": str(scripts)}
    # The child inherits the parent's model unless it names one; make the parent's script
    # serve the child's turns through a second model given by name.
    scripts.write_text(
        scripts.read_text().replace(
            "rlm('double it', context=total)",
            "rlm('double it', context=total, model='scripted/double')",
        )
    )
    proc = prime_agent(
        "run",
        "sum of squares, doubled",
        "--model",
        "scripted/squares",
        "--json",
        root=root,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["state"] == "DONE"
    assert result["answer"] == 676700
    assert result["usage"]["subtree"]["model_calls"] == 3
    assert result["usage"]["own"]["model_calls"] == 2
    assert Path(result["store"]).exists()
    # The progress view went to stderr: turns, cells with output, the child.
    assert "338350" in proc.stderr and "started child" in proc.stderr

    listed = json.loads(prime_agent("sessions", "--json", root=root).stdout)
    assert {s["id"] for s in listed} >= {result["id"]}
    assert len(listed) == 2
    shown = prime_agent("show", result["id"], root=root)
    assert shown.returncode == 0
    assert "sum of squares, doubled" in shown.stdout and "answer:  676700" in shown.stdout
    assert "338350" in shown.stdout


def test_run_errors_are_clear(tmp_path: Path) -> None:
    proc = prime_agent("run", "x", "--model", "nonexistent-model", root=tmp_path)
    assert proc.returncode == 2
    assert "unknown model 'nonexistent-model'" in proc.stderr
    proc = prime_agent("run", "x", "--max-turns", "0", root=tmp_path)
    assert proc.returncode == 2 and "--max-turns" in proc.stderr
    proc = prime_agent("run", "x", root=tmp_path / "missing")
    assert proc.returncode == 2 and "is not a folder" in proc.stderr
    proc = prime_agent("show", "nope", root=tmp_path)
    assert proc.returncode == 2 and "no Prime store" in proc.stderr


@pytest.mark.local_model
@pytest.mark.skipif(not local.available(), reason="the embedded model is not installed")
def test_readme_main_command_on_the_embedded_model(tmp_path: Path) -> None:
    """The README's first command, as a user types it: default model, default settings."""
    proc = prime_agent("run", "Compute the sum of the squares of 1..100", root=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Answer: 338350" in proc.stdout
    listed = json.loads(prime_agent("sessions", "--json", root=tmp_path).stdout)
    assert len(listed) == 1
    shown = json.loads(prime_agent("show", listed[0]["id"], "--json", root=tmp_path).stdout)
    record = shown["session"]
    assert record["model"] == "local/smollm2"
    assert record["usage"]["own"]["cost"] == 0
    kinds = [e["kind"] for e in shown["events"]]
    assert kinds.count("model_call") == record["usage"]["own"]["model_calls"] >= 1
    assert "cell" in kinds and "answer" in kinds
