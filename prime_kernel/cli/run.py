"""`prime-agent run "task"` and `prime-agent resume ID`: run an agent, show its progress, print
its answer.

Everything the command is given (budgets, context, settings, the model) is checked before any
server starts. Then, if a server already serves the root (`jupyter lab` there, or another
`run`), the task goes to it over REST; otherwise this process starts one headless (see
`headless.py`), with `c.Recovery.auto_resume` off: unfinished sessions of earlier runs are not
silently run again, they wait INACTIVE until `prime-agent resume ID` (or a message) wakes them.
Either way the session is followed over REST (`follow.py`). Ctrl-C cancels it, which shuts its
kernels down, and exits 130.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..models import providers
from ..models.local import MODEL as DEFAULT_MODEL  # the daemon's default (a cheap import)
from ..protocol.requests import SessionRequest
from ..protocol.states import SessionState
from . import inputs
from .common import CLIError, fmt_usage, read_store, resolved_root
from .follow import News, Outcome, Progress, Stop, Ticker, follow, past
from .headless import (
    Terminal,
    busy_roots,
    last_startup,
    new_log,
    quiet_process,
    record_startup,
    serve,
    start_daemon,
)
from .remote import Refused, Server, Unreachable, find_server

# Exit codes besides 0 (done), 1 (the session failed) and 2 (bad input): a shell's for the
# signal that stopped the run.
EXIT_INTERRUPTED = 130
EXIT_OUTPUT_CLOSED = 141
# A session that answered: it ended DONE, or (a persistent one) waits IDLE for messages.
SUCCESS = (SessionState.DONE.value, SessionState.IDLE.value)
STOPPED = {"interrupted": ("Ctrl-C", EXIT_INTERRUPTED), "terminated": ("SIGTERM", 143)}
# What starting a server takes before any is remembered (importing jupyter_server and litellm,
# a first kernel: 6 s on a quiet machine, 15-20 s at a load of 8; see bench/bench_cli.py).
FIRST_STARTUP = "about 15 s the first time"
# How long a stopping server may keep its store before the end of a session is read there.
STORE_RELEASE = 10.0


def add_commands(sub: Any) -> None:
    p = sub.add_parser("run", help="run an agent on a task and print its answer")
    p.add_argument("prompt", help="the task")
    p.add_argument(
        "--model", help=f"a litellm model name (default: PRIME_MODEL, else {DEFAULT_MODEL})"
    )
    p.add_argument("--max-turns", type=int, help="model turns before the agent is stopped")
    p.add_argument("--name", help="a name for the session")
    p.add_argument(
        "--context",
        metavar="FILE",
        help="a value for the agent's `context` variable: a .json file, a .csv file (a list "
        "of dicts, one per row), any other file as text, or - for standard input",
    )
    p.add_argument(
        "--context-format",
        choices=inputs.CONTEXT_FORMATS,
        default="auto",
        help="how to read --context (default: by its suffix; standard input is text)",
    )
    for key, what in (
        ("tokens", "N tokens (e.g. 50000, 200k, 1.5M)"),
        ("dollars", "N dollars"),
        ("seconds", "N seconds (e.g. 90, 90s, 10m, 1.5h)"),
        ("turns", "N model calls"),
    ):
        p.add_argument(
            f"--budget-{key}",
            metavar="N",
            help=f"stop the agent (and its sub-agents) after {what} in all",
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
    p.add_argument(
        "--gateway",
        metavar="URL",
        help="start the agent's kernels on this Jupyter Kernel Gateway or Enterprise Gateway "
        "(its token: PRIME_GATEWAY_AUTH_TOKEN); see docs/gateway.md",
    )
    p.add_argument(
        "--public-url",
        metavar="URL",
        help="with --gateway: this server's URL as the gateway's kernels reach it (default: "
        "the URL it listens on)",
    )
    _output_options(p)
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the server `run` starts, e.g. KernelCustody.pool_size=0 (repeatable)",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "resume", help="run an INACTIVE session again (one an earlier run left unfinished)"
    )
    p.add_argument("id")
    _output_options(p)
    p.set_defaults(func=cmd_resume, config=[])


def _output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a machine-readable result")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress, only the answer")


def _autonomy(args: argparse.Namespace) -> dict[str, Any] | bool | None:
    """The `autonomous` of the request, checked before any server starts (a gate command
    that does not exist, say)."""
    if (args.gate is not None or args.continuations is not None) and not args.autonomous:
        raise CLIError("--gate and --continuations go with --autonomous")
    if not args.autonomous:
        return None
    from ..daemon.autonomy import parse
    from ..protocol.errors import PrimeError

    plan: dict[str, Any] = {}
    if args.gate is not None:
        plan["gate"] = args.gate
    if args.continuations is not None:
        plan["max_continuations"] = args.continuations
    try:
        parse(plan)
    except PrimeError as e:
        raise CLIError(e.message) from None
    return plan or True


@dataclass
class Job:
    """What to run: a new session (`request`, a POST /api/prime/sessions) or `resume` one.
    `then(server, outcome, code, out)`: what to print on `out` once the result is (while the
    server still runs), and the exit code from there (`replay` reports its divergence so)."""

    request: SessionRequest = field(default_factory=SessionRequest)
    resume: str | None = None
    server_argv: list[str] = field(default_factory=list)
    then: Callable[[Server, Outcome, int, TextIO], int] | None = None


def cmd_run(args: argparse.Namespace) -> int:
    root = resolved_root(args.root)
    if not args.prompt.strip():
        raise CLIError("the task is empty")
    if args.max_turns is not None and not 1 <= args.max_turns <= 10_000:
        raise CLIError("--max-turns must be from 1 to 10000")
    budget = inputs.budget(
        args.budget_tokens, args.budget_dollars, args.budget_seconds, args.budget_turns
    )
    request = SessionRequest(
        prompt=args.prompt,
        model=args.model,
        name=args.name,
        max_turns=args.max_turns,
        budget=budget or None,
        autonomous=_autonomy(args),
    )
    if args.context is not None:
        context = inputs.load_context(args.context, args.context_format)
        request = dataclasses.replace(request, context=context)
    if args.public_url and not args.gateway:
        raise CLIError("--public-url goes with --gateway")
    for value, option, key in (
        (args.gateway, "--gateway", "KernelPlacement.gateway_url"),
        (args.public_url, "--public-url", "GatewayLauncher.public_url"),
    ):
        if value:
            if not value.startswith(("http://", "https://")):
                raise CLIError(f"{option} wants an http(s) URL, not {value!r}")
            args.config.append(f"{key}={value}")
    job = Job(request=request, server_argv=inputs.config_argv(args.config))
    info = find_server(str(root))
    if info is not None:
        if args.config:
            raise CLIError(
                f"--config (and --gateway) set up a server `run` starts, but one already "
                f"serves {root} "
                f"({info['url']}); configure that one, or stop it"
            )
        return _remote(Server(info), job, args, root)
    # Before any server starts: the model, then the settings. A model of an installed provider
    # (the embedded and scripted ones) is checked at once; a hosted one, and Daemon settings,
    # take imports of seconds, which the first line of progress and the status line explain.
    model = args.model or os.environ.get("PRIME_MODEL") or _configured_model(args.config)
    hosted = model.partition("/")[0] not in providers.installed()
    if not hosted:
        inputs.check_model(model)
    stream = _progress_stream(args, Terminal(sys.stdout, sys.stderr))
    _starting(stream, root)
    with Ticker(stream, f"checking {model}" if hosted else "starting a server"):
        if hosted:
            inputs.check_model(model)
        inputs.check_daemon_settings(args.config)
    return _headless(args, root, job)


def cmd_resume(args: argparse.Namespace) -> int:
    def check(state: SessionState) -> None:
        if state.terminal:
            raise CLIError(f"session {args.id} has ended ({state.value}); nothing to resume")

    return submit(args, Job(resume=args.id), about=(args.id, check))


def submit(
    args: argparse.Namespace,
    job: Job,
    about: tuple[str, Callable[[SessionState], None]] | None = None,
) -> int:
    """Run `job` on the server that serves `--root`, or on one this process starts.
    `about`: a session the job is about and a check of its state, made in the store (an
    unknown id, say, said in one line) before a server is started for it."""
    root = resolved_root(args.root)
    info = find_server(str(root))
    if info is not None:
        return _remote(Server(info), job, args, root)
    if about is not None:
        from .remote import offline_state

        session_id, check = about
        check(offline_state(str(root), session_id))
    _starting(_progress_stream(args, Terminal(sys.stdout, sys.stderr)), root)
    return _headless(args, root, job)


def _progress_stream(args: argparse.Namespace, terminal: Terminal) -> TextIO | None:
    """Where progress goes: nowhere with -q, stderr with --json (stdout is the result)."""
    if args.quiet:
        return None
    return terminal.err if args.json else terminal.out


def _starting(stream: TextIO | None, root: Path) -> None:
    """The first line, at once: a server is about to start, and how long that takes."""
    if stream is None:
        return
    last = last_startup()
    took = FIRST_STARTUP if last is None else f"about {max(1, round(last))} s last time"
    print(f"starting a server for {root} ({took})…", file=stream, flush=True)


def _configured_model(pairs: list[str]) -> str:
    for pair in reversed(pairs):
        key, _, value = pair.partition("=")
        if key in ("Admission.default_model", "Daemon.default_model") and value:
            return value
    return DEFAULT_MODEL


# -- running ----------------------------------------------------------------------------------
def _remote(server: Server, job: Job, args: argparse.Namespace, root: Path) -> int:
    async def main() -> int:
        stop = Stop()
        terminal = Terminal(sys.stdout, sys.stderr)
        with _interrupts(stop), Ticker(_progress_stream(args, terminal), "submitting") as ticker:
            outcome = await _submit_and_follow(server, job, args, terminal, stop, ticker, root)
        code = _report(args, root, outcome, terminal, None)
        return await _finish(server, job, outcome, code, terminal)

    return asyncio.run(main())


# The signals that came before the session existed (see _remembered).
_interrupted: list[int] = []


def _remembered(signum: int, frame: Any) -> None:
    """Ctrl-C (or SIGTERM) before the session exists: KeyboardInterrupt where the main thread
    is, and remembered. Python drops an exception raised inside a weakref callback or a
    `__del__` (a garbage collection may run one at any moment while the server is made), and
    the command would then go on to start the session."""
    _interrupted.append(signum)
    raise KeyboardInterrupt


def _headless(args: argparse.Namespace, root: Path, job: Job) -> int:
    signal.signal(signal.SIGINT, _remembered)
    log = new_log(root)
    # The daemon of a `run` takes up only the session it is given (see the module docstring);
    # one warm kernel is enough for a single agent and leaves the CPU to its model.
    # A setting given with --config wins (traitlets refuses one given twice).
    given = {arg.partition("=")[0] for arg in job.server_argv}
    defaults = ["--Recovery.auto_resume=False", "--KernelCustody.pool_size=1"]
    argv = [*(d for d in defaults if d.partition("=")[0] not in given), *job.server_argv]
    try:
        with quiet_process(log) as terminal:
            return _serve(args, root, job, argv, terminal, log)
    except KeyboardInterrupt:  # before the session was created (then Ctrl-C cancels it)
        return _report(args, root, None, Terminal(sys.stdout, sys.stderr), log=log)
    except CLIError as e:
        raise CLIError(f"{e} (log: {log})", e.exit_code) from None
    except BrokenPipeError:  # the reader of the output went away: main() ends quietly
        raise
    except Exception as e:  # a bug: the traceback goes to the log, one line to the terminal
        import traceback

        with open(log, "a", encoding="utf-8") as f:
            traceback.print_exc(file=f)
        raise CLIError(f"{type(e).__name__}: {e} (log: {log})", exit_code=1) from None


def _serve(
    args: argparse.Namespace,
    root: Path,
    job: Job,
    argv: list[str],
    terminal: Terminal,
    log: Path,
) -> int:
    # The status line until the session exists (`_submit_and_follow` stops it).
    with Ticker(_progress_stream(args, terminal), "starting a server") as ticker:
        return serve(
            root,
            argv,
            lambda app: _serve_and_follow(app, root, job, args, terminal, log, ticker),
            start=False,
        )


async def _serve_and_follow(
    app: Any,
    root: Path,
    job: Job,
    args: argparse.Namespace,
    terminal: Terminal,
    log: Path,
    ticker: Ticker,
) -> int:
    # Not the server's handlers (on a terminal, its Ctrl-C asks whether to shut down): until
    # the session is being followed, either signal stops the command before it starts one.
    signal.signal(signal.SIGINT, _remembered)
    signal.signal(signal.SIGTERM, _remembered)
    app.write_server_info_file()
    stop = Stop()
    with _interrupts(stop):
        if _interrupted:  # while the server was made, and dropped where it was raised
            stop.request("interrupted")
        starting = asyncio.ensure_future(start_daemon(app))
        stopping = asyncio.ensure_future(stop.requested.wait())
        await asyncio.wait([starting, stopping], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not starting.done():  # interrupted while starting: no session was created
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
            return _report(args, root, None, terminal, log)
        daemon = starting.result()
        record_startup(time.monotonic() - ticker.since)  # since serve() began making the server
        server = Server(app.server_info())
        outcome = await _submit_and_follow(server, job, args, terminal, stop, ticker, root)
        code = _report(args, root, outcome, terminal, log)
        code = await _finish(server, job, outcome, code, terminal)
        await _serve_the_others(daemon, terminal, stop)
    return code


async def _finish(
    server: Server, job: Job, outcome: Outcome | None, code: int, terminal: Terminal
) -> int:
    if job.then is None or outcome is None or outcome.stopped is not None:
        return code
    return await asyncio.to_thread(job.then, server, outcome, code, terminal.out)


async def _serve_the_others(daemon: Any, terminal: Terminal, stop: Stop) -> None:
    """Other `prime-agent run`s on this root may have handed their tasks to this server: keep
    serving until they end too. A stop leaves them to be resumed (`prime-agent resume`)."""
    registry = daemon.registry
    others = busy_roots(registry)
    if others and not stop.requested.is_set():
        print(
            f"prime-agent: this server also runs {', '.join(others)} for other commands; "
            "it stops when they end (Ctrl-C: now, leaving them to `prime-agent resume`)",
            file=terminal.err,
        )
    while busy_roots(registry) and not stop.requested.is_set():
        await stop.wait(0.5)


async def _submit_and_follow(
    server: Server,
    job: Job,
    args: argparse.Namespace,
    terminal: Terminal,
    stop: Stop,
    ticker: Ticker,
    root: Path,
) -> Outcome | None:
    """Create (or resume) the session and follow it; `ticker` keeps the status line going
    until then."""
    # Subscribed before the session exists, so its first reply is seen from its first piece.
    news = await News.subscribe(server)
    try:
        return await _create_and_follow(server, job, args, terminal, stop, ticker, root, news)
    finally:
        if news is not None:
            news.close()


async def _create_and_follow(
    server: Server,
    job: Job,
    args: argparse.Namespace,
    terminal: Terminal,
    stop: Stop,
    ticker: Ticker,
    root: Path,
    news: News | None,
) -> Outcome | None:
    progress = Progress(_progress_stream(args, terminal), stop)
    after = None
    try:
        if job.resume is not None:
            after = await past(server, job.resume, progress)  # shown: only what comes now
            record = await asyncio.to_thread(server.resume, job.resume)
        else:
            record = await asyncio.to_thread(server.create, job.request.to_json())
    except Refused as e:  # what the daemon refuses here is what it was given (400, 413)
        raise CLIError(str(e), 2 if e.status in (400, 413) else 1) from None
    finally:
        ticker.stop()
    sid = record["id"]
    progress.note(f"session {sid} · {record['model']}")
    try:
        return await follow(server, sid, progress, stop, after=after, news=news)
    except Unreachable:
        progress.close()
        # A server that ran this session for another command stops once it ends, maybe
        # before our next look: then the store, free again, has the end.
        ended = await asyncio.to_thread(_ended_in_store, root, sid)
        if ended is not None:
            return Outcome(*ended, stop.reason)
        raise CLIError(
            f"the server at {server.url} stopped before session {sid} ended; it goes on "
            f"with `prime-agent resume {sid}`",
            exit_code=1,
        ) from None


def _ended_in_store(root: Path, sid: str) -> tuple[dict[str, Any], str | None] | None:
    """Session `sid`'s final record and answer kind, read from the store once the server that
    held it has let it go (a few seconds at most); None if it did not end."""
    from ..protocol.errors import PrimeError

    deadline = time.monotonic() + STORE_RELEASE
    while True:
        try:
            reader = read_store(str(root))
        except CLIError:  # still held by the server that is stopping
            if time.monotonic() > deadline:
                return None
            time.sleep(0.2)
            continue
        try:
            record = reader.session_json(sid)
            if not SessionState(record["state"]).terminal:
                return None
            answers = [e for e in asyncio.run(reader.events(sid)) if e["kind"] == "answer"]
            return record, answers[-1]["data"].get("kind") if answers else None
        except PrimeError:
            return None
        finally:
            reader.close()


@contextlib.contextmanager
def _interrupts(stop: Stop) -> Any:
    """Ctrl-C (or SIGTERM) asks `stop` to cancel the session; more meanwhile change nothing."""
    loop = asyncio.get_running_loop()
    reasons = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
    for signum, reason in reasons.items():
        loop.add_signal_handler(signum, stop.request, reason)
    try:
        yield
    finally:
        for signum in reasons:
            loop.remove_signal_handler(signum)


# -- the result -------------------------------------------------------------------------------
def _report(
    args: argparse.Namespace,
    root: Path,
    outcome: Outcome | None,
    terminal: Terminal,
    log: Path | None,
) -> int:
    """Print the result (on the terminal, `out` and `err`); the exit code."""
    out, err = terminal.out, terminal.err
    where = f" (log: {log})" if log is not None else ""
    if outcome is None:
        print("prime-agent: interrupted before the session started", file=err)
        return EXIT_INTERRUPTED
    if outcome.stopped == "output closed":  # nobody reads what would be printed
        return EXIT_OUTPUT_CLOSED
    record = outcome.record
    sid, state = record["id"], record["state"]
    answer = _answer(record, outcome.answer_kind)
    if args.json:
        result = {k: record.get(k) for k in ("id", "state", "error", "model", "usage")}
        result.update(
            store=str(root / ".prime"),
            answer=answer,
            answer_repr=record.get("answer_repr"),
            answer_kind=outcome.answer_kind,
        )
        print(json.dumps(result, default=repr, indent=2), file=out)
    elif state in SUCCESS:
        text = answer if isinstance(answer, str) else repr(answer)
        if args.quiet:
            print(text, file=out)
        else:
            label = "Answer" if outcome.answer_kind != "reply" else "Answer (a reply, no code ran)"
            print(f"\n{label}: {text}", file=out)
    if not args.json and not args.quiet:
        print(
            f"Session {sid} {state} · {fmt_usage(record['usage']['subtree'])} · "
            f"prime-agent show {sid}",
            file=out,
        )
    if state in SUCCESS:
        return 0
    if state == SessionState.CANCELLED.value and outcome.stopped in STOPPED:
        how, code = STOPPED[outcome.stopped]
        print(
            f"prime-agent: cancelled ({how}): session {sid} CANCELLED, its kernels shut down",
            file=err,
        )
        return code
    cancelled = state == SessionState.CANCELLED.value
    why = record.get("error") or ("cancelled" if cancelled else "no answer")
    print(f"prime-agent: error: session {sid} {state}: {why}{where}", file=err)
    return 1


def _answer(record: dict[str, Any], kind: str | None) -> Any:
    """The answer as a value: a reply is its text; `answer(value)` gives the value's repr,
    read back when it is a literal (numbers, strings, lists, dicts, ...), else the repr."""
    text = record.get("answer_repr")
    if text is None or kind == "reply":
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
