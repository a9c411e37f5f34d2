"""Tests mirror the package: every module of prime_kernel/daemon/ is imported by a unit test
under tests/daemon/, where it is tested with fakes (a server-wide test elsewhere does not count).

A module counts as imported when a test imports it by name (`import prime_kernel.daemon.x`,
`from prime_kernel.daemon import x`, `from prime_kernel.daemon.x import y`) or imports a class or
function defined in it through its package (`from prime_kernel.daemon.sandbox import Layout`
covers sandbox/mounts.py)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import prime_kernel.daemon

PACKAGE = Path(prime_kernel.daemon.__file__).parent
TESTS = Path(__file__).parent


def modules() -> set[str]:
    """The dotted names of the package's modules (packages' `__init__` aside)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name == "__init__.py":
            continue
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        found.add(".".join(("prime_kernel.daemon", *parts)))
    return found


def imported(source: str) -> set[str]:
    """The modules of prime_kernel.daemon that `source` imports, or whose classes and
    functions it imports through their package."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if not node.module.startswith("prime_kernel.daemon"):
                continue
            package = importlib.import_module(node.module)
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if hasattr(package, "__path__") and importlib.util.find_spec(submodule):
                    names.add(submodule)
                    continue
                defined_in = getattr(getattr(package, alias.name, None), "__module__", None)
                if isinstance(defined_in, str):
                    names.add(defined_in)
    return names


def test_a_module_counts_when_its_class_comes_through_its_package() -> None:
    source = (
        "from prime_kernel.daemon.sandbox import Layout\nfrom prime_kernel.daemon import private"
    )
    assert {"prime_kernel.daemon.sandbox.mounts", "prime_kernel.daemon.private"} <= imported(source)
    assert "prime_kernel.daemon.sandbox.bwrap" not in imported(source)


def test_every_daemon_module_is_imported_by_a_test_here() -> None:
    covered: set[str] = set()
    for path in TESTS.rglob("*.py"):
        covered |= imported(path.read_text())
    missing = sorted(modules() - covered)
    assert not missing, f"no test under tests/daemon/ imports {missing}: add test_<module>.py"
