"""Writing exports to disk: one notebook, or a session tree as a folder of linked notebooks.

Where: below a folder held open by descriptor (`util.beneath.Beneath`), the server root for
exports made through the server. The path a request names is checked as text (under the root,
not in the store), then every folder on the way is opened relative to its parent without
following a symbolic link, and the files are created and renamed relative to those descriptors:
an agent that swaps a folder on the way for a link elsewhere (even atomically, with
RENAME_EXCHANGE) while the export runs gets a refusal, or the files land in the folder it moved
— never outside the root.

How: nothing is ever left half-written. A notebook goes to a temporary file renamed into place;
a folder is filled under a temporary name and renamed into place (exchanged with the folder it
replaces, where the system can). Temporaries live in the store's private `tmp/` folder, never
beside the target, where the file browser would list them mid-write. An existing target is
refused unless `force`, and even then only a folder that holds nothing but exported files is
replaced. Contexts are written as JSON or as a pickle the notebook loads with the restricted
unpickler (export/contexts.py), never for `pickle.load`.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import posixpath
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..protocol.errors import Conflict, ExportFailed, Forbidden, InvalidRequest, PrimeError
from ..util.beneath import (
    Beneath,
    exchange_at,
    explain,
    is_dir,
    lstat_at,
    parts_of,
    write_file_at,
)
from .contexts import ContextFile, context_file
from .markdown import notebook_name
from .notebook import NotebookExporter

_EXPORTED_SUFFIXES = (".ipynb", ".context.pkl", ".context.json")


@dataclass
class Export:
    """What one export writes: notebooks and contexts, by session id."""

    session_id: str
    notebooks: dict[str, bytes] = field(default_factory=dict)
    contexts: dict[str, ContextFile] = field(default_factory=dict)


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
    """Build the notebooks and contexts an export writes (off the event loop)."""
    ids = [session_id, *(source.descendant_ids(session_id) if subtree else [])]
    out = Export(session_id)
    for sid in ids:
        record = source.session_json(sid)
        events = await source.events(sid)
        states = {c: source.session_json(c)["state"] for c in record.get("children") or []}
        context = None
        if with_context and record.get("context_type"):
            data = await source.context_bytes(sid)
            context = out.contexts[sid] = await asyncio.to_thread(context_file, sid, data)
        out.notebooks[sid] = await asyncio.to_thread(
            exporter.notebook_bytes, record, events, states=states, context=context
        )
    return out


def default_target(session_id: str, subtree: bool) -> str:
    return session_id if subtree else notebook_name(session_id)


def target_parts(
    root: str | os.PathLike[str],
    path: str,
    *,
    cwd: str | None = None,
    store: str | os.PathLike[str] | None = None,
    what: str = "an export",
) -> list[str]:
    """The components of `path` below `root` (taken from `cwd`, itself under the root, when
    relative), checked as text: refused if it leaves the root, names the root itself, or
    enters the daemon's `store`. No link is followed here; the write refuses any on the way."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidRequest(f"the path of {what} must be a non-empty string")
    if "\x00" in path or (cwd is not None and "\x00" in cwd):
        raise InvalidRequest(f"the path of {what} contains a NUL character")
    base = os.path.realpath(root)
    full = posixpath.normpath(posixpath.join(cwd or base, path))
    if full == base:
        raise InvalidRequest(
            f"the path of {what} names the server root itself; give a file or folder"
        )
    if not full.startswith(base.rstrip("/") + "/"):
        raise Forbidden(f"{path[:200]!r} is outside the server root; {what} must stay under it")
    parts = parts_of(posixpath.relpath(full, base), what=f"the path of {what}")
    if store is not None:
        private = os.path.realpath(store)
        if private == base or private.startswith(base.rstrip("/") + "/"):
            inner = posixpath.relpath(private, base).split("/")
            if private == base or parts[: len(inner)] == inner:
                raise Forbidden(
                    f"{path[:200]!r} is inside the daemon's store ({private}); use another path"
                )
    return parts


def under_root(
    root: str | os.PathLike[str],
    path: str,
    *,
    store: str | os.PathLike[str] | None = None,
    what: str = "an export",
) -> Path:
    """`path` (relative to `root`, or absolute) resolved, symlinks included, refused if it
    leaves `root` or enters the daemon's own `store`. For paths the daemon *reads* (a harness
    import); anything it writes goes through `target_parts` and a `Beneath`."""
    target_parts(root, path, store=store, what=what)  # the text's own checks first
    base = Path(root).resolve()
    try:
        target = (base / path).resolve()
    except OSError as e:
        raise explain(e, repr(path[:200])) from None
    if target == base or base not in target.parents:
        raise Forbidden(f"{path[:200]!r} leads outside the server root; {what} must stay under it")
    if store is not None:
        private = Path(store).resolve()
        if target == private or private in target.parents:
            raise Forbidden(f"{path!r} is inside the daemon's store ({private}); use another path")
    return target


@contextlib.contextmanager
def _opened_tmp(tmp_dir: Path | None) -> Iterator[int | None]:
    """A descriptor of the store's tmp folder (made if needed), or None."""
    if tmp_dir is None:
        yield None
        return
    try:
        tmp_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def write(
    export: Export,
    root: Path,
    parts: list[str],
    *,
    subtree: bool,
    force: bool = False,
    tmp_dir: Path | None = None,
    absolute: bool = False,
) -> list[Path]:
    """Write `export` to `parts` below `root` (a .ipynb file, or a folder with `subtree`), its
    temporaries in `tmp_dir` (the store's) when that is on the target's filesystem. The paths
    written, as `root` joined with what was written (a rename of a folder on the way
    meanwhile moves the files with it). Errors name the target below `root`, or with
    `absolute` as a whole path (the CLI's `-o`)."""
    where = str(root.joinpath(*parts)) if absolute else "/".join(parts)
    try:
        with (
            Beneath(root) as below,
            _opened_tmp(tmp_dir) as tmp_fd,
            below.parent(parts, create=True) as (folder, name),
        ):
            if subtree:
                names = _write_folder(export, folder, name, force, tmp_fd, where)
            else:
                names = _write_notebook(export, folder, name, force, tmp_fd, where)
    except PrimeError:
        raise
    except OSError as e:
        error = explain(e, where)
        if type(error) is PrimeError:  # an error of the disk itself, not of the request
            raise ExportFailed(f"cannot write the export to {where}: {e.strerror or e}") from None
        raise error from None
    base = root.joinpath(*parts) if subtree else root.joinpath(*parts[:-1])
    return [base / n for n in names]


def _write_notebook(
    export: Export, folder: int, name: str, force: bool, tmp_fd: int | None, where: str
) -> list[str]:
    if not name.endswith(".ipynb"):
        raise InvalidRequest(f"{where} does not end in .ipynb")
    if is_dir(lstat_at(folder, name)):
        raise Conflict(f"{where} is a folder; give a notebook path (or use a subtree export)")
    extra = {c.name: c.data for c in export.contexts.values()}
    if not force:
        beside = where.rpartition("/")[0]
        existing = [
            posixpath.join(beside, n) for n in [name, *extra] if lstat_at(folder, n) is not None
        ]
        if existing:
            raise Conflict(
                f"{', '.join(existing)} already exists (export with force to replace)",
                exists=existing,  # each front end names its own way to force (--force, a dialog)
            )
    written: list[str] = []
    try:
        for context, data in extra.items():
            write_file_at(folder, context, data, tmp_fd=tmp_fd)
            written.append(context)
        write_file_at(folder, name, export.notebooks[export.session_id], tmp_fd=tmp_fd)
    except BaseException:
        for context in written:
            with contextlib.suppress(OSError):
                os.unlink(context, dir_fd=folder)
        raise
    return [name, *written]


def _write_folder(
    export: Export, folder: int, name: str, force: bool, tmp_fd: int | None, where: str
) -> list[str]:
    existing = lstat_at(folder, name)
    if existing is not None:
        if not force:
            raise Conflict(
                f"{where} already exists (export with force to replace it)", exists=[where]
            )
        _check_replaceable(folder, name, existing, where)
    files = {notebook_name(sid): data for sid, data in export.notebooks.items()}
    files.update({c.name: c.data for c in export.contexts.values()})
    for place in ([tmp_fd] if tmp_fd is not None else []) + [folder]:
        tmp = f".{name[:200]}.{os.urandom(6).hex()}~"
        os.mkdir(tmp, 0o700, dir_fd=place)
        try:
            fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=place)
            try:
                for file_name, data in files.items():
                    write_file_at(fd, file_name, data)
                os.chmod(fd, 0o755)  # an export folder is an ordinary one
            finally:
                os.close(fd)
            old = _swap_in(place, tmp, folder, name)
        except OSError as e:
            _remove(place, tmp)
            if e.errno == errno.EXDEV and place != folder:  # make it beside the target instead
                continue
            raise
        if old:
            _remove(place, tmp)  # the replaced folder, moved aside under the temporary name
        return sorted(files)
    raise ExportFailed(f"cannot write the export to {where}")  # not reached


def _swap_in(place: int, tmp: str, folder: int, name: str) -> bool:
    """Rename `tmp` (in `place`) to `name` (in `folder`); True if it replaced a folder, which
    is then under `tmp` in `place`."""
    try:
        os.rename(tmp, name, src_dir_fd=place, dst_dir_fd=folder)
        return False
    except OSError as e:
        if e.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR):  # nothing there
            raise
    if exchange_at(place, tmp, folder, name):
        return True
    # Two renames: for a moment there is no target (a listing then fails on it).
    aside = f"{tmp}.old~"
    os.rename(name, aside, src_dir_fd=folder, dst_dir_fd=place)
    try:
        os.rename(tmp, name, src_dir_fd=place, dst_dir_fd=folder)
    except BaseException:
        os.rename(aside, name, src_dir_fd=place, dst_dir_fd=folder)
        raise
    os.rename(aside, tmp, src_dir_fd=place, dst_dir_fd=place)
    return True


def _remove(folder: int, name: str) -> None:
    """Remove `name` (a folder, never followed if a link) from `folder`, quietly."""
    with contextlib.suppress(OSError):
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            # By the folder's descriptor (rmtree's dir_fd is Python 3.11+).
            shutil.rmtree(f"/proc/self/fd/{folder}/{name}")
        else:
            os.unlink(name, dir_fd=folder)


def _check_replaceable(folder: int, name: str, existing: os.stat_result, where: str) -> None:
    if not stat.S_ISDIR(existing.st_mode):
        raise Conflict(f"{where} is not a folder; a subtree export writes a folder")
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                if not entry.is_file(follow_symlinks=False) or not entry.name.endswith(
                    _EXPORTED_SUFFIXES
                ):
                    raise Conflict(
                        f"{where} holds {entry.name}, which an export did not write; "
                        "not replacing that folder even with force"
                    )
    finally:
        os.close(fd)


async def export_to(
    source: Source,
    exporter: NotebookExporter,
    session_id: str,
    target: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    subtree: bool = False,
    force: bool = False,
    with_context: bool = False,
    tmp_dir: Path | None = None,
) -> list[Path]:
    """Export a session (and with `subtree` its descendants) to `target`; the files written
    (their temporaries in `tmp_dir`, the store's, when it is on the same filesystem).

    With `root`, `target` is a path below it (as `target_parts` checks it) and nothing is
    written elsewhere; without, `target` is a path of the caller's own choosing (the CLI's
    `-o`), written below its parent folder."""
    if root is not None:
        base = Path(os.path.realpath(root))
        parts = target_parts(base, os.fspath(target))
    else:
        path = Path(target).absolute()
        for folder in path.parents:
            if folder.exists():
                if not folder.is_dir():
                    raise ExportFailed(
                        f"cannot write the export to {path}: {folder} is not a folder"
                    )
                break
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise explain(e, str(path)) from None
        base, parts = Path(os.path.realpath(path.parent)), [path.name]
    export = await collect(source, exporter, session_id, subtree=subtree, with_context=with_context)
    return await asyncio.to_thread(
        write,
        export,
        base,
        parts,
        subtree=subtree,
        force=force,
        tmp_dir=tmp_dir,
        absolute=root is None,
    )
