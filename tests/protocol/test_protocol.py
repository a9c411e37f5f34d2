"""The protocol is defined once: in prime_kernel/protocol, and what is generated from it is
fresh; nothing else defines a state, an error code or a harness kind, and every view renders
every event kind."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from typing import Any

import prime_kernel
from prime_kernel.export import RENDERERS
from prime_kernel.protocol import generate
from prime_kernel.protocol.errors import ERRORS, PrimeError
from prime_kernel.protocol.events import EVENTS, EventKind
from prime_kernel.protocol.harness import HarnessKind
from prime_kernel.protocol.states import SessionState

PACKAGE = Path(prime_kernel.__file__).parent


def test_generated_files_are_fresh() -> None:
    assert generate.main(["--check"]) == 0, "run python -m prime_kernel.protocol.generate"


def _modules() -> list[Path]:
    return [
        p
        for p in PACKAGE.rglob("*.py")
        if "protocol" not in p.relative_to(PACKAGE).parts
        and "labextension" not in p.relative_to(PACKAGE).parts
    ]


def _strings(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    }


def test_no_module_spells_a_state_outside_the_protocol() -> None:
    states = {s.value for s in SessionState}
    found = {str(p.relative_to(PACKAGE)): _strings(p) & states for p in _modules()}
    assert {p: s for p, s in found.items() if s} == {}


def test_every_error_class_is_the_protocols() -> None:
    for info in pkgutil.walk_packages(prime_kernel.__path__, "prime_kernel."):
        if ".labextension" in info.name or info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)

    def subclasses(cls: type[Any]) -> list[type[Any]]:
        return [s for c in cls.__subclasses__() for s in (c, *subclasses(c))]

    outside = [c for c in subclasses(PrimeError) if c.__module__ != "prime_kernel.protocol.errors"]
    assert outside == []
    assert len({c.code for c in ERRORS.values()}) == len(ERRORS)


def test_no_module_lists_harness_kinds_outside_the_protocol() -> None:
    kinds = {k.value for k in HarnessKind}
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                values = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                assert not kinds <= values, f"{path}:{node.lineno} lists the harness kinds"


def test_every_event_kind_has_a_schema_and_an_export_renderer() -> None:
    assert set(EVENTS) == set(EventKind)
    assert set(RENDERERS) == set(EventKind)
