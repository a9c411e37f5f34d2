"""Sphinx extension: the configuration reference, from the traitlets classes themselves.

Every `Configurable` in `prime_kernel` with options (`c.Admission.max_depth`, ...) is listed with
each option's type, default and help, appended at build time to the page that asks for it
(`configuration-options.md`), so the reference cannot fall behind the code.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from traitlets.config import Configurable

MARKER = "<!-- prime-config -->"
# Modules that run something when imported (a kernel's entry point), not just define it.
SKIP = ("__main__",)


def configurables() -> list[type[Configurable]]:
    """The prime_kernel classes that take options, by name."""
    import prime_kernel

    for info in pkgutil.walk_packages(prime_kernel.__path__, "prime_kernel."):
        if info.name.rsplit(".", 1)[-1] not in SKIP:
            importlib.import_module(info.name)
    found: dict[str, type[Configurable]] = {}
    stack: list[type] = [Configurable]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("prime_kernel.") and cls.class_own_traits(config=True):
            found[cls.__name__] = cls
    return [found[name] for name in sorted(found)]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def markdown() -> str:
    out = []
    for cls in configurables():
        out.append(f"## `{cls.__name__}`\n")
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        if doc:
            out.append(_one_line(doc) + f" (`{cls.__module__}`)\n")
        for name, trait in sorted(cls.class_own_traits(config=True).items()):
            default = trait.default_value_repr()
            kind = type(trait).__name__
            help_text = _one_line(trait.help or "") or "(no description)"
            out.append(f"`c.{cls.__name__}.{name}` ({kind}, default `{default}`)\n: {help_text}\n")
    return "\n".join(out)


def _inject(app: Any, docname: str, source: list[str]) -> None:
    if MARKER in source[0]:
        source[0] = source[0].replace(MARKER, markdown())


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _inject)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
