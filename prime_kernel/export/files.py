"""Writing exports to disk: one notebook, or a session tree as a folder of linked notebooks.

Nothing is ever left half-written: a notebook goes to a temporary file renamed into place, a
folder is filled under a temporary name and renamed into place (exchanged with the folder it
replaces, where the system can). Temporaries live in the store's private `tmp/` folder, never
beside the target, where the file browser would list them mid-write (see `renamed_into`). An
existing target is refused unless `force`, and even then only a folder that holds nothing but
exported files is replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..protocol.errors import Conflict, ExportFailed, Forbidden, PrimeError
from ..util.files import atomic_write, renamed_into
from .notebook import NotebookExporter, context_name, notebook_name

_EXPORTED_SUFFIXES = (".ipynb", ".context.pkl")


@dataclass
class Export:
    """What one export writes: notebooks and pickled contexts, by session id."""

    session_id: str
    notebooks: dict[str, bytes] = field(default_factory=dict)
    contexts: dict[str, bytes] = field(default_factory=dict)


class Source(Protocol):
    """What an export reads: records (as the REST API gives them), events and contexts."""

    def session_json(self, session_id: str) -> dict[str, Any]: ...

    def descendant_ids(self, session_id: str) -> list[str]: ...

    async def events(self, session_id: str, after: int = 0) -> list[dict[str, Any]]: ...

    async def context_bytes(self, session_id: str) -> bytes: ...


async def collect(
    source: Source,
    exporter: NotebookExporter,
    session_id: str,
    *,
    subtree: bool = False,
    with_context: bool = False,
) -> Export:
    """Build the notebooks and contexts an export writes (the notebooks off the event loop)."""
    ids = [session_id, *(source.descendant_ids(session_id) if subtree else [])]
    out = Export(session_id)
    for sid in ids:
        record = source.session_json(sid)
        events = await source.events(sid)
        states = {c: source.session_json(c)["state"] for c in record.get("children") or []}
        out.notebooks[sid] = await asyncio.to_thread(
            exporter.notebook_bytes, record, events, states=states, with_context=with_context
        )
        if with_context and record.get("context_type"):
            out.contexts[sid] = await source.context_bytes(sid)
    return out


def default_target(session_id: str, subtree: bool) -> str:
    return session_id if subtree else notebook_name(session_id)


def under_root(
    root: str | os.PathLike[str],
    path: str,
    *,
    store: str | os.PathLike[str] | None = None,
    what: str = "an export",
) -> Path:
    """`path` (relative to `root`, or absolute) resolved, symlinks included, refused if it
    leaves `root` or enters the daemon's own `store` (an export must never replace the
    database or the versioned harness files, nor an import read them). Every path a request
    names goes through here: a JupyterHub deployment relies on the root being the limit."""
    if not isinstance(path, str) or not path.strip():
        raise PrimeError(f"the path of {what} must be a non-empty string")
    if "\x00" in path:
        raise PrimeError(f"the path of {what} contains a NUL character")
    base = Path(root).resolve()
    target = (base / path).resolve()
    if target != base and base not in target.parents:
        raise Forbidden(f"{path!r} is outside the server root; {what} must stay under it")
    if target == base:
        raise PrimeError(f"the path of {what} names the server root itself; give a file or folder")
    if store is not None:
        private = Path(store).resolve()
        if target == private or private in target.parents:
            raise Forbidden(f"{path!r} is inside the daemon's store ({private}); use another path")
    return target


def write(
    export: Export, target: Path, *, subtree: bool, force: bool = False, tmp_dir: Path | None = None
) -> list[Path]:
    """Write `export` to `target` (a .ipynb file, or a folder with `subtree`), its temporaries
    in `tmp_dir` (the store's) when that is on the target's filesystem."""
    for folder in target.parents:
        if folder.exists():
            if not folder.is_dir():
                raise ExportFailed(f"cannot write the export to {target}: {folder} is not a folder")
            break
    try:
        if subtree:
            return _write_folder(export, target, force, tmp_dir)
        return _write_notebook(export, target, force, tmp_dir)
    except OSError as e:
        raise ExportFailed(f"cannot write the export to {target}: {e.strerror or e}") from None


def _write_notebook(export: Export, target: Path, force: bool, tmp_dir: Path | None) -> list[Path]:
    if target.suffix != ".ipynb":
        raise PrimeError(f"{target} does not end in .ipynb")
    if target.is_dir():
        raise Conflict(f"{target} is a folder; give a notebook path (or use a subtree export)")
    extra = {target.parent / context_name(s): data for s, data in export.contexts.items()}
    if not force:
        existing = [str(p) for p in [target, *extra] if p.exists()]
        if existing:
            raise Conflict(
                f"{', '.join(existing)} already exists (export with force to replace)",
                exists=existing,  # each front end names its own way to force (--force, a dialog)
            )
    written: list[Path] = []
    try:
        for path, data in extra.items():
            atomic_write(path, data, tmp_dir=tmp_dir)
            written.append(path)
        atomic_write(target, export.notebooks[export.session_id], tmp_dir=tmp_dir)
        for path in [target, *written]:
            path.chmod(0o644)  # a temporary file is private; an export is an ordinary file
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return [target, *written]


def _write_folder(export: Export, target: Path, force: bool, tmp_dir: Path | None) -> list[Path]:
    if target.exists():
        if not force:
            raise Conflict(
                f"{target} already exists (export with force to replace it)", exists=[str(target)]
            )
        _check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)

    def fill_and_swap(folder: Path) -> Path | None:
        """The folder filled in `folder`, renamed into place; the replaced one, moved aside
        into `folder` too (deleting it takes a while, and it must not be listed)."""
        tmp = Path(tempfile.mkdtemp(dir=folder, prefix=f".{target.name}.", suffix="~"))
        old: Path | None = None
        try:
            for sid, data in export.notebooks.items():
                (tmp / notebook_name(sid)).write_bytes(data)
            for sid, data in export.contexts.items():
                (tmp / context_name(sid)).write_bytes(data)
            tmp.chmod(0o755)  # mkdtemp makes it private; an export folder is an ordinary one
            if not target.exists():
                tmp.rename(target)
                return None
            if _exchange(tmp, target):
                return tmp  # it now holds the replaced folder
            # Two renames: for a moment there is no target (a listing then fails on it).
            old = tmp.with_name(f"{tmp.name}.old~")
            target.rename(old)
            tmp.rename(target)
        except BaseException:
            if old is not None and not target.exists():
                old.rename(target)
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return old

    old = renamed_into(target.parent, tmp_dir, fill_and_swap)
    if old is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)
    return sorted(target.iterdir())


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step (Linux's renameat2 RENAME_EXCHANGE), so that the target of
    a replacing export never disappears, even for a moment; False where that is not available
    (another system, or a filesystem without it)."""
    if sys.platform != "linux":
        return False
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:  # a C library older than glibc 2.28
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS):  # the filesystem or kernel cannot exchange
        return False
    raise OSError(err, os.strerror(err), str(b))


def _check_replaceable(target: Path) -> None:
    if not target.is_dir():
        raise Conflict(f"{target} is a file; a subtree export writes a folder")
    for entry in target.iterdir():
        if not entry.is_file() or not entry.name.endswith(_EXPORTED_SUFFIXES):
            raise Conflict(
                f"{target} holds {entry.name}, which an export did not write; "
                "not replacing that folder even with force"
            )


async def export_to(
    source: Source,
    exporter: NotebookExporter,
    session_id: str,
    target: str | os.PathLike[str],
    *,
    subtree: bool = False,
    force: bool = False,
    with_context: bool = False,
    tmp_dir: Path | None = None,
) -> list[Path]:
    """Export a session (and with `subtree` its descendants) to `target`; the files written
    (their temporaries in `tmp_dir`, the store's, when it is on the same filesystem)."""
    export = await collect(source, exporter, session_id, subtree=subtree, with_context=with_context)
    return await asyncio.to_thread(
        write, export, Path(target), subtree=subtree, force=force, tmp_dir=tmp_dir
    )
