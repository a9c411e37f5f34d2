"""The kinds of harness entry and their on-disk form: Markdown with YAML front matter.

- note   `notes/<id>.md`        standing instructions added to every session's context
- memory `memory/<id>.md`       a fact learned, with where it came from (`metadata.source`)
- skill  `skills/<id>/SKILL.md` Agent Skills format (`name`, `description`, then instructions),
                                 plus optional files; `entrypoint: module:function` is a callable
- subagent `subagents/<id>.md`  a named recipe for a child: instructions, `model`, `budget`,
                                 `max_turns` (a "spec", `specs/`, before it was renamed)
- example `examples/<id>.md`    a verified task and the code that answered it (`task`, `outcome`),
                                 recalled for similar tasks (see `examples`)

An entry is parsed from its raw files and rendered back to them; versions store the raw files,
so a rollback restores exactly what was there, broken front matter included.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..protocol.errors import FrontMatterError, InvalidEntry
from ..protocol.harness import ALIASES, DEPRECATED, deprecation
from ..protocol.harness import KINDS as SPECS
from . import examples

KINDS = tuple(k.value for k in SPECS)
# Folder of each kind under a harness root; also accepted in URLs and the REPL.
DIRS = {k.value: s.folder for k, s in SPECS.items()}
_ALIASES = {name: kind.value for name, kind in ALIASES.items()}
# What a store written before a kind was renamed holds under the old name: the kind (in the
# history) and its folder; both are migrated when the store is opened (files, versions).
OLD_KINDS = {old: new for old, new in DEPRECATED.items() if new in KINDS}
OLD_DIRS = {old: new for old, new in DEPRECATED.items() if new in DIRS.values()}

ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
MAX_ID = 64
SKILL_FILE = "SKILL.md"
# Extra files of a skill: flat names, text only (Python modules, data, docs).
FILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Front-matter keys that are the entry's own fields, not metadata.
_OWN_KEYS = {"title", "name", "description"}

Files = dict[str, str]


def kind_of(name: str) -> str:
    """The entry kind for a kind or folder name ('notes' -> 'note'); clear error otherwise. An
    old name is read as the new one, with a FutureWarning."""
    kind = _ALIASES.get(str(name).lower()) if isinstance(name, str) else None
    if kind is None:
        raise InvalidEntry(
            f"unknown harness kind {name!r}: use one of {', '.join(KINDS)} "
            f"(or {', '.join(DIRS.values())})"
        )
    note = deprecation(name)
    if note is not None:
        warnings.warn(note, FutureWarning, stacklevel=2)
    return kind


def check_id(entry_id: Any, what: str = "id") -> str:
    """Refuse ids that are not plain lowercase names: no paths, no traversal, no hidden files."""
    if not isinstance(entry_id, str) or not entry_id:
        raise InvalidEntry(f"the {what} must be a non-empty string")
    if len(entry_id) > MAX_ID or not ID_RE.match(entry_id) or ".." in entry_id:
        raise InvalidEntry(
            f"invalid {what} {entry_id!r}: use lowercase letters, digits, '.', '_' or '-', "
            f"starting with a letter or digit, at most {MAX_ID} characters (no paths like '../x')"
        )
    return entry_id


def check_file_name(name: Any) -> str:
    if not isinstance(name, str) or not FILE_RE.match(name) or ".." in name or name == SKILL_FILE:
        raise InvalidEntry(
            f"invalid skill file name {name!r}: a flat file name like 'tool.py' "
            f"(no folders, no '..', not {SKILL_FILE})"
        )
    return name


@dataclass
class Entry:
    kind: str
    id: str
    title: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    # Extra files of a skill (name -> text); empty for other kinds.
    files: Files = field(default_factory=dict)
    scope: str = "project"
    version: int = 0

    def summary(self) -> str:
        """One line for indexes: the title, else the first line of the content."""
        line = self.title or next((ln for ln in self.content.splitlines() if ln.strip()), "")
        return line.strip()[:200]

    def to_json(self, *, full: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "id": self.id,
            "title": self.title,
            "summary": self.summary(),
            "scope": self.scope,
            "version": self.version,
            "metadata": self.metadata,
            "path": path_of(self.kind, self.id),
        }
        if full:
            out["content"] = self.content
            out["files"] = self.files
        return out


def path_of(kind: str, entry_id: str) -> str:
    """The entry's main file, relative to a harness root."""
    if kind == "skill":
        return f"{DIRS[kind]}/{entry_id}/{SKILL_FILE}"
    return f"{DIRS[kind]}/{entry_id}.md"


def main_file(kind: str) -> str:
    """Name of the main file inside an entry's snapshot."""
    return SKILL_FILE if kind == "skill" else "entry.md"


def parse_front_matter(text: str, path: str) -> tuple[dict[str, Any], str]:
    """Split `---\\n<yaml>\\n---\\n<body>`; errors name the file and the line."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError(
            path, 1, "the file must start with a '---' line opening the front matter"
        )
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise FrontMatterError(path, 1, "the front matter opened by '---' is never closed by '---'")
    try:
        data = yaml.safe_load("".join(lines[1:end])) or {}
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        if e.context_mark is not None and (mark is None or mark.line >= end - 1):
            mark = e.context_mark  # an unclosed bracket or quote: where it was opened
        line = mark.line + 2 if mark is not None else 2  # +1 for the opening '---', +1 one-based
        raise FrontMatterError(path, line, f"invalid YAML: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise FrontMatterError(path, 2, f"invalid YAML: {e}") from None
    if not isinstance(data, dict):
        raise FrontMatterError(path, 2, "the front matter must be a mapping of `key: value` lines")
    body = "".join(lines[end + 1 :])
    return data, body.removeprefix("\n")


def parse(kind: str, entry_id: str, files: Files, *, scope: str = "project") -> Entry:
    """An entry from its raw files (as stored in a snapshot)."""
    path = path_of(kind, entry_id)
    text = files.get(main_file(kind))
    if text is None:
        raise InvalidEntry(f"{path} is missing")
    meta, body = parse_front_matter(text, path)
    meta = dict(meta)
    if kind == "skill":
        for key in ("name", "description"):
            if not isinstance(meta.get(key), str) or not meta[key].strip():
                raise FrontMatterError(
                    path, 2, f"a skill needs a non-empty `{key}` in its front matter"
                )
        if meta["name"] != entry_id:
            raise FrontMatterError(
                path, 2, f"`name: {meta['name']}` does not match the skill's folder {entry_id!r}"
            )
        title = meta.pop("description")
    else:
        title = meta.pop("title", "")
        if not isinstance(title, str):
            title = str(title)
    for key in _OWN_KEYS:
        meta.pop(key, None)
    extra = {k: v for k, v in files.items() if k != main_file(kind)}
    return Entry(kind, entry_id, title, body, meta, extra, scope)


def render(entry: Entry) -> Files:
    """The raw files of an entry (inverse of `parse`)."""
    head: dict[str, Any] = {}
    if entry.kind == "skill":
        head["name"] = entry.id
        head["description"] = entry.title
    elif entry.title:
        head["title"] = entry.title
    head.update({k: v for k, v in entry.metadata.items() if k not in _OWN_KEYS})
    front = yaml.safe_dump(head, sort_keys=False, allow_unicode=True, width=100).strip()
    content = (
        entry.content if entry.content.endswith("\n") or not entry.content else entry.content + "\n"
    )
    files = {main_file(entry.kind): f"---\n{front}\n---\n\n{content}"}
    if entry.kind == "skill":
        files.update(entry.files)
    return files


def validate(entry: Entry, *, max_chars: int) -> None:
    """Check a new or updated entry before it is written."""
    check_id(entry.id)
    if not isinstance(entry.title, str) or not isinstance(entry.content, str):
        raise InvalidEntry("title and content must be strings")
    if not isinstance(entry.metadata, dict):
        raise InvalidEntry("metadata must be a JSON object")
    if entry.kind == "skill" and not entry.title.strip():
        raise InvalidEntry("a skill needs a one-line description (its title)")
    if entry.kind != "skill" and entry.files:
        raise InvalidEntry("only skills have extra files")
    for name, text in entry.files.items():
        check_file_name(name)
        if not isinstance(text, str):
            raise InvalidEntry(f"skill file {name!r} must be text")
    size = len(entry.content) + sum(len(t) for t in entry.files.values())
    if size > max_chars:
        raise InvalidEntry(f"the entry is {size} characters; the limit is {max_chars}")
    if entry.kind == "skill" and "entrypoint" in entry.metadata:
        entrypoint_of(entry)
    if entry.kind == "subagent":
        subagent_options(entry)
    if entry.kind == "example":
        examples.check(entry.metadata, entry.content)


def entrypoint_of(entry: Entry) -> tuple[str, str] | None:
    """`module:function` of a skill's callable, if it declares one."""
    raw = entry.metadata.get("entrypoint")
    if raw is None:
        return None
    if not isinstance(raw, str) or raw.count(":") != 1:
        raise InvalidEntry(f"skill {entry.id!r}: entrypoint must look like 'module:function'")
    module, func = raw.split(":")
    if not module or not func or not all(p.isidentifier() for p in [*module.split("."), func]):
        raise InvalidEntry(f"skill {entry.id!r}: entrypoint {raw!r} is not 'module:function'")
    return module, func


def subagent_options(entry: Entry) -> dict[str, Any]:
    """What a sub-agent sets on a child session: model, budget, max_turns (validated)."""
    meta = entry.metadata
    out: dict[str, Any] = {}
    if meta.get("model") is not None:
        if not isinstance(meta["model"], str) or not meta["model"]:
            raise InvalidEntry(f"sub-agent {entry.id!r}: model must be a litellm model name")
        out["model"] = meta["model"]
    if meta.get("budget") is not None:
        if not isinstance(meta["budget"], dict):
            raise InvalidEntry(f"sub-agent {entry.id!r}: budget must be a mapping")
        out["budget"] = meta["budget"]
    if meta.get("max_turns") is not None:
        turns = meta["max_turns"]
        if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
            raise InvalidEntry(f"sub-agent {entry.id!r}: max_turns must be a positive integer")
        out["max_turns"] = turns
    return out
