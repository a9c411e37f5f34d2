"""Import and export: Prime Agent `harness_state.json` and folders of Agent Skills.

Prime Agent (PrimeIntellect-ai/prime-agent, `prime-agent-runtime/src/rlm/harness.py`) keeps its
harness in one JSON file: `{"schema": 1|2, "entries": {"prompt"|"memory"|"skill"|"subagent":
{id: {"title", "content", "path", "scope", "reference", "arguments", "metadata", "source",
"created_at", "updated_at", "version"}}}, "refinements": [...]}`. A skill's `reference` is
`{"type": "python", "import": module, "callable": name}`. Kinds map to ours as prompt -> note,
memory -> memory, skill -> skill (reference -> `entrypoint: module:callable`), subagent -> subagent;
ids are lowered and `_` becomes `-` (the original is kept in `metadata.imported_from`).
Only `title` and `content` are required of an entry; anything else missing is defaulted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..protocol.errors import Conflict, PrimeError
from ..util.files import atomic_write
from . import entries as E
from .manager import Harness

PRIME_KINDS = {"prompt": "note", "memory": "memory", "skill": "skill", "subagent": "subagent"}
_TO_PRIME = {v: k for k, v in PRIME_KINDS.items()}


def _our_id(raw: str) -> str:
    text = re.sub(r"[^a-z0-9._-]+", "-", str(raw).lower().replace("_", "-")).strip("-.")
    return E.check_id(text[: E.MAX_ID] or "entry")


def import_prime_state(
    harness: Harness,
    data: Any,
    *,
    author: str = "user",
    scope: str = "project",
    replace: bool = False,
) -> dict[str, Any]:
    """Import a Prime Agent harness_state.json document; returns what was done per entry."""
    if not isinstance(data, dict) or data.get("schema", 1) not in (1, 2):
        raise PrimeError(
            'not a Prime Agent harness_state.json: expected an object with "schema": 1 (or 2) '
            'and "entries" keyed by prompt/memory/skill/subagent'
        )
    kinds = data.get("entries")
    if not isinstance(kinds, dict) or not set(kinds) <= set(PRIME_KINDS):
        raise PrimeError(
            'harness_state.json "entries" must be an object keyed by prompt, memory, skill '
            f"and subagent (got {sorted(kinds) if isinstance(kinds, dict) else kinds!r})"
        )
    report: dict[str, list[Any]] = {"created": [], "updated": [], "skipped": []}
    for prime_kind, records in kinds.items():
        kind = PRIME_KINDS[prime_kind]
        if not isinstance(records, dict):
            raise PrimeError(f"entries.{prime_kind} must be an object of id -> entry")
        for raw_id, raw in records.items():
            if (
                not isinstance(raw, dict)
                or not isinstance(raw.get("title"), str)
                or not isinstance(raw.get("content"), str)
            ):
                report["skipped"].append(
                    {"kind": prime_kind, "id": raw_id, "why": "no title/content"}
                )
                continue
            entry_id = _our_id(raw_id)
            metadata = (
                dict(raw.get("metadata") or {}) if isinstance(raw.get("metadata"), dict) else {}
            )
            metadata["imported_from"] = f"prime-agent {prime_kind}:{raw_id}"
            if isinstance(raw.get("path"), str) and raw["path"] not in ("", "general"):
                metadata.setdefault("path", raw["path"])
            ref: dict[str, Any] = raw["reference"] if isinstance(raw.get("reference"), dict) else {}
            module = ref.get("import") or ref.get("python_import")
            func = ref.get("callable")
            if kind == "skill" and isinstance(module, str) and isinstance(func, str):
                metadata["entrypoint"] = f"{module}:{func}"
            if raw.get("arguments"):
                metadata["arguments"] = raw["arguments"]
            # The same fields whether the entry is new or (with replace) overwritten.
            fields: dict[str, Any] = {
                "title": raw["title"] or entry_id,
                "content": raw["content"],
                "metadata": metadata,
                "scope": scope,
                "author": author,
            }
            try:
                harness.create(
                    kind,
                    entry_id,
                    **fields,
                    reason="imported from a Prime Agent harness_state.json",
                )
                report["created"].append(f"{kind}/{entry_id}")
            except Conflict:
                if not replace:
                    report["skipped"].append({"kind": kind, "id": entry_id, "why": "exists"})
                    continue
                harness.update(
                    kind,
                    entry_id,
                    **fields,
                    reason="re-imported from a Prime Agent harness_state.json",
                )
                report["updated"].append(f"{kind}/{entry_id}")
            except E.InvalidEntry as e:
                report["skipped"].append({"kind": kind, "id": entry_id, "why": e.message})
    return report


def import_path(harness: Harness, path: str | Path, **kwargs: Any) -> dict[str, Any]:
    """Import a harness_state.json file, a folder of skills, or a single skill folder."""
    p = Path(path).expanduser()
    if p.is_file():
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except ValueError as e:
            raise PrimeError(f"{p} is not valid JSON: {e}") from None
        return import_prime_state(harness, data, **kwargs)
    if p.is_dir():
        return import_skills(harness, p, **kwargs)
    raise PrimeError(f"{p} does not exist")


def import_skills(
    harness: Harness,
    folder: Path,
    *,
    author: str = "user",
    scope: str = "project",
    replace: bool = False,
) -> dict[str, Any]:
    """Import every `<name>/SKILL.md` under `folder` (or `folder/SKILL.md` itself)."""
    dirs = (
        [folder]
        if (folder / E.SKILL_FILE).is_file()
        else sorted(d for d in folder.iterdir() if (d / E.SKILL_FILE).is_file())
    )
    if not dirs:
        raise PrimeError(f"no SKILL.md found in {folder} or its sub-folders")
    report: dict[str, list[Any]] = {"created": [], "updated": [], "skipped": []}
    for d in dirs:
        files = {E.SKILL_FILE: (d / E.SKILL_FILE).read_text(encoding="utf-8")}
        for f in sorted(d.iterdir()):
            if f.is_file() and f.name != E.SKILL_FILE and E.FILE_RE.match(f.name):
                try:
                    files[f.name] = f.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    report["skipped"].append({"file": str(f), "why": "not text"})
        meta, _ = E.parse_front_matter(files[E.SKILL_FILE], str(d / E.SKILL_FILE))
        entry_id = _our_id(meta.get("name") or d.name)
        files[E.SKILL_FILE] = _rename(files[E.SKILL_FILE], entry_id)
        entry = E.parse("skill", entry_id, files)
        # The same keyword arguments for create() and, when replacing, update().
        args: dict[str, Any] = {
            "title": entry.title,
            "content": entry.content,
            "metadata": entry.metadata,
            "files": entry.files,
            "scope": scope,
            "author": author,
            "reason": f"imported from {d}",
        }
        try:
            harness.create("skill", entry_id, **args)
            report["created"].append(f"skill/{entry_id}")
        except Conflict:
            if not replace:
                report["skipped"].append({"kind": "skill", "id": entry_id, "why": "exists"})
                continue
            harness.update("skill", entry_id, **args)
            report["updated"].append(f"skill/{entry_id}")
    return report


def _rename(text: str, name: str) -> str:
    """Point a SKILL.md's `name:` at our id (names like `My_Skill` become `my-skill`)."""
    return re.sub(r"(?m)^name:.*$", f"name: {name}", text, count=1)


def export(harness: Harness, dest: str | Path) -> dict[str, Any]:
    """Write the effective harness (project over global) as plain files plus harness_state.json."""
    out = Path(dest).expanduser()
    entries, errors = harness.list()
    state: dict[str, Any] = {
        "schema": 1,
        "entries": {k: {} for k in _TO_PRIME.values()},
        "refinements": [],
    }
    for e in entries:
        for name, text in E.render(e).items():
            rel = E.path_of(e.kind, e.id)
            target = out / (
                rel if name in (E.SKILL_FILE, "entry.md") else f"{rel.rsplit('/', 1)[0]}/{name}"
            )
            atomic_write(target, text.encode("utf-8"))
        if e.kind not in _TO_PRIME:
            continue  # Prime Agent has no worked examples: their files are the export
        record: dict[str, Any] = {
            "title": e.title,
            "content": e.content,
            "path": "general",
            "scope": "local",
            "metadata": {k: v for k, v in e.metadata.items() if k != "entrypoint"},
            "reference": {},
            "arguments": {},
            "source": "prime_kernel",
            "version": max(e.version, 1),
        }
        entrypoint = E.entrypoint_of(e) if e.kind == "skill" else None
        if entrypoint:
            record["reference"] = {
                "type": "python",
                "import": entrypoint[0],
                "callable": entrypoint[1],
            }
        state["entries"][_TO_PRIME[e.kind]][e.id] = record
    atomic_write(out / "harness_state.json", json.dumps(state, indent=2).encode("utf-8"))
    return {"folder": str(out), "entries": len(entries), "skipped": errors}
