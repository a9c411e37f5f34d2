"""`prime-agent run "task"`: start the server headless, run a root agent, print its answer."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import secrets
import signal
import sys
from pathlib import Path
from typing import Any

from ..util.format import output_text
from .common import dump_json, fmt_usage
from .longrun import describe


def add_commands(sub: Any) -> None:
    p = sub.add_parser("run", help="run an agent on a task and print its answer")
    p.add_argument("prompt", help="the task")
    p.add_argument("--model", help="litellm model name (default: PRIME_MODEL or local/smollm2)")
    p.add_argument("--max-turns", type=int, help="model turns before the agent is stopped")
    p.add_argument("--name", help="a name for the session")
    for key, unit in (
        ("tokens", "tokens"),
        ("dollars", "dollars"),
        ("seconds", "seconds"),
        ("turns", "model calls"),
    ):
        p.add_argument(
            f"--budget-{key}",
            type=float,
            metavar="N",
            help=f"stop the agent (and its sub-agents) after N {unit} in all",
        )
    p.add_argument(
        "--autonomous",
        action="store_true",
        help="keep the agent going in continuations until its gate passes (or, without "
        "--gate, until it answers)",
    )
    p.add_argument(
        "--gate",
        metavar="CMD",
        help="with --autonomous: a shell command run in the root after each continuation; "
        "exit status 0 ends the run",
    )
    p.add_argument(
        "--continuations",
        type=int,
        metavar="N",
        help="with --autonomous: continuations before it gives up (default 3)",
    )
    p.add_argument("--json", action="store_true", help="print a machine-readable result")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress, only the answer")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="traitlets config, e.g. Daemon.pool_size=0 (repeatable)",
    )
    p.set_defaults(func=cmd_run)


def make_server(root: Path, extra_argv: list[str]) -> Any:
    """A jupyter_server with only our extension, on a free loopback port, token-protected."""
    from jupyter_server.serverapp import ServerApp
    from traitlets.config import Config

    config = Config()
    config.ServerApp.jpserver_extensions = {"prime_kernel": True}
    # In the config, never on a command line: /proc/<pid>/cmdline is readable by everyone.
    config.IdentityProvider.token = secrets.token_hex(24)
    app = ServerApp(config=config)
    argv = [
        f"--ServerApp.root_dir={root}",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port=0",
        "--ServerApp.open_browser=False",
        "--ServerApp.log_level=WARN",
        *extra_argv,
    ]
    app.initialize(argv=argv)
    return app


class Progress:
    """Prints a session tree's trajectory events as they happen."""

    def __init__(self, daemon: Any, root_id: str, out: Any, quiet: bool) -> None:
        self.daemon = daemon
        self.root_id = root_id
        self.out = out
        self.quiet = quiet
        self.seen: dict[str, int] = {}
        self._pending: asyncio.Queue[str] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def __call__(self, note: Any) -> None:
        if not self.quiet and note.root_id == self.root_id:
            self._pending.put_nowait(note.session_id)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._print())
        self._pending.put_nowait(self.root_id)

    async def stop(self) -> None:
        await self._pending.join()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _print(self) -> None:
        while True:
            sid = await self._pending.get()
            try:
                for event in await self.daemon.events(sid, after=self.seen.get(sid, 0)):
                    self.seen[sid] = event["seq"]
                    self.show(sid, event)
            finally:
                self._pending.task_done()

    def show(self, sid: str, event: dict[str, Any]) -> None:
        record = self.daemon.session_json(sid)
        indent = "  " * int(record.get("depth") or 0)
        tag = f"{indent}[{sid}]"
        kind, data = event["kind"], event["data"]
        line = None
        if kind == "state":
            line = f"{tag} {data['state']}" + (f": {data['reason']}" if data.get("reason") else "")
        elif kind == "model_call":
            u = data["usage"]
            total = self.daemon.session_json(self.root_id)["usage"]["subtree"]
            line = (
                f"{tag} model {data['model']}: {u.get('prompt_tokens', 0)} in / "
                f"{u.get('completion_tokens', 0)} out ({data['duration']:.2f}s) "
                f"| total {fmt_usage(total)}"
            )
        elif kind == "assistant" and data.get("content"):
            line = f"{tag} says: " + _clip(data["content"], 400)
        elif kind == "cell":
            who = "person" if data.get("source") == "user" else "cell"
            line = f"{tag} {who} [{data.get('status')}]:\n" + _block(
                data["code"], indent + "    > "
            )
            text = "".join(output_text(o) for o in data.get("outputs") or [])
            if text.strip():
                line += "\n" + _block(_clip(text, 800), indent + "    ")
        elif kind in ("mail_in", "mail_out"):
            peer = f"from {data.get('sender')}" if kind == "mail_in" else f"to {data['to']}"
            line = f"{tag} message {peer}: {_clip(data['message'], 400)}"
        elif kind == "child":
            line = f"{tag} started child {data['child_id']}: {_clip(data['prompt'], 80)}"
        elif kind == "compaction":
            line = (
                f"{tag} context compacted: {data.get('summarised_messages')} messages summarised "
                f"({data.get('before_tokens')} → {data.get('after_tokens')} tokens)"
            )
        elif kind == "answer":
            line = f"{tag} answer: {_clip(data['repr'], 400)}"
        elif (said := describe(kind, data)) is not None:
            line = f"{tag} {said}"
        if line:
            print(line, file=self.out, flush=True)


def _clip(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else text[:n] + f"… [{len(text) - n} more chars]"


def _block(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


async def _run_session(app: Any, args: argparse.Namespace) -> dict[str, Any]:
    await app._post_start()
    daemon = app.web_app.settings.get("prime_daemon")
    if daemon is None or daemon.pool is None:
        raise RuntimeError("the prime_kernel server extension did not start (see the log)")
    record = await daemon.create_session(
        args.prompt,
        model=args.model,
        name=args.name,
        max_turns=args.max_turns,
        budget=args.budget,
        autonomous=args.autonomous,
    )
    sid = record["id"]
    progress = Progress(daemon, sid, sys.stderr if args.json else sys.stdout, args.quiet)
    daemon.add_listener(progress)
    progress.start()
    loop = asyncio.get_running_loop()

    cancelling: list[asyncio.Task[Any]] = []

    def on_interrupt() -> None:
        print("\ninterrupted: cancelling the session…", file=sys.stderr)
        cancelling.append(loop.create_task(daemon.cancel(sid)))

    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        await daemon.wait(sid, None)
        await progress.stop()
    finally:
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGINT)
        daemon.remove_listener(progress)
    result = daemon.session_json(sid)
    if result.get("has_answer"):
        from ..kernel import safe_pickle

        # The agent's pickle is untrusted: allow-listed types only, else its repr.
        try:
            result["answer"] = safe_pickle.loads(await daemon.answer_bytes(sid))
        except Exception:
            result["answer"] = result.get("answer_repr")
    result["store"] = str(daemon.store.directory)
    return result


def cmd_run(args: argparse.Namespace) -> int:
    from .main import CLIError

    root = Path(args.root).resolve()
    if not root.is_dir():
        raise CLIError(f"--root {root} is not a folder")
    from ..daemon import budget as budget_mod
    from ..protocol.errors import PrimeError

    try:  # refused before a server starts
        args.budget = budget_mod.parse({k: getattr(args, f"budget_{k}") for k in budget_mod.KEYS})
    except PrimeError as e:
        raise CLIError(e.message) from None
    if args.max_turns is not None and args.max_turns < 1:
        raise CLIError("--max-turns must be at least 1")
    if (args.gate is not None or args.continuations is not None) and not args.autonomous:
        raise CLIError("--gate and --continuations go with --autonomous")
    if args.autonomous:
        from ..daemon.autonomy import parse

        plan: dict[str, Any] = {}
        if args.gate is not None:
            plan["gate"] = args.gate
        if args.continuations is not None:
            plan["max_continuations"] = args.continuations
        try:  # refused before a server starts: a gate command that does not exist, say
            parse(plan)
        except PrimeError as e:
            raise CLIError(e.message) from None
        args.autonomous = plan or True
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    if args.model:
        # Fail on an unknown model or a missing API key before any server or kernel starts.
        from ..models.router import ModelRouter

        try:
            ModelRouter().validate(args.model)
        except PrimeError as e:
            raise CLIError(e.message) from None
    app = make_server(root, [f"--{c}" for c in args.config])
    app.write_server_info_file()
    try:
        result = app.io_loop.run_sync(lambda: _run_session(app, args))
    except Exception as e:
        from ..protocol.errors import PrimeError

        if isinstance(e, PrimeError):
            raise CLIError(e.message) from None
        raise
    finally:
        app.io_loop.run_sync(app._cleanup)
    ok = result["state"] == "DONE"
    if args.json:
        print(json.dumps(_json_result(result), default=repr, indent=2))
    else:
        print()
        if "answer" in result:
            print(
                f"Answer: {result['answer']!r}"
                if not isinstance(result["answer"], str)
                else f"Answer: {result['answer']}"
            )
        else:
            print(f"No answer: the session ended {result['state']}: {result.get('error')}")
        print(f"Session {result['id']} {result['state']} · {fmt_usage(result['usage']['subtree'])}")
        print(f"Record: {result['store']} (prime-agent show {result['id']})")
    return 0 if ok else 1


def _json_result(result: dict[str, Any]) -> dict[str, Any]:
    answer = result.get("answer")
    try:
        json.dumps(answer)
    except TypeError:
        answer = result.get("answer_repr")
    out = {k: result.get(k) for k in ("id", "state", "error", "model", "usage", "store")}
    out["answer"] = answer
    out["answer_repr"] = result.get("answer_repr")
    return out


__all__ = ["add_commands", "dump_json"]
