"""Learning from verified experience: a session's trajectory distilled into a worked example.

No model call. From the cells the session ran, the code that produced its answer is cut out:

- only cells that ran without error, split into their top-level statements;
- a backward slice from the statement that called `answer(...)`: a statement is kept when it
  binds or changes a name a kept statement after it reads (imports keep only the names used);
  everything else — looking at the data, prints, dead ends, failed attempts — is left out;
- the result must stand alone: every name it reads is bound in it, a builtin, or one the REPL
  provides (`context`, `answer`, `rlm`, ...).

A worked example must show how the answer is computed, never the answer itself. `answer(338350)`,
or a variable bound to a literal, is *generalised* when an earlier cell printed that value from
an expression — `print(sum(i * i for i in range(1, 101)))` then `answer(338350)` becomes
`answer(sum(i * i for i in range(1, 101)))` — and refused otherwise. Code that names the
verifier, the expected answer or the harness's own files, or reads the environment, is refused.

A verified *wrong* answer becomes a caution: the code and the answer it gave, to be avoided.
"""

from __future__ import annotations

import ast
import builtins
import copy
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import examples

# Names a REPL provides without code binding them (prime_kernel.kernel.primitives and friends).
REPL_NAMES = frozenset(
    [
        "context",
        "answer",
        "FINAL",
        "FINAL_VAR",
        "rlm",
        "llm",
        "llm_query",
        "llm_query_batched",
        "send",
        "recv",
        "agents",
        "harness",
        "skill",
        "refine",
        "goal",
        "schedule",
        "gc",
        "compact",
        "usage",
        "export",
        "Handle",
        "Cancelled",
        "ChildFailed",
        "BudgetExceeded",
        "display",
        "get_ipython",
        "In",
        "Out",
    ]
)
_ANSWER_CALLS = frozenset({"answer", "FINAL", "FINAL_VAR"})
_BUILTINS = frozenset(dir(builtins))
# Code that looks for the verdict instead of computing the answer.
_CHEAT = re.compile(
    r"\b(verif\w*|checker|grader|expected|answer_key|ground_truth)\b|"
    r"\.prime\b|os\.environ|getenv|/proc/|sys\._getframe|gc\.get_objects|\binspect\.",
    re.IGNORECASE,
)


class NotLearned(Exception):
    """Why a verified session teaches nothing (its message is shown to people)."""


@dataclass
class Cell:
    """A cell as the trajectory recorded it."""

    code: str
    status: str
    output: str = ""

    @classmethod
    def from_event(cls, data: dict[str, Any]) -> Cell:
        parts = []
        for out in data.get("outputs") or []:
            kind = out.get("output_type")
            if kind == "stream":
                parts.append(str(out.get("text") or ""))
            elif kind in ("execute_result", "display_data"):
                parts.append(str((out.get("data") or {}).get("text/plain") or "") + "\n")
        return cls(str(data.get("code") or ""), str(data.get("status") or ""), "".join(parts))


@dataclass
class _Stmt:
    node: ast.stmt
    cell: int
    last_in_cell: bool
    binds: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)


class _Scan(ast.NodeVisitor):
    """The names a statement binds in the REPL's namespace and the names it reads there.

    Names local to a function, lambda or comprehension inside it are neither: `sum(i * i for i
    in xs)` reads `sum` and `xs` only.
    """

    def __init__(self) -> None:
        self.binds: set[str] = set()
        self.reads: set[str] = set()

    def visit_Name(self, node: ast.Name) -> None:
        (self.binds if isinstance(node.ctx, (ast.Store, ast.Del)) else self.reads).add(node.id)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            self.binds.add(alias.asname or alias.name.split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            self.reads.add(node.target.id)  # x += 1 needs x
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "FINAL_VAR" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self.reads.add(arg.value)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            self.binds.add(func.value.id)  # rows.append(x) changes rows (and needs it)
        self.generic_visit(node)

    def _changed(self, node: ast.Attribute | ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
            self.binds.add(node.value.id)  # d[k] = v changes d (and needs it)
        self.generic_visit(node)

    visit_Attribute = _changed
    visit_Subscript = _changed

    def _inner(self, params: set[str], parts: list[ast.AST]) -> None:
        inner = _Scan()
        for part in parts:
            inner.visit(part)
        self.reads |= inner.reads - inner.binds - params

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        params = {
            a.arg
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            if a is not None
        }
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.visit(default)
        if isinstance(node, ast.Lambda):
            self._inner(params, [node.body])
            return
        self.binds.add(node.name)
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._inner(params, list(node.body))

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function
    visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.binds.add(node.name)
        for part in [*node.bases, *node.decorator_list]:
            self.visit(part)
        self._inner(set(), list(node.body))

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        targets: set[str] = set()
        for gen in node.generators:
            self._inner(targets, [gen.iter])
            targets |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
            self._inner(targets, list(gen.ifs))
        elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        self._inner(targets, list(elts))

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_GeneratorExp = _comprehension
    visit_DictComp = _comprehension


def _names(node: ast.AST) -> tuple[set[str], set[str]]:
    """(names a statement binds or changes, names it reads — including those it changes)."""
    scan = _Scan()
    scan.visit(node)
    changed = scan.binds & scan.reads
    return scan.binds, scan.reads | changed


def _header(node: ast.AST) -> set[str]:
    """Names a compound statement binds before its body reads them (loop and `as` targets)."""
    targets: list[ast.AST] = []
    if isinstance(node, (ast.For, ast.AsyncFor)):
        targets.append(node.target)
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets += [i.optional_vars for i in node.items if i.optional_vars is not None]
    out = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.ExceptHandler) and sub.name:
            out.add(sub.name)
        elif isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
            out.add(sub.target.id)
        elif isinstance(sub, (ast.For, ast.AsyncFor)) and sub is not node:
            out |= {n.id for n in ast.walk(sub.target) if isinstance(n, ast.Name)}
    return out


def _calls_answer(node: ast.AST) -> ast.Call | None:
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id in _ANSWER_CALLS
        ):
            return sub
    return None


def _statements(cells: Sequence[Cell]) -> list[_Stmt]:
    out = []
    for i, cell in enumerate(cells):
        if cell.status != "ok":
            continue  # a failed attempt is a dead end
        try:
            body = ast.parse(cell.code).body
        except SyntaxError:
            continue  # magics, shell escapes: not Python the example could show
        for j, node in enumerate(body):
            binds, reads = _names(node)
            out.append(_Stmt(node, i, j == len(body) - 1, binds, reads))
    return out


def _slice(stmts: list[_Stmt], end: int) -> list[_Stmt]:
    """The statements up to `end` (the answer) that it depends on, in order."""
    kept = [stmts[end]]
    needed = set(stmts[end].reads)
    for stmt in reversed(stmts[:end]):
        hit = stmt.binds & needed
        if not hit:
            continue
        if isinstance(stmt.node, (ast.Import, ast.ImportFrom)):
            node = copy.copy(stmt.node)
            node.names = [a for a in node.names if (a.asname or a.name.split(".")[0]) in needed]
            stmt = _Stmt(node, stmt.cell, stmt.last_in_cell, hit, set())
        kept.append(stmt)
        killed = {n for n in hit if n not in stmt.reads}
        needed = (needed - killed) | stmt.reads
    kept.reverse()
    return kept


def _free(stmts: list[_Stmt]) -> set[str]:
    """Names the sliced code reads that nothing in it binds first (nor Python, nor the REPL)."""
    bound: set[str] = set()
    free: set[str] = set()
    for stmt in stmts:
        free |= stmt.reads - bound - _header(stmt.node)
        bound |= stmt.binds
    return free - _BUILTINS - REPL_NAMES


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _resolve(stmts: list[_Stmt], node: ast.expr) -> ast.expr:
    """What a name in the answer call stands for: the value of the statement that last bound
    it, when that is a plain `name = value` (followed through names); else the name."""
    for _ in range(10):
        if not isinstance(node, ast.Name):
            return node
        last = next((s for s in reversed(stmts) if node.id in s.binds), None)
        if last is None:
            return node
        target = last.node
        if not (
            isinstance(target, ast.Assign)
            and len(target.targets) == 1
            and isinstance(target.targets[0], ast.Name)
            and target.targets[0].id == node.id
        ):
            return node  # changed in place, in a loop, ...: computed
        node = target.value
    return node


def _printed(stmt: _Stmt, cells: Sequence[Cell]) -> ast.expr | None:
    """The expression a cell ended by showing (`print(expr)` or a bare `expr`), if any."""
    if not stmt.last_in_cell or not isinstance(stmt.node, ast.Expr):
        return None
    value = stmt.node.value
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "print"
        and len(value.args) == 1
        and not value.keywords
    ):
        return value.args[0]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return None  # a call for its effect
    return value


def _shown(cell: Cell) -> str:
    lines = [ln.strip() for ln in cell.output.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _generalise(
    stmts: list[_Stmt], end: int, value: Any, cells: Sequence[Cell]
) -> list[_Stmt] | None:
    """The statements with the literal in `answer(...)` replaced by the expression an earlier
    cell computed it with, or None if no cell showed that value."""
    forms = {str(value), repr(value)}
    for i in range(end - 1, -1, -1):
        expr = _printed(stmts[i], cells)
        if expr is None or _is_literal(expr) or _shown(cells[stmts[i].cell]) not in forms:
            continue
        node = copy.deepcopy(stmts[end].node)
        call = _calls_answer(node)
        assert call is not None
        call.args = [copy.deepcopy(expr)]
        call.keywords = []
        binds, reads = _names(node)
        return [*stmts[:end], _Stmt(node, stmts[end].cell, True, binds, reads)]
    return None


def slug(task: str) -> str:
    """An entry id for a task: a few of its words and a hash of all of it."""
    words = [w for w in examples.terms(task) if len(w) > 2][:5] or ["task"]
    head = re.sub(r"[^a-z0-9-]+", "-", "-".join(words))[:40].strip("-") or "task"
    digest = hashlib.sha256(" ".join(task.split()).lower().encode()).hexdigest()[:6]
    return f"{head}-{digest}"


def _value(answer_repr: str) -> Any:
    try:
        return ast.literal_eval(answer_repr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return answer_repr


def distill(
    task: str,
    cells: Sequence[Cell],
    *,
    answer_repr: str,
    correct: bool,
    session_id: str,
    verified_by: str,
    model: str | None = None,
    context_type: str | None = None,
    context_digest: str | None = None,
    note: str = "",
    max_chars: int = 1500,
) -> dict[str, Any]:
    """The edit (a `create` of an `example` entry) that a verified session teaches.

    Raises NotLearned with the reason when it teaches nothing: no code produced the answer, the
    code is a literal answer or reads the verifier, or it does not stand alone.
    """
    stmts = _statements(cells)
    end = next((i for i in range(len(stmts) - 1, -1, -1) if _calls_answer(stmts[i].node)), None)
    if end is None:
        raise NotLearned("no cell that ran without error called answer(...)")
    call = _calls_answer(stmts[end].node)
    assert call is not None
    value = _value(answer_repr)
    generalised = False
    given = _answered(call)
    resolved = _resolve(stmts[:end], given) if given is not None else None
    if correct and resolved is not None and _is_literal(resolved):
        better = _generalise(stmts[: end + 1], end, value, cells)
        if better is None:
            raise NotLearned(
                f"the code answers with a literal ({ast.unparse(resolved)}), not a "
                "computation: a worked example must show how the answer is found"
            )
        stmts, generalised = better, True
    kept = _slice(stmts, end)
    free = _free(kept)
    if free:
        raise NotLearned(
            f"the code that answered does not stand alone: {', '.join(sorted(free))} "
            "came from a cell that failed or is not Python"
        )
    code = "\n".join(ast.unparse(s.node) for s in kept).strip()
    if correct:
        cheat = _CHEAT.search(code)
        if cheat:
            raise NotLearned(
                f"the code reads the verifier or the harness ({cheat.group(0)!r}), which no "
                "later task may learn from"
            )
        literal = _literal_answer(kept, value, task)
        if literal:
            raise NotLearned(f"the code writes the answer in as a literal ({literal})")
    if len(code) > max_chars:
        raise NotLearned(
            f"the code that answered is {len(code)} characters, more than a worked example may "
            f"have ({max_chars}: c.Learner.max_example_chars)"
        )
    outcome = "right" if correct else "wrong"
    metadata: dict[str, Any] = {
        "task": task,
        "outcome": outcome,
        "answer": answer_repr if len(answer_repr) <= 200 else answer_repr[:199] + "…",
        "learned_from": f"session {session_id}",
        "verified_by": verified_by,
    }
    if context_type:
        metadata["context_type"] = context_type
    if context_digest:  # which input: a caution's answer is said only to the same task on it
        metadata["context_digest"] = context_digest
    if model:
        metadata["model"] = model
    if note:
        metadata["note"] = note
    if generalised:
        metadata["generalised"] = "the literal answer was replaced by the expression it came from"
    body = f"```python\n{code}\n```\n"
    if not correct:
        body = f"Verified wrong: this code answered {metadata['answer']}.\n\n" + body
    return {
        "op": "create",
        "kind": "example",
        "id": slug(task) + ("" if correct else "-wrong"),
        "title": " ".join(task.split())[:120],
        "content": body,
        "metadata": metadata,
        "reason": f"learned from session {session_id}, verified {outcome} by {verified_by}",
        "evidence": [{"session_id": session_id}],
    }


def _answered(call: ast.Call) -> ast.expr | None:
    """What an answer call hands over (`FINAL_VAR("x")` hands over the variable x)."""
    if not call.args:
        return None
    arg = call.args[0]
    if (
        isinstance(call.func, ast.Name)
        and call.func.id == "FINAL_VAR"
        and isinstance(arg, ast.Constant)
        and isinstance(arg.value, str)
    ):
        return ast.Name(arg.value, ast.Load())
    return arg


def _literal_answer(stmts: list[_Stmt], value: Any, task: str) -> str | None:
    """The constant in the code that is the answer itself (and not in the task), if any."""
    text = str(value)
    if isinstance(value, bool) or len(text) < 2:
        return None  # True, 7: too common to tell a computation's constant from the answer
    for stmt in stmts:
        for sub in ast.walk(stmt.node):
            if isinstance(sub, ast.Constant) and str(sub.value) == text and text not in task:
                return repr(sub.value)
    return None
