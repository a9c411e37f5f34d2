"""`prime-agent doctor`: how agent kernels would run here, what that protects, and whether the
embedded models' weights are the expected files (with their provenance and license)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from .common import CLIError


def add_commands(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="say which sandbox agents run in here and what it protects; check the embedded "
        "models' weights",
    )
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="traitlets config, e.g. Sandbox.network=False (repeatable)",
    )
    p.add_argument(
        "--repair",
        action="store_true",
        help="repair a damaged store under --root (or --store): salvage what can be read into "
        "a new file, keeping the damaged one beside it",
    )
    p.add_argument("--store", help="the store folder to repair (default: ROOT/.prime)")
    p.set_defaults(func=cmd_doctor)


def _size(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def report(sandbox: Any, root: Path) -> dict[str, Any]:
    from ..daemon.sandbox import root_warning, status

    out = status(sandbox)
    notes = []
    if out.get("users"):
        notes.append(out["users"])
    if os.getuid() == 0 and sandbox.probe().setpriv is None:
        notes.append(
            "running as root: the process limit is not applied (Linux exempts uid 0), and "
            "agents read every root-owned file the sandbox does not hide (without the "
            "sandbox, every file)"
        )
    warning = root_warning(str(root))
    if warning:
        notes.append(warning)
    out["notes"] = notes
    return out


def server_config() -> Any:
    """The config a Jupyter server started here would read (`jupyter_server_config.py`/`.json`
    and their `.d` folders on the Jupyter config path), read as its ServerApp reads them
    (jupyter_core's JupyterApp), without importing jupyter_server: that takes a second."""
    from jupyter_core.application import JupyterApp

    class ServerConfig(JupyterApp):
        name = "jupyter-server"  # its config file: jupyter_server_config

    app = ServerConfig()
    app.load_config_file()
    return app.config


def models_report() -> list[dict[str, Any]]:
    """Each embedded model: its weights hashed in full (as a load would find them), its origin."""
    from ..models import local, weights

    out = []
    for spec in local.MODELS.values():
        w = spec.weights
        result = weights.check(w)
        out.append(
            {
                "model": spec.name,
                "default": spec.name == local.MODEL,
                "title": w.title,
                "ok": result.ok,
                "check": result.text,
                # Installed, but not the expected bytes: refused at load, worth an exit code.
                "refused": not result.ok and weights.installed(w),
                "upstream": w.upstream,
                "revision": w.revision,
                "file": w.file,
                "size": w.size,
                "sha256": w.sha256,
                "packaged": w.packaged,
                "license": w.license,
                "license_text": str(w.license_text),
                "notice": str(weights.LICENSES / "NOTICE"),
            }
        )
    return out


def print_models(models: list[dict[str, Any]]) -> None:
    print("Embedded models (weights trusted by their sha256, checked before loading):")
    for m in models:
        default = " (default)" if m["default"] else ""
        print(f"  {m['model']}{default}: {m['title']}")
        print(f"    check: {'ok' if m['ok'] else 'not ok'}, {m['check']}")
        print(f"    from: {m['upstream']} at {m['revision']}, {m['file']}")
        print(f"    sha256: {m['sha256']} ({m['size']} bytes)")
        print(f"    packaged: {m['packaged']}")
        print(f"    license: {m['license']} ({m['license_text']}; provenance: {m['notice']})")


def cmd_repair(args: argparse.Namespace) -> int:
    """`prime-agent doctor --repair`: check the store and, if it is damaged, repair it."""
    from ..daemon.store import repair

    folder = Path(args.store) if args.store else Path(args.root).resolve() / ".prime"
    path = folder / "prime.sqlite3"
    if not path.exists():
        raise CLIError(f"no Prime store at {path}")
    if repair.in_use(path):
        raise CLIError(
            f"a Prime server (or `prime-agent run`) is using the store at {path}: stop it first"
        )
    problem = repair.check(path)
    if problem is None:
        print(f"The store at {path} is sound: nothing to repair.")
        return 0
    print(f"The store at {path} is damaged: {problem}")
    try:
        done = repair.repair(path)
    except Exception as e:
        raise CLIError(f"could not repair it: {e}") from None
    rows = ", ".join(f"{table}: {n}" for table, n in done.rows.items() if n) or "no rows"
    print(f"Repaired: the rows recovered ({rows}) are in a new {path.name}.")
    if done.header_rebuilt:
        print("Its header was garbage and was rebuilt from its first page.")
    for table, gaps in done.skipped.items():
        print(f"  {table}: {gaps} unreadable stretch(es) skipped (those rows are lost)")
    if done.lost_tables:
        print(f"  not readable at all: {', '.join(done.lost_tables)}")
    if done.orphans:
        print(f"  {done.orphans} session(s) whose parent was lost are roots now")
    print(f"The damaged file is kept as {done.kept}.")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.repair:
        return cmd_repair(args)
    from traitlets.config import Config
    from traitlets.config.loader import KVArgParseConfigLoader

    from ..daemon.sandbox import Sandbox

    # The server's own config files (c.Sandbox.* lives in jupyter_server_config), then --config.
    config = Config(server_config())
    try:
        config.merge(KVArgParseConfigLoader([f"--{c}" for c in args.config]).load_config())
    except Exception as e:
        raise CLIError(f"bad --config: {e}") from None
    sandbox = Sandbox(config=config)
    info = report(sandbox, Path(args.root).resolve())
    info["models"] = models_report()
    refused = any(m["refused"] for m in info["models"])
    if args.json:
        print(json.dumps(info, indent=2))
        return 1 if refused else 0
    mode = info["mode"]
    if mode == "bwrap" and info.get("bwrap"):
        net = "with" if info["network"] else "without"
        print(f"Sandbox: bwrap ({info['version']}), {net} network")
    elif mode == "bwrap":
        print(f"Sandbox: required, but unavailable: {info['reason']}")
    else:
        print(f"Sandbox: none ({info['reason']})")
    print("Protects:")
    for line in info["protects"]:
        print(f"  - {line}")
    print("Exposes:")
    for line in info["exposes"]:
        print(f"  - {line}")
    limits = info["limits"]
    parts = []
    if "data" in limits:
        parts.append(f"memory {_size(limits['data'])} per process (RLIMIT_DATA)")
    if "cpu" in limits:
        parts.append(f"CPU {limits['cpu']} s per process (RLIMIT_CPU)")
    if "as" in limits:
        parts.append(f"address space {_size(limits['as'])} per process (RLIMIT_AS)")
    if "nproc" in limits:
        parts.append(f"{limits['nproc']} processes and threads (RLIMIT_NPROC)")
    if "fsize" in limits:
        parts.append(f"files up to {_size(limits['fsize'])} (RLIMIT_FSIZE)")
    if mode == "bwrap":
        parts.append(f"/tmp {_size(info['tmp_size'])}, /dev/shm {_size(info['shm_size'])}")
    print("Limits per agent kernel: " + (", ".join(parts) or "none"))
    for note in info["notes"]:
        print(f"Note: {note}")
    print_models(info["models"])
    return 0 if (mode == "none" or info.get("bwrap")) and not refused else 1
