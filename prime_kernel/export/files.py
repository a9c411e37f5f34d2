"""Writing exports to disk: one notebook, or a session tree as a folder of linked notebooks.

Nothing is ever left half-written: a notebook goes to a temporary file renamed into place, a
folder is filled under a temporary name and renamed into place. An existing target is refused
unless `force`, and even then only a folder that holds nothing but exported files is replaced.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..daemon.errors import Conflict, Forbidden, PrimeError
from ..daemon.store import atomic_write
from .notebook import NotebookExporter, context_name, notebook_name

_EXPORTED_SUFFIXES = (".ipynb", ".context.pkl")


class ExportError(PrimeError):
    code = "export_failed"


@dataclass
class Export:
    """What one export writes: notebooks and pickled contexts, by session id."""

    session_id: str
    notebooks: dict[str, bytes] = field(default_factory=dict)
    contexts: dict[str, bytes] = field(default_factory=dict)


def collect(
    daemon: Any,
    session_id: str,
    notebook: Callable[[str], bytes],
    *,
    subtree: bool = False,
    with_context: bool = False,
) -> Export:
    """Build the notebooks (with `notebook(session_id)`) and contexts an export writes."""
    ids = [session_id]
    if subtree:
        ids += [d["id"] for d in daemon.store.descendants(session_id)]
    out = Export(session_id)
    for sid in ids:
        out.notebooks[sid] = notebook(sid)
        if with_context and daemon.session_json(sid).get("context_type"):
            out.contexts[sid] = daemon.context_bytes(sid)
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


def write(export: Export, target: Path, *, subtree: bool, force: bool = False) -> list[Path]:
    """Write `export` to `target` (a .ipynb file, or a folder with `subtree`)."""
    for folder in target.parents:
        if folder.exists():
            if not folder.is_dir():
                raise ExportError(f"cannot write the export to {target}: {folder} is not a folder")
            break
    try:
        if subtree:
            return _write_folder(export, target, force)
        return _write_notebook(export, target, force)
    except OSError as e:
        raise ExportError(f"cannot write the export to {target}: {e.strerror or e}") from None


def _write_notebook(export: Export, target: Path, force: bool) -> list[Path]:
    if target.suffix != ".ipynb":
        raise PrimeError(f"{target} does not end in .ipynb")
    if target.is_dir():
        raise Conflict(f"{target} is a folder; give a notebook path (or use a subtree export)")
    extra = {target.parent / context_name(s): data for s, data in export.contexts.items()}
    if not force:
        existing = [str(p) for p in [target, *extra] if p.exists()]
        if existing:
            raise Conflict(f"{', '.join(existing)} already exists (export with force to replace)")
    written: list[Path] = []
    try:
        for path, data in extra.items():
            atomic_write(path, data)
            written.append(path)
        atomic_write(target, export.notebooks[export.session_id])
        for path in [target, *written]:
            path.chmod(0o644)  # a temporary file is private; an export is an ordinary file
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return [target, *written]


def _write_folder(export: Export, target: Path, force: bool) -> list[Path]:
    if target.exists():
        if not force:
            raise Conflict(f"{target} already exists (export with force to replace it)")
        _check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    old: Path | None = None
    try:
        for sid, data in export.notebooks.items():
            (tmp / notebook_name(sid)).write_bytes(data)
        for sid, data in export.contexts.items():
            (tmp / context_name(sid)).write_bytes(data)
        tmp.chmod(0o755)  # mkdtemp makes it private; an export folder is an ordinary one
        if target.exists():
            old = target.with_name(f"{tmp.name}.old")
            target.rename(old)
        tmp.rename(target)
    except BaseException:
        if old is not None and not target.exists():
            old.rename(target)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)
    return sorted(target.iterdir())


def _check_replaceable(target: Path) -> None:
    if not target.is_dir():
        raise Conflict(f"{target} is a file; a subtree export writes a folder")
    for entry in target.iterdir():
        if not entry.is_file() or not entry.name.endswith(_EXPORTED_SUFFIXES):
            raise Conflict(
                f"{target} holds {entry.name}, which an export did not write; "
                "not replacing that folder even with force"
            )


def export_to(
    exporter: NotebookExporter,
    session_id: str,
    target: str | os.PathLike[str],
    *,
    subtree: bool = False,
    force: bool = False,
    with_context: bool = False,
) -> list[Path]:
    """Export a session (and with `subtree` its descendants) to `target`; the files written."""
    export = collect(
        exporter.daemon,
        session_id,
        lambda sid: exporter.notebook_bytes(sid, with_context=with_context),
        subtree=subtree,
        with_context=with_context,
    )
    return write(export, Path(target), subtree=subtree, force=force)
