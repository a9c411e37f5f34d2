"""What `prime-agent run` is given, checked before any server starts: budgets, the context
file, `--config` settings and the model. Each problem is one CLIError line."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import CLIError

if TYPE_CHECKING:
    from traitlets.config import Configurable

# -- budgets (the same forms the panel's New agent form takes: labextension/src/model.ts) -------
_COUNT = re.compile(r"^([+-]?\d+(?:\.\d+)?)([kKmM]?)$")
_DURATION = re.compile(r"^([+-]?\d+(?:\.\d+)?)(s|m|min|h)?$")
_MULTIPLIERS = {"": 1, "k": 1e3, "m": 1e6}


def count(raw: str, option: str, example: str) -> float:
    """A count with an optional k/M suffix: "50000", "50k", "1.5M", "200,000"."""
    m = _COUNT.match(re.sub(r"[_,\s]", "", raw))
    if not m:
        raise CLIError(f"{option} must be a number like {example}, not {raw!r}")
    return round(float(m.group(1)) * _MULTIPLIERS[m.group(2).lower()])


def duration(raw: str, option: str) -> float:
    """Seconds from "90", "90s", "10m", "1.5h"."""
    m = _DURATION.match(re.sub(r"\s", "", raw.lower()))
    if not m:
        raise CLIError(f"{option} must be seconds or a duration like 90s, 10m, 1.5h, not {raw!r}")
    unit = {"h": 3600, "m": 60, "min": 60}.get(m.group(2) or "", 1)
    return float(m.group(1)) * unit


def dollars(raw: str, option: str) -> float:
    try:
        return float(raw.strip().removeprefix("$"))
    except ValueError:
        raise CLIError(f"{option} must be a number of dollars like 0.5, not {raw!r}") from None


def budget(
    tokens: str | None, dollars_: str | None, seconds: str | None, turns: str | None
) -> dict[str, float] | None:
    """The budget the options ask for, checked by the daemon's own rules."""
    from ..daemon import budget as rules
    from ..protocol.errors import PrimeError

    raw: dict[str, float] = {}
    if tokens is not None:
        raw["tokens"] = count(tokens, "--budget-tokens", "50000 or 200k")
    if dollars_ is not None:
        raw["dollars"] = dollars(dollars_, "--budget-dollars")
    if seconds is not None:
        raw["seconds"] = duration(seconds, "--budget-seconds")
    if turns is not None:
        raw["turns"] = count(turns, "--budget-turns", "30")
    try:
        return rules.parse(raw)
    except PrimeError as e:
        raise CLIError(e.message) from None


# -- the context --------------------------------------------------------------------------------
CONTEXT_FORMATS = ("auto", "json", "csv", "text")


def load_context(source: str, fmt: str = "auto") -> Any:
    """The value `--context SOURCE` gives the agent: a file (or `-`, standard input) read as
    JSON, CSV (a list of dicts, one per row) or text — by its suffix unless `fmt` says."""
    name = "standard input" if source == "-" else source
    if source == "-":
        text = sys.stdin.read()
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as e:
            raise CLIError(f"--context {source}: {e.strerror or e}") from None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise CLIError(
                f"--context {source} is not UTF-8 text (byte {e.start}); give JSON, CSV or text"
            ) from None
    if fmt == "auto":
        suffix = Path(source).suffix.lower() if source != "-" else ""
        fmt = {".json": "json", ".csv": "csv"}.get(suffix, "text")
    if not text.strip():
        raise CLIError(f"--context {name} is empty")
    if fmt == "json":
        try:
            return json.loads(text)
        except ValueError as e:
            raise CLIError(f"--context {name} is not valid JSON: {e}") from None
    if fmt == "csv":
        return _csv_rows(text, name)
    return text


def _csv_rows(text: str, name: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    try:
        for row in reader:
            if None in row:  # csv.DictReader files surplus fields under the key None
                raise CLIError(
                    f"--context {name}, line {reader.line_num}: more fields than the header has"
                )
            rows.append(row)
    except csv.Error as e:
        raise CLIError(f"--context {name}, line {reader.line_num}: not valid CSV: {e}") from None
    if not reader.fieldnames:
        raise CLIError(f"--context {name} has no CSV header row")
    return rows


# -- --config -----------------------------------------------------------------------------------
_SETTING = re.compile(r"^([A-Za-z_]\w*)\.([A-Za-z_]\w*)=(.*)$", re.DOTALL)


def _moved() -> dict[str, dict[str, str]]:
    """The settings that moved, by the class they moved off: {old class: {name: new class}}."""
    from ..daemon import daemon, moved, sandbox, spills

    return {
        "Daemon": daemon.MOVED,
        "Harness": moved.HARNESS_MOVED,
        "Sandbox": sandbox.MOVED,
        "Collector": spills.MOVED,
    }


def config_argv(pairs: list[str]) -> list[str]:
    """`--config Class.trait=VALUE` settings as server arguments (each one checked for form).
    A setting that moved off the Daemon, the Harness or the Sandbox, or whose class was renamed
    (`Collector`, now `Spills`), is passed under its new name, so that it still wins over `run`'s
    own defaults, which use the new names (a note would break the one-line errors a `run`
    promises; the server warns about old names in config files)."""
    moved = _moved()
    argv = []
    for pair in pairs:
        m = _SETTING.match(pair)
        if m is None:
            raise CLIError(
                f"--config wants Class.trait=VALUE (e.g. KernelCustody.pool_size=0), not {pair!r}"
            )
        cls, name, value = m.groups()
        cls = moved.get(cls, {}).get(name, cls)
        argv.append(f"--{cls}.{name}={value}")
    return argv


def check_daemon_settings(pairs: list[str]) -> None:
    """The settings among `pairs` of the Daemon and of the services it builds, and of the
    sandbox: the name exists and the value parses, so a typo is one line, not a server's
    usage. A setting that moved (`Daemon.pool_size`, `Harness.learn`, `Sandbox.memory_limit`)
    is checked where it lives now."""
    from ..daemon.daemon import SERVICES
    from ..daemon.sandbox import KernelLimits, Sandbox, SandboxMounts

    # The sandbox is the server's (server/app.py), not the daemon's.
    checked: list[type[Configurable]] = [*SERVICES, Sandbox, SandboxMounts, KernelLimits]
    classes = {cls.__name__: cls for cls in checked}
    moved = _moved()
    for pair in pairs:
        m = _SETTING.match(pair)
        if m is None:
            continue
        given, name, value = m.groups()
        cls = classes.get(moved.get(given, {}).get(name, given))
        if cls is not None:
            _check_setting(cls, given, name, value)


def _check_setting(cls: type[Configurable], given: str, name: str, value: str) -> None:
    from traitlets import TraitError

    trait = cls.class_traits(config=True).get(name)
    if trait is None:
        raise CLIError(f"--config {given}.{name}: the {given} has no setting {name!r}")
    validate = getattr(trait, "validate", None)  # what a trait type checks beyond parsing
    try:
        parsed = trait.from_string(value)
        if validate is not None:
            validate(None, parsed)
    except (TraitError, ValueError, SyntaxError):
        raise CLIError(f"--config {given}.{name} wants {trait.info()}, not {value!r}") from None


# -- the model ----------------------------------------------------------------------------------
def check_model(model: str) -> None:
    """Refuse an unknown model or one whose key is missing, before any server starts.

    The scripted and embedded providers are checked by name; a hosted model needs litellm,
    imported here once (seconds) and reused by the server this process starts.
    """
    from ..models.router import ModelRouter
    from ..protocol.errors import PrimeError

    try:
        ModelRouter().validate(model)
    except PrimeError as e:
        raise CLIError(e.message) from None
