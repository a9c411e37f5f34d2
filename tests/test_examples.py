"""Every notebook in examples/ runs top to bottom, as a person runs it in JupyterLab: on the
"Prime Agent" kernel, started by a real server with the extension, the README's settings (the
embedded model by default) and the examples' scripted models (`PRIME_SCRIPTS`). The notebooks
check their own results; a cell that raises fails the test with its traceback. Committed
notebooks carry no outputs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from prime_kernel.models import local

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
# Notebooks whose agents run on the embedded model (the others use scripted models).
EMBEDDED = {"quickstart.ipynb"}


def test_committed_notebooks_have_no_outputs() -> None:
    assert NOTEBOOKS, "no notebooks in examples/"
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert nb.metadata["kernelspec"]["name"] == "prime-agent", path.name
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, (
                    f"{path.name} has outputs committed: clear them (Edit → Clear Outputs of "
                    "All Cells) before committing"
                )


@pytest.fixture
def prime_config() -> dict[str, Any]:
    # The README's settings: the embedded model is the default.
    return {"pool_size": 2, "cell_timeout": 300.0, "default_model": local.MODEL}


@pytest.fixture
def examples_root(jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server root holds a copy of examples/, so what the notebooks write stays there."""
    shutil.copytree(EXAMPLES, jp_root_dir, dirs_exist_ok=True)
    # As `PRIME_SCRIPTS=scripts.json jupyter lab` in examples/ gives the server.
    monkeypatch.setenv("PRIME_SCRIPTS", str(jp_root_dir / "scripts.json"))
    return jp_root_dir


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(p.name, marks=[pytest.mark.local_model] if p.name in EMBEDDED else [])
        for p in NOTEBOOKS
    ],
)
async def test_example_runs(name: str, examples_root: Path, daemon: Any) -> None:
    if name in EMBEDDED and not local.available():
        pytest.skip("the embedded model is not installed")
    manager = daemon.kernel_manager
    # What JupyterLab does when the notebook is opened: a kernel of the server, in its folder.
    kernel_id = await manager.start_kernel(kernel_name="prime-agent", path="")
    try:
        nb = nbformat.read(examples_root / name, as_version=4)
        client = NotebookClient(nb, km=manager.get_kernel(kernel_id), timeout=900)
        try:
            await client.async_execute()
        finally:  # the run, with its outputs, beside the copy (pytest keeps tmp folders)
            nbformat.write(nb, examples_root / f"{Path(name).stem}.run.ipynb")
    finally:
        await manager.shutdown_kernel(kernel_id, now=True)
