"""The harness from a REPL: `harness.notes|memory|skills|subagents|examples`, `skill(name)`,
`refine()`.

Stdlib only. Every call goes to the daemon, which records the calling session as the author of a
change. In an agent's REPL a change is a proposal under the review policy: with `review` it
waits for a person and the call returns a `Proposal` (the entry is unchanged until approved);
with `auto` it is made at once and the call returns the entry. An `update` or `delete` carries
the version this REPL last saw of the entry, so an edit made meanwhile by someone else is
refused (Conflict) instead of being overwritten.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.util
import sys
import types
import urllib.parse
import warnings
from pathlib import Path
from typing import Any

from .client import DaemonClient


def _client() -> DaemonClient:
    from .primitives import client  # one client per kernel, shared with rlm() and llm()

    return client()


class _Fields(dict[str, Any]):
    """A dict whose keys read as attributes too (`e.content`, `e.version`, ...)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Entry(_Fields):
    """A harness entry: a dict with attribute access (`e.content`, `e.version`, ...)."""

    def __repr__(self) -> str:
        head = f"{self['kind']} {self['id']!r} v{self['version']} ({self['scope']})"
        return f"<{head}: {self['summary']!r}>"


def _q(entry_id: str) -> str:
    if not isinstance(entry_id, str):
        raise TypeError(f"an entry id is a string, not {type(entry_id).__name__}")
    return urllib.parse.quote(entry_id, safe="")


class Proposal(_Fields):
    """A change that waits for a person's review (the review policy): nothing changed yet."""

    def __repr__(self) -> str:
        return f"<proposed {self['op']} of {self['kind']} {self['id']!r}: {self['message']}>"


def _entry_or_proposal(data: dict[str, Any]) -> Entry | Proposal:
    return Proposal(data) if data.get("proposed") else Entry(data)


class Kind:
    """The entries of one kind. `create`/`update` take the fields to set."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._seen: dict[str, int] = {}

    def __repr__(self) -> str:
        calls = "list() get(id) create(id, content, ...) update(id, ...) delete(id) history(id)"
        return f"<harness.{self.kind}: {calls}>"

    def _remember(self, data: dict[str, Any]) -> Entry | Proposal:
        entry = _entry_or_proposal(data)
        if isinstance(entry, Entry):
            self._seen[entry["id"]] = entry["version"]
        return entry

    def list(self) -> list[Entry]:
        data = _client().request("GET", "harness", query={"kind": self.kind})
        return [Entry(e) for e in data["entries"]]

    def get(self, id: str) -> Entry:
        entry = Entry(_client().request("GET", f"harness/{self.kind}/{_q(id)}"))
        self._seen[entry["id"]] = entry["version"]
        return entry

    def create(
        self,
        id: str,
        content: str = "",
        *,
        title: str = "",
        metadata: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        scope: str = "project",
        reason: str = "",
        evidence: builtins.list[Any] | None = None,
    ) -> Entry | Proposal:
        body = {
            "id": id,
            "content": content,
            "title": title,
            "metadata": metadata,
            "files": files,
            "scope": scope,
            "reason": reason,
            "evidence": evidence,
        }
        return self._remember(_client().request("POST", f"harness/{self.kind}", body))

    def update(
        self,
        id: str,
        content: str | None = None,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        files: dict[str, str] | None = None,
        base_version: int | None = None,
        reason: str = "",
        evidence: builtins.list[Any] | None = None,
    ) -> Entry | Proposal:
        """Change the given fields. Refused if the entry changed since this REPL last saw it
        (or since `base_version`)."""
        body = {
            "content": content,
            "title": title,
            "metadata": metadata,
            "files": files,
            "base_version": base_version if base_version is not None else self._seen.get(id),
            "reason": reason,
            "evidence": evidence,
        }
        return self._remember(_client().request("PUT", f"harness/{self.kind}/{_q(id)}", body))

    def delete(
        self, id: str, *, base_version: int | None = None, reason: str = ""
    ) -> dict[str, Any]:
        base = base_version if base_version is not None else self._seen.get(id)
        out = _client().request(
            "DELETE",
            f"harness/{self.kind}/{_q(id)}",
            query={"base_version": base, "reason": reason},
        )
        if not out.get("proposed"):
            self._seen.pop(id, None)
        return _entry_or_proposal(out) if out.get("proposed") else dict(out)

    def history(self, id: str) -> builtins.list[dict[str, Any]]:
        return list(_client().request("GET", f"harness/{self.kind}/{_q(id)}/history")["versions"])


class HarnessClient:
    """`harness.notes`, `.memory`, `.skills`, `.subagents`, `.examples` (learned, read-only
    for agents)."""

    def __init__(self) -> None:
        self.notes = Kind("notes")
        self.memory = Kind("memory")
        self.skills = Kind("skills")
        self.subagents = Kind("subagents")
        self.examples = Kind("examples")

    @property
    def specs(self) -> Kind:
        """The old name of `.subagents`, kept one release."""
        warnings.warn(
            "harness.specs is deprecated: use harness.subagents "
            "(the old name goes in the next release)",
            FutureWarning,
            stacklevel=2,
        )
        return self.subagents

    def __repr__(self) -> str:
        return (
            "<harness: .notes .memory .skills .subagents .examples; skill(name); "
            "refine(instructions)>"
        )

    def list(self) -> list[Entry]:
        return [Entry(e) for e in _client().request("GET", "harness")["entries"]]


class _SkillFiles(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a skill's sibling .py files from their text."""

    def __init__(self, folder: Path, files: dict[str, str]) -> None:
        self.folder = folder
        self.sources = {
            name[: -len(".py")].replace("/", "."): (name, text)
            for name, text in files.items()
            if name.endswith(".py")
        }

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self.sources:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        name, text = self.sources[module.__name__]
        module.__file__ = str(self.folder / name)
        exec(compile(text, module.__file__, "exec"), module.__dict__)


class Skill:
    """A skill's instructions; calling it calls the skill's entrypoint, if it has one."""

    def __init__(self, entry: dict[str, Any]) -> None:
        self.name: str = entry["id"]
        self.description: str = entry["title"]
        self.instructions: str = entry["content"]
        self.files: dict[str, str] = entry.get("files") or {}
        self.entrypoint: str | None = (entry.get("metadata") or {}).get("entrypoint")
        self.fn = self._load(Path(entry["file"]).parent) if self.entrypoint else None

    def _load(self, folder: Path) -> Any:
        module_name, func = str(self.entrypoint).split(":")
        source = self.files.get(module_name.replace(".", "/") + ".py")
        if source is None:
            module: Any = importlib.import_module(module_name)  # an installed module
        else:
            module = types.ModuleType(f"prime_skill_{self.name.replace('-', '_')}_{module_name}")
            module.__file__ = str(folder / f"{module_name}.py")
            # Sibling files of the skill are importable while its module runs; from the text
            # the daemon sent, since a sandboxed kernel cannot see the skill's folder.
            siblings = _SkillFiles(folder, self.files)
            sys.meta_path.insert(0, siblings)
            try:
                exec(compile(source, module.__file__, "exec"), module.__dict__)
            finally:
                sys.meta_path.remove(siblings)
        try:
            return getattr(module, func)
        except AttributeError:
            raise AttributeError(
                f"skill {self.name!r}: entrypoint {self.entrypoint!r} names no function {func!r}"
            ) from None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fn is None:
            raise TypeError(f"skill {self.name!r} has no entrypoint to call; read .instructions")
        return self.fn(*args, **kwargs)

    def __str__(self) -> str:
        return self.instructions

    def __repr__(self) -> str:
        call = f"\n(callable: {self.entrypoint})" if self.entrypoint else ""
        return f"Skill {self.name}: {self.description}\n\n{self.instructions}{call}"


def skill(name: str) -> Skill:
    """The skill called `name`: its instructions, and its callable if it declares one."""
    return Skill(_client().request("GET", f"harness/skills/{_q(name)}"))


def refine(instructions: str | None = None, *, session_id: str | None = None) -> dict[str, Any]:
    """Ask the daemon to refine the harness from recent sessions (or one session's subtree)."""
    body = {"instructions": instructions, "session_id": session_id}
    return dict(_client().request("POST", "harness/refine", body, timeout=600))


harness = HarnessClient()

# What `install()` pushes into a REPL namespace (see primitives._EXPORTS).
EXPORTS = {"harness": harness, "skill": skill, "refine": refine}
