"""`prime-agent harness ...`, `prime-agent refine`, `prime-agent refinements` and
`prime-agent verify`.

These work offline on the harness files and their history under --root (no server needed); a
running server sees the same files and notices every change on its next read. `verify` changes
a session's record, so it asks the daemon that serves the root, if one does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol.harness import DEPRECATED, deprecation
from .common import CLIError, dump_json, fmt_time, print_table, resolved_root

if TYPE_CHECKING:  # imported where used: --help needs none of them
    from ..daemon.daemon import Daemon
    from ..harness import Harness


def add_commands(sub: Any) -> None:
    p = sub.add_parser("harness", help="list, show, edit and roll back harness entries")
    hs = p.add_subparsers(dest="harness_command", metavar="ACTION")
    hs.required = True

    q = hs.add_parser("list", help="entries of every kind (or --kind)")
    q.add_argument("--kind", type=_kind)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_list)

    q = hs.add_parser("show", help="one entry (or one of its versions)")
    _entry_args(q)
    q.add_argument("--version", type=int, help="show this version's files")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_show)

    for name, helptext in (("new", "create an entry"), ("edit", "change an entry")):
        q = hs.add_parser(name, help=helptext + " (edit with no fields opens $EDITOR)")
        _entry_args(q)
        q.add_argument("--title")
        q.add_argument("--content", help="the text ('-' reads standard input)")
        q.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="KEY=YAML",
            help="a metadata field, e.g. --set model=openai/gpt-4o (repeatable)",
        )
        q.add_argument("--reason", default="")
        if name == "new":
            q.add_argument("--scope", choices=["project", "global"], default="project")
        else:
            q.add_argument("--base-version", type=int, help="refuse if the entry moved past this")
        q.set_defaults(func=cmd_new if name == "new" else cmd_edit)

    q = hs.add_parser("rm", help="delete an entry (its history stays)")
    _entry_args(q)
    q.add_argument("--reason", default="")
    q.set_defaults(func=cmd_rm)

    q = hs.add_parser("history", help="every version of an entry (--diff A [B] for a diff)")
    _entry_args(q)
    q.add_argument("--diff", nargs="+", type=int, metavar="VERSION")
    q.set_defaults(func=cmd_history)

    q = hs.add_parser("rollback", help="restore an entry's files as they were at VERSION")
    _entry_args(q)
    q.add_argument("version", type=int)
    q.set_defaults(func=cmd_rollback)

    q = hs.add_parser("import", help="import a harness_state.json or a folder of SKILL.md")
    q.add_argument("path")
    q.add_argument("--replace", action="store_true", help="update entries that exist")
    q.set_defaults(func=cmd_import)

    q = hs.add_parser("export", help="write the harness as a folder of files")
    q.add_argument("path")
    q.set_defaults(func=cmd_export)

    p = sub.add_parser("refine", help="ask a model to improve the harness from recent sessions")
    p.add_argument("instructions", nargs="*", help="what to focus on")
    p.add_argument("--session", help="use this session (and its children) as the evidence")
    p.add_argument(
        "--model", help="the model to ask (default: Refiner.refine_model or PRIME_MODEL)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_refine)

    p = sub.add_parser(
        "verify",
        help="mark a session's answer right (or --wrong); the harness learns from it",
    )
    p.add_argument("id", help="the session")
    p.add_argument("--wrong", action="store_true", help="the answer is wrong")
    p.add_argument("--note", default="", help="why, or what the right answer is")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("refinements", help="list, review and roll back refinements")
    p.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=["list", "show", "approve", "reject", "rollback"],
    )
    p.add_argument("id", nargs="?", help="the refinement")
    p.add_argument("edits", nargs="*", type=int, help="edit numbers (default: all pending)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_refinements)


def _entry_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", type=_kind, help="note, memory, skill or subagent")
    p.add_argument("id")


def _kind(name: str) -> str:
    """A kind as typed: an old name (`spec`) is read as the new one, with a note."""
    note = deprecation(name)
    if note is None:
        return name
    print(f"note: {note}", file=sys.stderr)
    return DEPRECATED[name.lower()]


def _harness(args: argparse.Namespace) -> Harness:
    """The root's harness alone: these commands edit files, so they import none of the
    daemon (its model and kernel libraries take seconds)."""
    from ..harness import Harness

    # Where the daemon keeps it (Daemon.store_dir's default, ROOT/.prime).
    return Harness(project_dir=str(resolved_root(args.root) / ".prime" / "harness"))


def _run(args: argparse.Namespace, action: Callable[[Harness], int]) -> int:
    """Run `action(harness)`, reporting PrimeErrors as CLI errors."""
    from ..protocol.errors import PrimeError

    harness = _harness(args)
    try:
        return int(action(harness) or 0)
    except PrimeError as e:
        raise CLIError(e.message, exit_code=1) from None
    finally:
        harness.close()


def _metadata(pairs: list[str], base: dict[str, Any]) -> dict[str, Any] | None:
    import yaml

    if not pairs:
        return None
    out = dict(base)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CLIError(f"--set wants KEY=VALUE, not {pair!r}")
        try:
            out[key] = yaml.safe_load(value) if value else None
        except yaml.YAMLError as e:
            raise CLIError(f"--set {key}: the value is not YAML: {e}") from None
        if out[key] is None:
            del out[key]
    return out


def _content(value: str | None) -> str | None:
    return sys.stdin.read() if value == "-" else value


def cmd_list(args: argparse.Namespace) -> int:
    def action(h: Harness) -> int:
        entries, errors = h.list(args.kind)
        if args.json:
            print(
                dump_json({"entries": [e.to_json(full=False) for e in entries], "errors": errors})
            )
            return 0
        if not entries and not errors:
            print(f"no harness entries (files go in {h.files.root('project')})")
            return 0
        print_table(
            ["KIND", "ID", "VERSION", "SCOPE", "SUMMARY"],
            [[e.kind, e.id, f"v{e.version}", e.scope, e.summary()] for e in entries]
            + [[x["kind"], x["id"], "BROKEN", "", x["message"]] for x in errors],
        )
        return 0

    return _run(args, action)


def cmd_show(args: argparse.Namespace) -> int:
    from ..harness import entries as E

    def action(h: Harness) -> int:
        if args.version:
            v = h.version(args.kind, args.id, args.version)
            if args.json:
                print(dump_json(v))
                return 0
            print(f"{v['kind']} {v['id']} version {v['version']} ({v['op']} by {v['author']})")
            for name, text in (v["after"] or {}).items():
                print(f"── {name}\n{text}")
            return 0
        e = h.get(args.kind, args.id)
        if args.json:
            print(dump_json(e.to_json()))
            return 0
        print(f"# {e.kind} {e.id} · version {e.version} · {e.scope}")
        print(f"# {h.files.location(e.scope, e.kind, e.id)}")
        for name, text in E.render(e).items():
            print(text if name in ("entry.md", "SKILL.md") else f"── {name}\n{text}")
        return 0

    return _run(args, action)


def cmd_new(args: argparse.Namespace) -> int:
    def action(h: Harness) -> int:
        e = h.create(
            args.kind,
            args.id,
            title=args.title or "",
            content=_content(args.content) or "",
            metadata=_metadata(args.set, {}),
            scope=args.scope,
            author="user",
            reason=args.reason,
        )
        print(
            f"created {e.kind} {e.id} (version {e.version}): "
            f"{h.files.location(e.scope, e.kind, e.id)}"
        )
        return 0

    return _run(args, action)


def cmd_edit(args: argparse.Namespace) -> int:
    def action(h: Harness) -> int:
        if args.title is None and args.content is None and not args.set:
            return _open_editor(h, args)
        old = h.get(args.kind, args.id)
        e = h.update(
            args.kind,
            args.id,
            title=args.title,
            content=_content(args.content),
            metadata=_metadata(args.set, old.metadata),
            base_version=args.base_version,
            author="user",
            reason=args.reason,
        )
        print(f"updated {e.kind} {e.id} to version {e.version}")
        return 0

    return _run(args, action)


def _open_editor(h: Harness, args: argparse.Namespace) -> int:
    e = h.get(args.kind, args.id)
    path = h.files.location(e.scope, e.kind, e.id)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    subprocess.run([*editor.split(), str(path)], check=False)
    after = h.get(args.kind, args.id)  # notices the edit and versions it
    if after.version == e.version:
        print("no change")
    else:
        print(f"updated {after.kind} {after.id} to version {after.version}")
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    def action(h: Harness) -> int:
        out = h.delete(args.kind, args.id, author="user", reason=args.reason)
        print(
            f"deleted {out['kind']} {out['id']} (version {out['version']}; "
            "`prime-agent harness rollback` restores it)"
        )
        return 0

    return _run(args, action)


def cmd_history(args: argparse.Namespace) -> int:
    def action(h: Harness) -> int:
        if args.diff:
            b = args.diff[1] if len(args.diff) > 1 else None
            print(h.diff(args.kind, args.id, args.diff[0], b), end="")
            return 0
        for v in h.history(args.kind, args.id):
            why = f" — {v['reason']}" if v["reason"] else ""
            cites = ", ".join(
                str(x.get("session_id", x)) for x in v["evidence"] if isinstance(x, dict)
            )
            cites = f" [evidence: {cites}]" if cites else ""
            print(f"v{v['version']:<3} {fmt_time(v['ts'])}  {v['op']:<8} {v['author']}{why}{cites}")
        return 0

    return _run(args, action)


def cmd_rollback(args: argparse.Namespace) -> int:
    def action(h: Harness) -> int:
        v = h.rollback(args.kind, args.id, args.version, author="user")
        print(
            f"{v['kind']} {v['id']} restored to version {args.version} (now version {v['version']})"
        )
        return 0

    return _run(args, action)


def cmd_import(args: argparse.Namespace) -> int:
    from ..harness import interop

    def action(h: Harness) -> int:
        out = interop.import_path(h, args.path, replace=args.replace)
        print(
            f"created {len(out['created'])}, updated {len(out['updated'])}, "
            f"skipped {len(out['skipped'])}"
        )
        for item in out["skipped"]:
            print(f"  skipped {item}")
        return 0

    return _run(args, action)


def cmd_export(args: argparse.Namespace) -> int:
    from ..harness import interop

    def action(h: Harness) -> int:
        out = interop.export(h, args.path)
        print(f"wrote {out['entries']} entries to {out['folder']}")
        return 0

    return _run(args, action)


def print_refinement(r: dict[str, Any]) -> None:
    print(f"refinement {r['id']} · {r['status']} · {fmt_time(r['created'])} · by {r['author']}")
    if r.get("error"):
        print(f"  error: {r['error']}")
    for key in ("summary", "rationale", "expected_outcome"):
        if r.get(key):
            print(f"  {key.replace('_', ' ')}: {r[key]}")
    for e in r["edits"]:
        note = f" — {e['note']}" if e.get("note") else ""
        print(
            f"  [{e['index']}] {e['status']:<8} {e['op']} {e['kind']} {e['id']}: "
            f"{e.get('reason', '')}{note}"
        )


def _with_daemon(args: argparse.Namespace, action: Callable[[Daemon], int]) -> int:
    """Run `action(daemon)` on a daemon of the root's store, not started (no server, no
    kernels): for what needs its store (the sessions are the evidence) or its model router."""
    from ..daemon.daemon import Daemon
    from ..protocol.errors import PrimeError

    daemon = Daemon(root_dir=str(resolved_root(args.root)))
    harness, store = daemon.harness, daemon.store
    try:
        daemon.open()
        return action(daemon)
    except PrimeError as e:
        raise CLIError(e.message, exit_code=1) from None
    finally:
        harness.close()
        asyncio.run(store.close())


def cmd_refine(args: argparse.Namespace) -> int:
    from .follow import StatusLine

    def action(daemon: Daemon) -> int:
        refiner = daemon.refiner
        if args.model:
            refiner.refine_model = args.model
        model = refiner.model()
        status = StatusLine(sys.stderr) if sys.stderr.isatty() else None
        if status is None:
            print(f"refining with {model} (at most {refiner.refine_timeout:g} s)…", file=sys.stderr)

        async def tick() -> None:
            # The model reads the prompt first (silent), then writes its reply (streamed).
            since = time.monotonic()
            while status is not None:
                running = refiner.progress()
                doing = (
                    f"{running[0]['chars']} characters of reply"
                    if running and running[0]["phase"] == "writing"
                    else "reading the evidence"
                )
                status.draw(f"refining with {model}: {doing}", since)
                await asyncio.sleep(0.25)

        async def refine() -> dict[str, Any]:
            ticker = asyncio.ensure_future(tick())
            try:
                return await refiner.refine(
                    instructions=" ".join(args.instructions) or None,
                    author="user",
                    trigger="prime-agent refine",
                    session_id=args.session,
                )
            finally:
                ticker.cancel()
                if status is not None:
                    status.clear()

        record = asyncio.run(refine())
        if args.json:
            print(dump_json(record))
        else:
            print_refinement(record)
            if record["status"] == "proposed":
                print(f"review: prime-agent refinements approve {record['id']} [EDIT ...]")
        return 1 if record["status"] in ("invalid", "failed") else 0

    return _with_daemon(args, action)


def print_verification(session_id: str, v: dict[str, Any]) -> None:
    verdict = "right" if v["correct"] else "wrong"
    print(f"verified {session_id} {verdict} (by {v['by']})")
    learned = v.get("learned")
    if learned:
        rid, state = learned["refinement_id"], learned["status"]
        what = "worked example" if v["correct"] else "caution"
        if state == "applied":
            print(
                f"learned: {what} {learned['entry']} (proposal {rid}, applied by the review policy)"
            )
        else:
            print(
                f"learned: {what} {learned['entry']}, proposed in {rid}: it waits for review "
                f"(prime-agent refinements approve {rid})"
            )
    elif v.get("refused"):
        print(f"nothing learned: {v['refused']}")


def cmd_verify(args: argparse.Namespace) -> int:
    from .remote import call, find_server

    body: dict[str, Any] = {"correct": not args.wrong}
    if args.note:
        body["note"] = args.note
    verification: dict[str, Any] = {}
    info = find_server(args.root)
    if info is not None:
        verification.update(call(info, "POST", f"sessions/{args.id}/verify", body))
    else:  # no daemon holds the store: verify (and learn) here

        def action(daemon: Daemon) -> int:
            learner = daemon.learner
            verification.update(
                asyncio.run(
                    learner.verify(args.id, correct=body["correct"], by="user", note=args.note)
                )
            )
            return 0

        _with_daemon(args, action)
    if args.json:
        print(dump_json(verification))
    else:
        print_verification(args.id, verification)
    return 0


def cmd_refinements(args: argparse.Namespace) -> int:
    def action(h: Harness) -> int:
        if args.action == "list":
            rows = h.versions().refinements()
            if args.json:
                print(dump_json(rows))
            elif not rows:
                print(
                    "no refinements yet: `prime-agent refine` asks a model to propose harness "
                    "edits from recent sessions (they wait here for review)"
                )
            else:
                print_table(
                    ["ID", "STATUS", "CREATED", "SUMMARY"],
                    [
                        [
                            r["id"],
                            r["status"],
                            fmt_time(r["created"]),
                            r["summary"] or r.get("error") or "",
                        ]
                        for r in rows
                    ],
                )
                print("details: prime-agent refinements show ID")
            return 0
        if not args.id:
            raise CLIError(f"`refinements {args.action}` needs a refinement id")
        from ..harness import proposals

        edits = args.edits or None
        if args.action == "show":
            record = proposals.get_refinement(h, args.id)
        elif args.action == "approve":
            record = proposals.apply_edits(h, args.id, edits)
        elif args.action == "reject":
            record = proposals.reject_edits(h, args.id, edits)
        else:
            record = proposals.rollback_refinement(h, args.id)
        if args.json:
            print(dump_json(record))
        else:
            print_refinement(record)
        return 0

    return _run(args, action)
