"""Autonomous mode: keep an agent going until an explicit termination test — the gate — passes.

`rlm(task, autonomous=True)` or `autonomous={"gate": ..., "max_continuations": 3, "turns": 12,
"tokens": 80_000, "seconds": 1800}`. The session works in continuations, each limited to `turns`
model turns, `tokens` tokens (its subtree's) and `seconds` of wall time. When the agent answers
(or replies without code) or a continuation runs out, the daemon runs the gate:

- a shell command (`"pytest -q"` or `{"shell": ...}`): exit status 0 passes. It runs in the
  session's working folder (the server root), *inside the session's own kernel* — so in its
  sandbox, with exactly the files, programs and limits the agent's own code has. A gate is text
  an agent may have written (for its children); run by the daemon itself it would escape the
  sandbox, and with a remote kernel it would not even see the agent's files. It is killed (its
  whole process group) after `gate_timeout` seconds;
- a Python expression (`{"python": "len(results) == 10"}`): evaluated in the agent's REPL; a
  true value passes; interrupted after `gate_timeout` seconds;
- none (`autonomous=True`): an answer passes — the agent is simply given more continuations
  until it answers.

A gate that passes ends the session DONE (IDLE if it is persistent). One that fails starts the
next continuation with the gate's output shown to the model; after `max_continuations` the
session fails, saying so and what the gate said last. The session's budget still applies over
all of it. Where the session is — its continuation, turns used, whether it was at the gate — is
kept in its record (`options.autonomy`), so a restarted daemon resumes it there.
"""

from __future__ import annotations

import math
import shlex
import shutil
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from traitlets import Float, Int
from traitlets.config import LoggingConfigurable

from ..protocol.errors import BudgetExceeded, InvalidRequest, PrimeError
from ..protocol.events import EventKind
from . import observation
from .answers import Answers
from .kernels import CellResult
from .loop import TurnLimitReached
from .observation import cap, render
from .session import LiveSession
from .shared import Shared

MARKER = "PRIME_GATE "
KEYS = ("gate", "gate_timeout", "max_continuations", "turns", "tokens", "seconds")
# The keys whose default is a `c.Autonomy` trait.
DEFAULTED = ("gate_timeout", "max_continuations", "turns", "tokens", "seconds")
# Words a shell command may start with that are not programs to look up on PATH.
_SHELL_WORDS = frozenset(
    {
        *("!", "{", "(", "[", "[[", ".", ":", "if", "for", "while", "until", "case"),
        *("function", "time", "cd", "export", "set", "unset", "exit", "source", "eval"),
        *("exec", "command", "builtin", "true", "false", "test", "echo", "printf", "read"),
        *("env", "nohup", "timeout"),
    }
)


class ContinuationLimit(Exception):
    """A continuation ran out of tokens or time (the gate runs next); not a failure."""


class Loop(Protocol):
    async def run(self, max_turns: int) -> None: ...


class Autonomy(LoggingConfigurable):
    """Configure as `c.Autonomy.<trait>`: the defaults of `autonomous=True`, and the gate."""

    max_continuations = Int(3, min=1, config=True, help="Continuations before it fails.")
    turns = Int(12, min=1, config=True, help="Model turns per continuation.")
    tokens = Int(80_000, min=1, config=True, help="Tokens (the subtree's) per continuation.")
    seconds = Float(1800.0, config=True, help="Wall-clock seconds per continuation.")
    gate_timeout = Float(
        300.0, config=True, help="Seconds a gate may run before it is stopped (and fails)."
    )
    gate_output_chars = Int(
        4000, config=True, help="Characters of a gate's output shown to the model (the end)."
    )

    def __init__(
        self,
        shared: Shared,
        *,
        run_silent: Callable[[LiveSession, str, float], Awaitable[CellResult]],
        answers: Answers,
        workdir: Callable[[], str],
        **kwargs: Any,
    ) -> None:
        super().__init__(parent=shared.parent, **kwargs)
        self.accounting = shared.accounting
        self.events = shared.events
        self.run_silent = run_silent
        self.answers = answers
        self.workdir = workdir

    # -- options --------------------------------------------------------------------------------
    def parse(self, value: Any) -> dict[str, Any] | None:
        """The `autonomous` option of a new session, checked, with this daemon's defaults."""
        return parse(value, {k: getattr(self, k) for k in DEFAULTED})

    # -- running --------------------------------------------------------------------------------
    async def run(self, live: LiveSession, loop: Loop) -> None:
        """Continuations until the gate passes (returns) or they run out (PrimeError)."""
        plan = live.record.options["autonomous"]
        state = dict(live.record.options.get("autonomy") or {})
        if not state or state.get("phase") == "done":
            state = self._begin(live, plan, 1, None, None)
        while True:
            if state["phase"] == "work":
                try:
                    ended = await self._work(live, loop, plan, state)
                except BudgetExceeded as e:
                    raise BudgetExceeded(
                        f"autonomous run stopped in continuation {state['continuation']} of "
                        f"{plan['max_continuations']}: {e.message}",
                        **e.data,
                    ) from None
                state = self._save(live, {**state, "phase": "gate", "ended": ended})
            result = await self._gate(live, plan, state)
            if result["passed"]:
                self._save(live, {**state, "phase": "done"})
                if not self.answers.kept(live):
                    text = f"(no answer: the gate passed) {result.get('output') or ''}".strip()
                    self.answers.record(live, None, text[:2000], "reply")
                return
            n = state["continuation"]
            if n >= plan["max_continuations"]:
                raise PrimeError(
                    f"autonomous: the gate ({describe(plan['gate'])}) did not pass in {n} "
                    f"continuation{'s' if n != 1 else ''} (max_continuations={n}); last: "
                    f"{_verdict(result)}"
                )
            # A new continuation: the answer that failed the gate is no longer the answer.
            self.answers.forget(live)
            state = self._begin(live, plan, n + 1, state.get("ended"), result)

    async def _work(
        self, live: LiveSession, loop: Loop, plan: dict[str, Any], state: dict[str, Any]
    ) -> str:
        """Run the continuation's turns; why it ended."""
        remaining = plan["turns"] - int(state.get("turns") or 0)
        if remaining > 0:
            try:
                await loop.run(remaining)
            except TurnLimitReached as e:  # its turns, its time, or the model repeating itself
                return f"it used its {plan['turns']} turns" if e.turns else e.what
            except ContinuationLimit as e:
                return str(e)
            return "it answered"
        return f"it used its {plan['turns']} turns"

    def before_turn(self, live: LiveSession) -> None:
        """Before each model call of an autonomous session: count the turn, and end the
        continuation once its tokens or time are spent."""
        options = live.record.options
        plan, state = options.get("autonomous"), options.get("autonomy")
        if not plan or not state or state.get("phase") != "work":
            return
        used = self.accounting.subtree(live.id)["total_tokens"] - state["tokens0"]
        if used >= plan["tokens"]:
            raise ContinuationLimit(f"it used {used:g} of its {plan['tokens']} tokens")
        elapsed = time.time() - state["started"]
        if elapsed >= plan["seconds"]:
            raise ContinuationLimit(f"it ran {elapsed:.0f} of its {plan['seconds']:g} s")
        self._save(live, {**state, "turns": int(state.get("turns") or 0) + 1})

    def _begin(
        self,
        live: LiveSession,
        plan: dict[str, Any],
        n: int,
        ended: str | None,
        result: dict[str, Any] | None,
    ) -> dict[str, Any]:
        state = self._save(
            live,
            {
                "continuation": n,
                "phase": "work",
                "turns": 0,
                "tokens0": self.accounting.subtree(live.id)["total_tokens"],
                "started": time.time(),
            },
        )
        limits = {k: plan[k] for k in ("turns", "tokens", "seconds")}
        data: dict[str, Any] = {
            "continuation": n,
            "of": plan["max_continuations"],
            "limits": limits,
            "gate": describe(plan["gate"]),
        }
        if ended:
            data["reason"] = ended
        self.events.emit(live.record, EventKind.CONTINUATION, data)
        each = f"at most {plan['turns']} turns, {plan['tokens']} tokens and {plan['seconds']:g} s"
        if result is None:
            note = (
                f"[Autonomous mode: you work in up to {plan['max_continuations']} "
                f"continuations of {each} each. When you answer, or a continuation runs out, "
                f"the daemon runs the gate — {describe(plan['gate'], long=True)} — and the "
                "session ends when it passes; if it fails you continue, shown its output.]"
            )
        else:
            output = result.get("output") or ""
            shown, _ = cap(output[-self.gate_output_chars :], self.gate_output_chars)
            note = (
                f"[Autonomous mode, continuation {n} of {plan['max_continuations']}: the "
                f"previous continuation ended ({ended}) and the gate "
                f"{describe(plan['gate'])} did not pass: {_verdict(result)}."
                + (f" Its output (the end):\n```\n{shown}\n```\n" if output.strip() else " ")
                + f"Keep working until it passes; this continuation has {each}.]"
            )
        live.notes.append(note)
        return state

    def _save(self, live: LiveSession, state: dict[str, Any]) -> dict[str, Any]:
        live.record.update(options={**live.record.options, "autonomy": state})
        return state

    # -- the gate ---------------------------------------------------------------------------------
    async def _gate(
        self, live: LiveSession, plan: dict[str, Any], state: dict[str, Any]
    ) -> dict[str, Any]:
        gate, timeout = plan["gate"], float(plan["gate_timeout"])
        result: dict[str, Any] = {
            "continuation": state["continuation"],
            "ended": state.get("ended") or "",
        }
        start = time.monotonic()
        if gate is None:
            answered = self.answers.kept(live)
            result.update(kind="answer", passed=answered, output="", error=None)
            if not answered:
                result["error"] = "no answer yet"
        else:
            kind = "shell" if "shell" in gate else "python"
            result.update(kind=kind, command=gate[kind])
            if kind == "shell":
                args = (gate["shell"], timeout, self.workdir())
                code, limit = f"__pg.shell(*{args!r})", timeout + 15
            else:
                code, limit = f"__pg.python({gate['python']!r})", timeout
            cell = await self.run_silent(
                live, f"import prime_kernel.kernel.gate as __pg\n{code}\ndel __pg", limit
            )
            report = observation.report(cell.outputs, cell.status, MARKER)
            if report is None:
                late = cell.status in ("timeout", "killed")
                detail = render(cell.outputs, status=cell.status, limit=2000, timeout=0)
                result.update(
                    passed=False,
                    timed_out=late,
                    output=detail,
                    error=f"the gate did not finish in {timeout:g} s and was stopped"
                    if late
                    else f"the gate could not run ({cell.status}): {detail}",
                )
            else:
                result.update(report)
        result["duration"] = round(time.monotonic() - start, 3)
        shown = dict(result)
        shown["output"], _ = cap(str(result.get("output") or "")[-20_000:], 20_000)
        self.events.emit(live.record, EventKind.GATE, shown)
        return result


def parse(value: Any, defaults: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """An `autonomous` option checked and completed: None (not autonomous) or the plan, each
    limit taken from `defaults` (default: the `c.Autonomy` traits' defaults) where not given."""
    if defaults is None:
        traits = Autonomy.class_traits()
        defaults = {k: traits[k].default_value for k in DEFAULTED}
    if value is None or value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, dict):
        raise InvalidRequest(
            "autonomous must be true or a dict such as {'gate': 'pytest -q', "
            f"'max_continuations': 3}}, not {type(value).__name__}"
        )
    unknown = sorted(set(value) - set(KEYS))
    if unknown:
        raise InvalidRequest(
            f"unknown autonomous keys: {', '.join(map(str, unknown))} (known: {', '.join(KEYS)})"
        )
    return {
        "gate": _gate(value.get("gate")),
        "gate_timeout": _number(value, "gate_timeout", defaults["gate_timeout"], 86400.0),
        "max_continuations": int(
            _number(value, "max_continuations", defaults["max_continuations"], 1000, whole=True)
        ),
        "turns": int(_number(value, "turns", defaults["turns"], 10_000, whole=True)),
        "tokens": int(_number(value, "tokens", defaults["tokens"], 1e12, whole=True)),
        "seconds": _number(value, "seconds", defaults["seconds"], 1e7),
    }


def describe(gate: dict[str, Any] | None, *, long: bool = False) -> str:
    if gate is None:
        return "your answer (the session ends once you answer)" if long else "an answer"
    if "shell" in gate:
        where = " (a shell command in the working folder; exit status 0 passes)" if long else ""
        return f"`{gate['shell']}`{where}"
    return f"`{gate['python']}`" + (
        " (evaluated in your REPL; a true value passes)" if long else ""
    )


def _verdict(result: dict[str, Any]) -> str:
    if result.get("error"):
        return str(result["error"])
    if result.get("kind") == "shell":
        return f"exit status {result.get('exit_code')}"
    if result.get("kind") == "python":
        return f"it was {str(result.get('output') or '')[:200]}"
    return "no answer"


def _gate(value: Any) -> dict[str, str] | None:
    """A gate as stored: None, {"shell": command} or {"python": expression}."""
    if value is None:
        return None
    if isinstance(value, str):
        value = {"shell": value}
    if not isinstance(value, dict) or len(value) != 1 or not set(value) <= {"shell", "python"}:
        raise InvalidRequest(
            "the gate is a shell command (a string, or {'shell': command}) or a Python "
            "expression ({'python': expression})"
        )
    kind, text = next(iter(value.items()))
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequest(f"the {kind} gate must be a non-empty string")
    if len(text) > 4000:
        raise InvalidRequest(f"the {kind} gate has {len(text)} characters; at most 4000")
    if kind == "python":
        try:
            compile(text, "<gate>", "eval")
        except SyntaxError as e:
            raise InvalidRequest(f"the gate is not a Python expression: {e.msg}") from None
    else:
        missing = _missing_program(text)
        if missing is not None:
            raise InvalidRequest(
                f"the gate's command {missing!r} does not exist (not found on the server's "
                "PATH); name a program that exists, or a script by its path (./check.sh)"
            )
    return {kind: text}


def _missing_program(command: str) -> str | None:
    """The program a shell command starts with, if it is looked up on PATH and not found
    there. Scripts named by a path may be written by the agent later, and anything past the
    first word (or a command that starts with shell syntax) is left to the shell."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError as e:
        raise InvalidRequest(f"the gate is not a valid shell command: {e}") from None
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # VAR=value before the command
    if not words:
        return None
    first = words[0]
    if first in _SHELL_WORDS or "/" in first or any(c in first for c in "$`*?;&|<>(){}"):
        return None
    return None if shutil.which(first) else first


def _number(
    value: dict[str, Any], key: str, default: float, high: float, *, whole: bool = False
) -> float:
    v = value.get(key)
    if v is None:
        return default
    kind = int if whole else (int, float)
    if isinstance(v, bool) or not isinstance(v, kind) or not math.isfinite(v):
        what = "a whole number" if whole else "a number"
        raise InvalidRequest(f"autonomous {key} must be {what}, not {v!r}")
    if not 0 < v <= high:
        raise InvalidRequest(
            f"autonomous {key} must be more than 0 and at most {high:g}, not {v!r}"
        )
    return v
