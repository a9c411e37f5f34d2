"""The Continual Harness: typed entries on disk, versioned, with the daemon's view of them.

`Harness` is what the daemon, the REST handlers, the CLI and refinement call. It reads and writes
entries through `HarnessFiles`, records every change in the scope's `VersionStore`, and notices
files edited by hand (their hash differs from the last recorded version) on every read and list.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from traitlets import Enum, Int, Unicode, default
from traitlets.config import LoggingConfigurable

from ..protocol.errors import Conflict, NotFound, PrimeError
from . import entries as E
from . import examples
from .files import SCOPES, HarnessFiles, digest
from .versions import VersionStore, diff

HAND_EDIT = "user (hand edit)"


class Harness(LoggingConfigurable):
    """Configure as `c.Harness.<trait>`."""

    project_dir = Unicode("", help="The project scope's root (default: <store_dir>/harness).")
    global_dir = Unicode(
        config=True, help="The global scope's root, shared by all projects of this user."
    )
    context_chars = Int(
        6000, config=True, help="Characters of harness text added to each session's prompt."
    )
    max_entry_chars = Int(100_000, config=True, help="Largest entry (content plus files).")
    review_policy = Enum(
        ["auto", "review"],
        "review",
        config=True,
        help="Changes not made by a person — a refinement's edits, what is learned from a "
        "verified session, an agent's writes from its kernel — are proposals: auto applies "
        "them at once; review holds them until a person approves. Flagged edits always wait.",
    )

    @default("global_dir")
    def _default_global_dir(self) -> str:
        return str(Path.home() / ".prime" / "harness")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not self.project_dir:
            raise ValueError("Harness needs project_dir")
        self.files = HarnessFiles(
            {"project": Path(self.project_dir), "global": Path(self.global_dir).expanduser()}
        )
        self._versions: dict[str, VersionStore] = {}
        # Blanks out secrets in what is written (a daemon sets its own): an entry's files, its
        # history, refinements, and the text added to prompts (a file edited by hand is the
        # person's own, but what goes from it into a prompt or the history is scrubbed).
        self.scrub: Callable[[Any], Any] = lambda value: value
        self._indexed: set[str] = set()  # scopes whose example index was checked

    def close(self) -> None:
        for store in self._versions.values():
            store.close()
        self._versions.clear()

    def versions(self, scope: str = "project") -> VersionStore:
        if scope not in SCOPES:
            raise E.InvalidEntry(f"unknown scope {scope!r}: use 'project' or 'global'")
        if scope not in self._versions:
            self._versions[scope] = VersionStore(
                self.files.root(scope) / "history.sqlite3", scrub=lambda v: self.scrub(v)
            )
        return self._versions[scope]

    # -- reading (noticing hand edits on the way) -----------------------------------------
    def _sync(self, scope: str, kind: str, entry_id: str) -> tuple[E.Files | None, int]:
        """The entry's files and version, after recording any change made outside Prime."""
        store = self.versions(scope)
        with store.transaction():
            current = self.files.read(scope, kind, entry_id)
            last = store.latest(kind, entry_id)
            now = digest(current)
            if now == (last["hash"] if last else None):
                return current, last["version"] if last else 0
            before = last["after"] if last else None
            op = "delete" if current is None else ("create" if before is None else "update")
            row = store.append(
                kind,
                entry_id,
                op=op,
                author=HAND_EDIT,
                before=before,
                after=current,
                digest=now,
                reason="the file was changed outside Prime",
            )
            self._reindex(scope, kind, entry_id, current, row["version"])
            return current, row["version"]

    def _scopes_with(self, kind: str) -> list[str]:
        # The global scope costs nothing until its folder exists.
        return [s for s in SCOPES if s == "project" or self.files.root(s).is_dir()]

    def find(self, kind: str, entry_id: str, scope: str | None = None) -> tuple[str, E.Files, int]:
        """(scope, files, version) of an entry; the project wins over global."""
        kind = E.kind_of(kind)
        E.check_id(entry_id)
        for s in [scope] if scope else self._scopes_with(kind):
            files, version = self._sync(s, kind, entry_id)
            if files is not None:
                return s, files, version
        where = f" in the {scope} scope" if scope else ""
        raise NotFound(f"no {kind} named {entry_id!r}{where}", kind=kind, id=entry_id)

    def get(self, kind: str, entry_id: str, scope: str | None = None) -> E.Entry:
        kind = E.kind_of(kind)
        s, files, version = self.find(kind, entry_id, scope)
        entry = E.parse(kind, entry_id, files, scope=s)
        entry.version = version
        return entry

    def list(self, kind: str | None = None) -> tuple[list[E.Entry], list[dict[str, Any]]]:
        """Entries of one kind (or all), project over global; and files that do not parse."""
        kinds = [E.kind_of(kind)] if kind else list(E.KINDS)
        out: list[E.Entry] = []
        errors: list[dict[str, Any]] = []
        # Asked once per scope, not once per kind: every session's start lists them all.
        histories: dict[str, builtins.list[tuple[str, str]]] = {}
        for k in kinds:
            seen: set[str] = set()
            for scope in self._scopes_with(k):
                ids = set(self.files.ids(scope, k))
                # Entries deleted by hand have a history but no file: notice those too.
                if scope not in histories:
                    histories[scope] = self.versions(scope).entry_keys()
                ids |= {i for kk, i in histories[scope] if kk == k}
                for entry_id in sorted(ids):
                    files, version = self._sync(scope, k, entry_id)
                    if files is None or entry_id in seen:
                        continue
                    seen.add(entry_id)
                    try:
                        entry = E.parse(k, entry_id, files, scope=scope)
                    except E.InvalidEntry as e:
                        errors.append({"kind": k, "id": entry_id, "scope": scope, **e.to_json()})
                        continue
                    entry.version = version
                    out.append(entry)
        return out, errors

    # -- writing --------------------------------------------------------------------------
    def change(
        self,
        scope: str,
        kind: str,
        entry_id: str,
        new: E.Files | None,
        *,
        base_version: int | None,
        author: str,
        reason: str = "",
        evidence: builtins.list[Any] | None = None,
        refinement_id: str | None = None,
        op: str | None = None,
    ) -> dict[str, Any]:
        """Write an entry's files (`new`; None deletes it) in `scope`: the one path of every
        create, update, delete and rollback, so each is scrubbed, checked against
        `base_version` (None: whatever is there) and recorded as a version."""
        new = self.scrub(new)
        store = self.versions(scope)
        with store.transaction():
            current, version = self._sync(scope, kind, entry_id)
            if base_version is not None and base_version != version:
                last = store.latest(kind, entry_id)
                who = f" by {last['author']}" if last else ""
                raise Conflict(
                    f"{kind} {entry_id!r} was changed{who} (now version {version}) since version "
                    f"{base_version} that this edit started from; get it again and re-apply "
                    "the edit",
                    kind=kind,
                    id=entry_id,
                    version=version,
                    base_version=base_version,
                )
            self.files.write(scope, kind, entry_id, new)
            if op is None:
                op = "delete" if new is None else ("create" if current is None else "update")
            row = store.append(
                kind,
                entry_id,
                op=op,
                author=author,
                before=current,
                after=new,
                digest=digest(new),
                reason=reason,
                evidence=evidence,
                refinement_id=refinement_id,
            )
            self._reindex(scope, kind, entry_id, new, row["version"])
            return row

    def create(
        self,
        kind: str,
        entry_id: str,
        *,
        title: str = "",
        content: str = "",
        metadata: dict[str, Any] | None = None,
        files: E.Files | None = None,
        scope: str = "project",
        author: str = "user",
        reason: str = "",
        evidence: builtins.list[Any] | None = None,
        refinement_id: str | None = None,
    ) -> E.Entry:
        kind = E.kind_of(kind)
        self.versions(scope)  # validates the scope
        entry = E.Entry(
            kind, entry_id, title, content, dict(metadata or {}), dict(files or {}), scope
        )
        E.validate(entry, max_chars=self.max_entry_chars)
        store = self.versions(scope)
        with store.transaction():
            current, version = self._sync(scope, kind, entry_id)
            if current is not None:
                raise Conflict(
                    f"{kind} {entry_id!r} already exists (version {version}); update it instead",
                    kind=kind,
                    id=entry_id,
                    version=version,
                )
            self.change(
                scope,
                kind,
                entry_id,
                E.render(entry),
                base_version=version,
                author=author,
                reason=reason,
                evidence=evidence,
                refinement_id=refinement_id,
            )
        return self.get(kind, entry_id, scope)

    def update(
        self,
        kind: str,
        entry_id: str,
        *,
        title: str | None = None,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        files: E.Files | None = None,
        base_version: int | None = None,
        scope: str | None = None,
        author: str = "user",
        reason: str = "",
        evidence: builtins.list[Any] | None = None,
        refinement_id: str | None = None,
    ) -> E.Entry:
        """Change the given fields; `base_version` refuses the edit if someone changed it since."""
        kind = E.kind_of(kind)
        if scope == "project" and not self.files.read("project", kind, entry_id):
            # A project override of a global entry starts as a copy of it.
            found, old_files, version = self.find(kind, entry_id, "global")
            if base_version is not None and base_version != version:
                raise Conflict(
                    f"{kind} {entry_id!r} is at version {version}, not {base_version}",
                    kind=kind,
                    id=entry_id,
                    version=version,
                    base_version=base_version,
                )
            base_version = self._sync("project", kind, entry_id)[1]
        else:
            found, old_files, version = self.find(kind, entry_id, scope)
        target = scope or found
        old = E.parse(kind, entry_id, old_files, scope=found)
        new = E.Entry(
            kind,
            entry_id,
            old.title if title is None else title,
            old.content if content is None else content,
            dict(old.metadata if metadata is None else metadata),
            dict(old.files if files is None else files),
            target,
        )
        E.validate(new, max_chars=self.max_entry_chars)
        self.change(
            target,
            kind,
            entry_id,
            E.render(new),
            base_version=base_version,
            author=author,
            reason=reason,
            evidence=evidence,
            refinement_id=refinement_id,
        )
        return self.get(kind, entry_id, target)

    def delete(
        self,
        kind: str,
        entry_id: str,
        *,
        base_version: int | None = None,
        scope: str | None = None,
        author: str = "user",
        reason: str = "",
        evidence: builtins.list[Any] | None = None,
        refinement_id: str | None = None,
    ) -> dict[str, Any]:
        kind = E.kind_of(kind)
        found, _, _ = self.find(kind, entry_id, scope)
        row = self.change(
            found,
            kind,
            entry_id,
            None,
            base_version=base_version,
            author=author,
            reason=reason,
            evidence=evidence,
            refinement_id=refinement_id,
        )
        return {
            "kind": kind,
            "id": entry_id,
            "scope": found,
            "deleted": True,
            "version": row["version"],
        }

    # -- history --------------------------------------------------------------------------
    def _history_scope(self, kind: str, entry_id: str, scope: str | None) -> str:
        if scope:
            return scope
        for s in self._scopes_with(kind):
            self._sync(s, kind, entry_id)
            if self.versions(s).latest(kind, entry_id):
                return s
        raise NotFound(f"no {kind} named {entry_id!r} has any history", kind=kind, id=entry_id)

    def history(
        self, kind: str, entry_id: str, scope: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        kind = E.kind_of(kind)
        E.check_id(entry_id)
        s = self._history_scope(kind, entry_id, scope)
        self._sync(s, kind, entry_id)
        rows = self.versions(s).history(kind, entry_id)
        return [_version_json(r, s) for r in rows]

    def version(
        self, kind: str, entry_id: str, version: int, scope: str | None = None
    ) -> dict[str, Any]:
        kind = E.kind_of(kind)
        E.check_id(entry_id)
        s = self._history_scope(kind, entry_id, scope)
        row = self.versions(s).get(kind, entry_id, _int(version, "version"))
        if row is None:
            last = self.versions(s).latest(kind, entry_id)
            top = last["version"] if last else 0
            raise NotFound(
                f"{kind} {entry_id!r} has no version {version} (it has versions 1 to {top})",
                kind=kind,
                id=entry_id,
                version=version,
            )
        return {**_version_json(row, s), "before": row["before"], "after": row["after"]}

    def diff(
        self, kind: str, entry_id: str, a: int, b: int | None = None, scope: str | None = None
    ) -> str:
        """Unified diff of the entry's files at version `a` and version `b` (default: latest)."""
        old = self.version(kind, entry_id, a, scope)
        if b is None:
            hist = self.history(kind, entry_id, old["scope"])
            b = hist[-1]["version"]
        new = self.version(kind, entry_id, b, old["scope"])
        return diff(old["after"], new["after"], f"v{a}", f"v{b}")

    def rollback(
        self,
        kind: str,
        entry_id: str,
        version: int,
        *,
        scope: str | None = None,
        author: str = "user",
        reason: str = "",
    ) -> dict[str, Any]:
        """Make the entry's files exactly what they were at `version` (a new version)."""
        target = self.version(kind, entry_id, version, scope)
        kind = target["kind"]
        row = self.change(
            target["scope"],
            kind,
            entry_id,
            target["after"],
            base_version=None,
            author=author,
            reason=reason or f"rollback to version {target['version']}",
            op="rollback",
        )
        return _version_json(row, target["scope"])

    # -- what sessions use ----------------------------------------------------------------
    def skill(self, name: str) -> E.Entry:
        return self.get("skill", name)

    def subagent(self, name: str) -> tuple[E.Entry, dict[str, Any]]:
        """A sub-agent and the session options it sets (model, budget, max_turns)."""
        if not isinstance(name, str):
            raise PrimeError("subagent must be the name of a sub-agent of the harness")
        try:
            entry = self.get("subagent", name)
        except NotFound:
            known = ", ".join(e.id for e in self.list("subagent")[0]) or "none"
            raise NotFound(
                f"no sub-agent named {name!r} (known sub-agents: {known}); create one with "
                "harness.subagents.create(...) or `prime-agent harness new subagent NAME`",
                kind="subagent",
                id=name,
            ) from None
        return entry, E.subagent_options(entry)

    def context(self, record: dict[str, Any]) -> str:
        from .context import build_context

        return str(self.scrub(build_context(self, record)))

    # -- worked examples (see harness.examples) ------------------------------------------------
    def _reindex(
        self, scope: str, kind: str, entry_id: str, files: E.Files | None, version: int
    ) -> None:
        if kind != "example":
            return
        outcome: str | None = None
        terms: builtins.list[str] = []
        if files is not None:
            try:
                entry = E.parse(kind, entry_id, files, scope=scope)
                example = examples.from_entry(entry)
            except E.InvalidEntry:
                pass  # a broken file is not recalled until it is fixed
            else:
                if example.outcome in examples.OUTCOMES and example.code:
                    outcome, terms = example.outcome, examples.terms(example.task)
        self.versions(scope).index_example(entry_id, version, outcome, terms)

    def _index(self, scope: str) -> builtins.list[examples.Indexed]:
        """The scope's indexed examples; the first time, any missing from the index are added
        (a store from before the index, entries copied in by hand)."""
        store = self.versions(scope)
        if scope not in self._indexed:
            self._indexed.add(scope)
            known = {row[0]: row[1] for row in store.indexed_examples()}
            ids = set(self.files.ids(scope, "example")) | {
                i for k, i in store.entry_keys() if k == "example"
            }
            for entry_id in sorted(ids):
                files, version = self._sync(scope, "example", entry_id)
                if known.get(entry_id) != version:
                    self._reindex(scope, "example", entry_id, files, version)
        return [
            examples.Indexed(entry_id, scope, outcome, terms)
            for entry_id, _, outcome, terms in store.indexed_examples()
        ]

    def recall(
        self,
        task: str,
        *,
        right: int,
        wrong: int,
        min_coverage: float,
        max_chars: int | None = None,
        same_task: Callable[[examples.Example], bool] | None = None,
    ) -> builtins.list[examples.Example]:
        """At most `right` worked examples and `wrong` cautions (verified wrong answers) for a
        task, each matching at least `min_coverage` of its term weight, the most relevant first;
        a project example hides a global one of the same id. A worked example whose code is
        longer than `max_chars` is passed over for the next (a caution shows no code).

        A caution is recalled for the very task it was learned from (`same_task` says which
        are: the same text and the same input), or for a similar one if a person wrote why it
        was wrong; a checker's bare verdict on another task teaches this one nothing (see
        Example.caution)."""
        want = {"right": right, "wrong": wrong}
        if not task or not any(want.values()):
            return []
        docs: dict[str, examples.Indexed] = {}
        for scope in self._scopes_with("example"):
            for doc in self._index(scope):
                docs.setdefault(doc.id, doc)
        out = []
        for score, doc in examples.rank(task, docs.values(), min_coverage=min_coverage):
            if want.get(doc.outcome, 0) <= 0:
                continue
            try:
                entry = self.get("example", doc.id, doc.scope)
            except (NotFound, E.InvalidEntry):
                continue  # changed meanwhile; the next read reindexes it
            found = examples.from_entry(entry, score)
            if found.right and max_chars is not None and len(found.code) > max_chars:
                continue
            if not found.right:
                same = same_task is not None and same_task(found)
                if not same and not found.note:
                    continue
                found = dataclasses.replace(found, same_task=same)
            out.append(found)
            want[doc.outcome] -= 1
        return out


def _int(value: Any, name: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise PrimeError(f"{name} must be an integer, not {value!r}") from None
    if number < 1:
        raise PrimeError(f"{name} must be at least 1")
    return number


def _version_json(row: dict[str, Any], scope: str) -> dict[str, Any]:
    return {
        "kind": row["kind"],
        "id": row["entry_id"],
        "scope": scope,
        "version": row["version"],
        "op": row["op"],
        "author": row["author"],
        "reason": row["reason"],
        "evidence": row["evidence"],
        "refinement_id": row["refinement_id"],
        "ts": row["ts"],
        "hash": row["hash"],
    }
