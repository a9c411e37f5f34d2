"""The documentation builds with Sphinx, warnings as errors, and the README's links hold."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_build_without_a_warning(tmp_path: Path) -> None:
    # -W: a warning (a broken link, a page outside every toctree, a bad directive) fails the
    # build; --keep-going reports all of them at once. -E: read every page, no saved state.
    args = ["-W", "--keep-going", "-E", "-q", "-b", "html", "-d", str(tmp_path / "doctrees")]
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", *args, str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html = tmp_path / "html"
    # Every tutorial notebook is a page, and the configuration reference was generated.
    for notebook in sorted((ROOT / "examples").glob("*.ipynb")):
        assert (html / "examples" / f"{notebook.stem}.html").is_file(), notebook.name
    options = (html / "configuration-options.html").read_text()
    assert "c.Daemon.max_concurrent" in options and "c.Sandbox.mode" in options


# [text](target) outside code; a target with a scheme is a web link, not checked here.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_the_readme_is_short_and_its_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in LINK.findall(prose):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        assert (ROOT / path).exists(), f"README links to {target}, which does not exist"
