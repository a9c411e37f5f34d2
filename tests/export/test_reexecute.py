"""An exported notebook opens on the Prime Agent kernel and its cells re-run to the same outputs."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient

from prime_kernel.export import export_to

from .conftest import code_cells, finish, read


def _shown(cell: nbformat.NotebookNode) -> list[str]:
    """What a cell displayed, in order: stream text and text/plain results."""
    shown = []
    for out in cell.outputs:
        if out.output_type == "stream":
            shown.append(out.text)
        elif out.output_type == "execute_result":
            shown.append(out.data["text/plain"])
    return shown


async def test_reexecute_on_the_prime_agent_kernel(daemon, script, exporter, tmp_path):
    child = script([{"code": "total = sum(context)\nprint(total)"}, {"text": "summed"}])
    model = script(
        [
            {"code": "x = 6 * 7\nprint(x)"},
            {"code": "[i * i for i in range(4)]"},
            {"code": f"h = rlm('sum', context=[1, 2, 3], model={child!r})\nh.result(timeout=60)"},
            {"text": "x is 42"},
        ]
    )
    record = await finish(daemon, "compute", model)
    child_id = record["children"][0]
    await export_to(
        daemon.listing, exporter, record["id"], tmp_path / "tree", subtree=True, with_context=True
    )

    # The root's plain cells (its rlm() cell needs a daemon's session, so it is left out).
    nb = read(tmp_path / "tree" / f"{record['id']}.ipynb")
    plain = code_cells(nb)[:2]
    rerun = nbformat.v4.new_notebook(cells=[c.copy() for c in plain], metadata=nb.metadata)
    # The child's notebook as it is: its first cell loads the context written beside it.
    child_nb = read(tmp_path / "tree" / f"{child_id}.ipynb")

    for original, notebook in ((plain, rerun), (code_cells(child_nb), child_nb)):
        fresh = nbformat.from_dict(notebook)
        for cell in code_cells(fresh):
            cell.outputs = []
        client = NotebookClient(
            fresh,
            kernel_name="prime-agent",
            timeout=60,
            resources={"metadata": {"path": str(tmp_path / "tree")}},
        )
        await client.async_execute()  # NoSuchKernel unless the Prime Agent spec is found
        nbformat.validate(fresh)
        assert fresh.metadata.kernelspec.name == "prime-agent"
        assert [_shown(c) for c in code_cells(fresh)] == [_shown(c) for c in original]
        assert all(c.execution_count for c in code_cells(fresh))
