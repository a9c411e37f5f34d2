"""Sphinx configuration: the prime_kernel documentation (MyST Markdown, myst-nb, pydata theme).

`python -m sphinx -W -b html docs docs/_build/html` builds it; `tests/test_docs.py` runs that
build with warnings as errors. The example notebooks are pages here, copied from `examples/` at
each build into `docs/examples/` (generated; git ignores it): a symbolic link would do, but
newer MyST resolves links through it to outside the docs and cannot find them. They are shown
as committed (outputs stripped), not executed here — the tests execute them against a real
server (`tests/test_examples.py`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))


def _copy_examples() -> None:
    # Only what changed, and nothing deleted mid-copy: two builds may run at once.
    target = DOCS / "examples"
    target.mkdir(exist_ok=True)
    sources = {p.name: p for p in (DOCS.parent / "examples").glob("*.ipynb")}
    for stale in target.glob("*.ipynb"):
        if stale.name not in sources:
            stale.unlink(missing_ok=True)
    for name, source in sources.items():
        copy = target / name
        if not copy.exists() or copy.read_bytes() != source.read_bytes():
            partial = copy.with_name(f".{name}.{os.getpid()}")
            shutil.copy2(source, partial)
            os.replace(partial, copy)


_copy_examples()


project = "prime_kernel"
author = "the prime_kernel authors"
copyright = "the prime_kernel authors, BSD-3-Clause"
# The version hatch-nodejs-version gives the package: package.json's.
version = release = json.loads((DOCS.parent / "package.json").read_text())["version"]

extensions = ["myst_nb", "sphinx.ext.autodoc", "prime_config"]
# The REPL API page documents what the kernel module gives a REPL, in source order.
autodoc_member_order = "bysource"
autodoc_typehints = "description"
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]

# Notebooks are shown as committed: they run in the tests, where a server and a model exist.
nb_execution_mode = "off"
myst_enable_extensions = ["colon_fence", "deflist"]
# `[text](page.md#a-heading)` links resolve to headings down to ###.
myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = "prime_kernel"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": []}
html_show_sourcelink = False
