"""`prime-agent`: one parser, one module per group of subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import doctor, export, longrun, messages, remote, run, sessions
from . import harness as harness_cli
from .common import CLIError

__all__ = ["CLIError", "main"]

# Each module adds its subcommands and sets `func` on them.
COMMAND_MODULES = [run, sessions, remote, messages, longrun, export, harness_cli, doctor]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="prime-agent",
        description="Prime Agent: a recursive language model harness on Jupyter kernels.",
    )
    parser.add_argument(
        "--root",
        default=".",
        help="the working folder; the daemon's store lives in ROOT/.prime (default: .)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMAND_MODULES:
        module.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except CLIError as e:
        print(f"prime-agent: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
