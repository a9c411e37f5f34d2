"""Writing below a folder without ever leaving it, whatever is renamed meanwhile.

A path checked first and written later is a race: between the check and the write, an agent
(which may write anywhere under the server root) can swap a folder on the way for a symbolic
link to somewhere else (`renameat2(RENAME_EXCHANGE)` does it atomically), and the write lands
there. So paths the daemon writes on someone's behalf are never walked twice: `Beneath` holds
the folder open by descriptor, and each folder below it is opened relative to the descriptor of
its parent — with Linux's `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has
it (5.6+), else one component at a time with `O_NOFOLLOW`. Files are then created, renamed and
exchanged relative to those descriptors, so a rename of any folder on the way moves the write
with it (still below the root) instead of redirecting it.

Symbolic links are refused on the way to a written file, whether they point in or out: with
none followed, a path's text is where it leads, and the checks made on the text (outside the
root, inside the store) are checks of the real place. Stdlib only.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import posixpath
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from ..protocol.errors import Conflict, Forbidden, InsufficientStorage, InvalidRequest, PrimeError

# Longest file name most filesystems take (NAME_MAX), and a path (PATH_MAX).
NAME_MAX = 255
PATH_MAX = 4096

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
# openat2 has the same number on every architecture (new system calls share one table).
_SYS_OPENAT2 = 437
_OPENAT2_ARCHES = {"x86_64", "aarch64", "arm64", "riscv64", "ppc64le", "s390x", "loongarch64"}
_RENAME_EXCHANGE = 2
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc: ctypes.CDLL | None = None
# None: not tried yet; False: this kernel has no openat2 (ENOSYS), walk component by component.
_have_openat2: bool | None = None


def _c() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _openat2(dir_fd: int, path: str, flags: int) -> int | None:
    """`openat2(dir_fd, path, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`; None where the system
    has no openat2 (then the caller walks the components itself)."""
    global _have_openat2
    if _have_openat2 is False or not sys.platform.startswith("linux"):
        return None
    if platform.machine() not in _OPENAT2_ARCHES:
        _have_openat2 = False
        return None
    how = _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    libc = _c()
    for _ in range(100):  # EAGAIN: a rename raced the lookup; it is safe to look again
        fd = libc.syscall(
            _SYS_OPENAT2,
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(os.fsencode(path)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd >= 0:
            _have_openat2 = True
            return int(fd)
        err = ctypes.get_errno()
        if err == errno.ENOSYS or (err == errno.EPERM and _have_openat2 is None):
            # No openat2 here (or a seccomp filter that refuses it): walk instead.
            _have_openat2 = False
            return None
        if err != errno.EAGAIN:
            raise OSError(err, os.strerror(err), path)
    raise OSError(errno.EAGAIN, "the folder kept changing while it was being opened", path)


def parts_of(path: str, *, what: str = "the path") -> list[str]:
    """The components of a relative path, with `.` and `..` folded away lexically; refused
    (InvalidRequest) if it is empty, absolute, climbs above its start, holds a NUL, or has a
    component too long for a file name."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidRequest(f"{what} must be a non-empty string")
    if "\x00" in path:
        raise InvalidRequest(f"{what} contains a NUL character")
    if len(os.fsencode(path)) > PATH_MAX:
        raise InvalidRequest(f"{what} is longer than {PATH_MAX} bytes")
    if path.startswith("/"):
        raise InvalidRequest(f"{what} must be relative, not {path[:80]!r}")
    norm = posixpath.normpath(path)
    if norm == ".":
        return []
    parts = norm.split("/")
    if parts[0] == "..":
        raise Forbidden(f"{path[:200]!r} climbs above the folder it must stay in")
    for part in parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise InvalidRequest(
                f"{what} has a component of {len(os.fsencode(part))} bytes; a file or folder "
                f"name may have at most {NAME_MAX}"
            )
    return parts


def explain(e: OSError, where: str) -> PrimeError:
    """An OSError of a write below the root as the error a caller should get (never a 500)."""
    code = e.errno
    detail = e.strerror or str(e)
    if code in (errno.ELOOP, errno.EXDEV):
        return Forbidden(
            f"{where} goes through a symbolic link (or leaves the root while it is opened); "
            "files are written only through real folders under the root"
        )
    if code == errno.ENOTDIR:
        what = f"{e.filename}" if isinstance(e.filename, str) else "a component on the way"
        return InvalidRequest(f"cannot write {where}: {what} is not a folder")
    if code == errno.EISDIR:
        return Conflict(f"{where} is a folder")
    if code == errno.ENOENT:
        return Conflict(f"{where}: a folder on the way does not exist (or was just removed)")
    if code == errno.ENAMETOOLONG:
        return InvalidRequest(f"{where}: a name on the way is too long ({detail})")
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return Forbidden(f"{where} cannot be written: {detail}")
    if code in (errno.ENOSPC, errno.EDQUOT):
        return InsufficientStorage(f"{where} cannot be written: the disk is full ({detail})")
    if code == errno.EAGAIN:
        return Conflict(f"{where}: the folder kept changing while it was opened; try again")
    return PrimeError(f"{where} cannot be written: {detail}")


class Beneath:
    """A folder held open; every path below it is opened relative to it, never re-walked.

    Paths are relative, `/`-separated; see `parts_of` for what is refused. Use as a context
    manager (or call `close()`)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- folders ------------------------------------------------------------------------------
    def folder(self, parts: list[str], *, create: bool = False) -> int:
        """A descriptor of the folder `parts` below the root (the caller closes it); with
        `create`, missing folders are made (0755, as `mkdir -p` would). OSError otherwise."""
        if not parts:
            return os.dup(self.fd)
        if not create:
            fd = _openat2(self.fd, "/".join(parts), _DIR_FLAGS)
            if fd is not None:
                return fd
        return self._walk(parts, create)

    def _walk(self, parts: list[str], create: bool) -> int:
        fd = os.dup(self.fd)
        for i, part in enumerate(parts):
            try:
                child = self._step(fd, part, create)
            except OSError as e:  # say which folder on the way it was
                raise OSError(e.errno, e.strerror, "/".join(parts[: i + 1])) from None
            finally:
                os.close(fd)
            fd = child
        return fd

    def _step(self, fd: int, part: str, create: bool) -> int:
        """The folder `part` inside the folder `fd`, made if `create`."""
        try:
            return self._child(fd, part)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):  # made meanwhile: open it
                os.mkdir(part, 0o755, dir_fd=fd)
            return self._child(fd, part)

    @staticmethod
    def _child(fd: int, part: str) -> int:
        try:
            child = _openat2(fd, part, _DIR_FLAGS)
            if child is None:
                # O_NOFOLLOW: a symbolic link here fails (ELOOP, or ENOTDIR with O_DIRECTORY).
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except NotADirectoryError:
            found = lstat_at(fd, part)
            if found is not None and stat.S_ISLNK(found.st_mode):
                raise OSError(errno.ELOOP, "a symbolic link", part) from None
            if is_dir(found):  # a link a moment ago, a folder again now: swapped meanwhile
                raise OSError(errno.EAGAIN, "it changed while it was opened", part) from None
            raise
        return child

    @contextlib.contextmanager
    def parent(self, parts: list[str], *, create: bool = False) -> Iterator[tuple[int, str]]:
        """(descriptor of the folder holding the last component, its name) for `parts`."""
        if not parts:
            raise InvalidRequest("the path names the folder itself; give a file or folder in it")
        fd = self.folder(parts[:-1], create=create)
        try:
            yield fd, parts[-1]
        finally:
            os.close(fd)


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """What `name` in the folder `dir_fd` is (a link is not followed); None if nothing."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def is_dir(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISDIR(st.st_mode)


def exchange_at(src_fd: int, src: str, dst_fd: int, dst: str) -> bool:
    """Swap two names in one step (renameat2 RENAME_EXCHANGE); False where the system or the
    filesystem cannot (then the caller renames in two steps)."""
    if not sys.platform.startswith("linux"):
        return False
    renameat2 = getattr(_c(), "renameat2", None)
    if renameat2 is None:  # a C library older than glibc 2.28
        return False
    if renameat2(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS):
        return False
    raise OSError(err, os.strerror(err), dst)


def write_file_at(
    dir_fd: int, name: str, data: bytes, *, tmp_fd: int | None = None, mode: int = 0o644
) -> None:
    """Make `name` in the folder `dir_fd` hold `data`, whole or not at all: written to a
    temporary in the folder `tmp_fd` (one nobody browses, such as the store's tmp/) and renamed
    into place; where that rename would cross filesystems, the temporary is made beside the
    target instead (its name ends in `~`, which jupyter_server does not list). A symbolic link
    at `name` is replaced, never followed."""
    for folder in ([tmp_fd] if tmp_fd is not None else []) + [dir_fd]:
        tmp = f".{name[:200]}.{os.urandom(6).hex()}~"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=dir_fd)
            return
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            if e.errno != errno.EXDEV or folder == dir_fd:
                raise


def copy_tree_into(below: Beneath, parts: list[str], source: Path) -> list[str]:
    """Copy the files of the folder `source` (one of the caller's own, say a private
    temporary) into `parts` below `below`, folders made as needed, each file replaced whole;
    the paths written, relative to `below`."""
    written = []
    for dirpath, _dirs, files in os.walk(source):
        rel = os.path.relpath(dirpath, source)
        sub = parts + ([] if rel == "." else rel.split(os.sep))
        fd = below.folder(sub, create=True)
        try:
            for name in sorted(files):
                write_file_at(fd, name, (Path(dirpath) / name).read_bytes())
                written.append("/".join([*sub, name]))
        finally:
            os.close(fd)
    return written
