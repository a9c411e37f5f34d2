"""An exported notebook opens on the Prime Agent kernel and its cells re-run to the same outputs.

The sessions are recordings (tests/fixtures/trajectories) loaded into a store, exported as
`prime-agent export` does with no server; the notebooks run on real Prime Agent kernels
started by nbclient, as a person's Jupyter would start them."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from prime_kernel.cli.main import main

from .conftest import code_cells, load, read


def _shown(cell: nbformat.NotebookNode) -> list[str]:
    """What a cell displayed, in order: stream text and text/plain results."""
    shown = []
    for out in cell.outputs:
        if out.output_type == "stream":
            shown.append(out.text)
        elif out.output_type == "execute_result":
            shown.append(out.data["text/plain"])
    return shown


def _plain(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The cells up to the first that needs a daemon's session (answer(), rlm)."""
    cells = []
    for cell in code_cells(nb):
        if "answer(" in cell.source or "rlm" in cell.source:
            break
        cells.append(cell)
    return cells


def test_reexecute_on_the_prime_agent_kernel(prime_kernelspec: Path, tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    # From a root whose context is a list of words, and a tree whose children each got an int:
    # one notebook each that loads its context and computes on it before any answer().
    runnable = []
    for name in ("context", "tree"):
        sid = load(root, name)["root"]
        folder = tmp_path / name
        argv = ["--root", str(root), "export", sid, "-o", str(folder), "--subtree"]
        assert main([*argv, "--with-context"]) == 0
        found = [(p, read(p)) for p in sorted(folder.glob("*.ipynb"))]
        runnable.append(next((p, nb) for p, nb in found if len(_plain(nb)) >= 2))

    for path, nb in runnable:
        original = _plain(nb)
        assert original[0].metadata.prime.kind == "context"  # loads the file beside it
        fresh = nbformat.v4.new_notebook(cells=[c.copy() for c in original], metadata=nb.metadata)
        for cell in code_cells(fresh):
            cell.outputs = []
        client = NotebookClient(
            fresh,
            kernel_name="prime-agent",
            timeout=60,
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()  # NoSuchKernel unless the Prime Agent spec is found
        nbformat.validate(fresh)
        assert fresh.metadata.kernelspec.name == "prime-agent"
        assert [_shown(c) for c in code_cells(fresh)] == [_shown(c) for c in original]
        assert all(c.execution_count for c in code_cells(fresh))
