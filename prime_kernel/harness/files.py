"""Harness entries as plain files under a scope's root.

Two scopes: `project` (`<root>/.prime/harness/`) and `global` (`~/.prime/harness/`). This module
only moves raw text between disk and `Files` snapshots (file name -> text); parsing is in
`entries`, versioning in `versions`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from pathlib import Path

from ..util.files import atomic_write
from .entries import (
    DIRS,
    ID_RE,
    OLD_DIRS,
    SKILL_FILE,
    Files,
    check_file_name,
    check_id,
    main_file,
)

SCOPES = ("project", "global")


def digest(files: Files | None) -> str | None:
    """Content hash of a snapshot; None for an absent entry."""
    if files is None:
        return None
    data = json.dumps(files, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(data).hexdigest()


class HarnessFiles:
    def __init__(self, roots: dict[str, Path]) -> None:
        self.roots = roots
        for root in roots.values():
            rename_folders(root)

    def root(self, scope: str) -> Path:
        return self.roots[scope]

    def _write(self, scope: str, path: Path, text: str) -> None:
        # Temporaries in the scope's private `.tmp/`, never beside the entry, where the file
        # browser (the project scope is under the server root) would list them mid-write.
        atomic_write(path, text.encode("utf-8"), tmp_dir=self.root(scope) / ".tmp")

    def _main(self, scope: str, kind: str, entry_id: str) -> Path:
        base = self.root(scope) / DIRS[kind]
        if kind == "skill":
            return base / check_id(entry_id) / SKILL_FILE
        return base / f"{check_id(entry_id)}.md"

    def read(self, scope: str, kind: str, entry_id: str) -> Files | None:
        main = self._main(scope, kind, entry_id)
        if not main.is_file():
            return None
        files = {main_file(kind): main.read_text(encoding="utf-8", errors="replace")}
        if kind == "skill":
            for path in sorted(main.parent.iterdir()):
                if path.name == SKILL_FILE or not path.is_file() or path.name.startswith("."):
                    continue
                try:
                    files[path.name] = path.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    continue  # binary assets are left alone and not versioned
        return files

    def write(self, scope: str, kind: str, entry_id: str, files: Files | None) -> None:
        """Make the entry's files exactly `files` (None deletes the entry)."""
        main = self._main(scope, kind, entry_id)
        old = self.read(scope, kind, entry_id) or {}
        if kind == "skill":
            folder = main.parent
            for name in old:
                if name != SKILL_FILE and (files is None or name not in files):
                    (folder / name).unlink(missing_ok=True)
            if files is None:
                main.unlink(missing_ok=True)
                shutil.rmtree(folder / "__pycache__", ignore_errors=True)
                if folder.is_dir() and not any(folder.iterdir()):
                    folder.rmdir()
                return
            for name, text in files.items():
                target = main if name == SKILL_FILE else folder / check_file_name(name)
                self._write(scope, target, text)
            return
        if files is None:
            main.unlink(missing_ok=True)
            return
        self._write(scope, main, files[main_file(kind)])

    def ids(self, scope: str, kind: str) -> list[str]:
        base = self.root(scope) / DIRS[kind]
        if not base.is_dir():
            return []
        out = []
        for path in base.iterdir():
            if kind == "skill":
                name = path.name if (path / SKILL_FILE).is_file() else ""
            else:
                name = path.stem if path.suffix == ".md" and path.is_file() else ""
            if name and ID_RE.match(name) and ".." not in name:
                out.append(name)
        return sorted(out)

    def location(self, scope: str, kind: str, entry_id: str) -> Path:
        """Absolute path of an entry's main file (for editors and messages)."""
        return self._main(scope, kind, entry_id)


def rename_folders(root: Path) -> None:
    """Move the entries of a folder named as before a kind was renamed (`specs/`) into the
    folder of its name now (`subagents/`), keeping each file as it is (the history finds it by
    its hash: no hand edit is recorded). An entry present in both stays where it is: the new
    one wins, and the old folder is left with what could not move."""
    for old, new in OLD_DIRS.items():
        source, target = root / old, root / new
        if not source.is_dir():
            continue
        if not target.exists():
            with contextlib.suppress(OSError):  # another process moved it first
                source.rename(target)
                continue
        target.mkdir(exist_ok=True)
        for path in sorted(source.iterdir()):
            if not (target / path.name).exists():
                with contextlib.suppress(FileNotFoundError):
                    path.rename(target / path.name)
        with contextlib.suppress(OSError):  # not empty: an entry was in both
            source.rmdir()
