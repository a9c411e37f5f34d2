"""`prime-agent`: one parser, one module per group of subcommands.

Importing this module and building the parser must stay cheap (`--help`, `sessions`, `show` and
`export` answer in well under a second): command modules import the daemon, the server,
litellm or nbformat inside the functions that need them, never at module level.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from typing import Any

from . import doctor, export, longrun, messages, remote, replay, run, sessions
from . import harness as harness_cli
from .common import CLIError, skip_slow_imports

__all__ = ["CLIError", "main"]

# Each module adds its subcommands and sets `func` on them.
COMMAND_MODULES = [run, replay, sessions, remote, messages, longrun, export, harness_cli, doctor]

ROOT_HELP = "the working folder; the daemon's store lives in ROOT/.prime (default: .)"


class _CommandParser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--root", default=argparse.SUPPRESS, help=ROOT_HELP)
        # The innermost command parsed sets it last: that command's usage explains a mistake
        # (`run --turbo` shows run's options, not the list of commands).
        self.set_defaults(parser=self)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="prime-agent",
        description="Prime Agent: a recursive language model harness on Jupyter kernels.",
    )
    parser.add_argument("--root", default=".", help=ROOT_HELP)
    # Every subcommand (and theirs, which inherit the class) takes `--root` too, so
    # `prime-agent run "task" --root DIR` works; its default is SUPPRESS, so the value given
    # before the subcommand, or the top-level default, stands when it is not repeated.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
    sub.required = True
    for module in COMMAND_MODULES:
        module.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    code = _main(argv)
    if "litellm" in sys.modules:
        # This process ran a server (`run`, `resume`, `refine`) and has said everything: the
        # interpreter's last garbage collections would walk the millions of objects litellm
        # made, holding the terminal 1-2 s after the answer. Frozen, they are left to the
        # operating system (exit handlers still run).
        gc.freeze()
    return code


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        getattr(args, "parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    # No command validates the IRIs whose parser costs seconds to import (see the function).
    skip_slow_imports()
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # here, so a reader that went away is noticed below
        return code
    except KeyboardInterrupt:
        return 130
    except CLIError as e:
        print(f"prime-agent: error: {e}", file=sys.stderr)
        return e.exit_code
    except BrokenPipeError:
        # The reader went away (`prime-agent sessions | head`): stop quietly. Python would
        # complain again when it flushes stdout at exit, so point stdout at /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # what a shell reports for a process ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
