"""Helpers for the export tests: run scripted sessions to the end, read notebooks back."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.session import Session

from prime_kernel.daemon.daemon import Daemon
from prime_kernel.daemon.replay import load_recording
from prime_kernel.daemon.store import SqliteStore
from prime_kernel.export import NotebookExporter
from prime_kernel.protocol.requests import SessionRequest
from prime_kernel.util.redact import Redactor

# A 1x1 red PNG.
PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
    "rkJggg=="
)
SHOW_PNG = (
    "import base64\nfrom IPython.display import Image, display\n"
    f"display(Image(data=base64.b64decode({PNG_B64!r})))"
)
assert base64.b64decode(PNG_B64).startswith(b"\x89PNG")

RECORDINGS = Path(__file__).parents[1] / "fixtures" / "trajectories"


def load(root: Path, name: str) -> dict[str, Any]:
    """The recording tests/fixtures/trajectories/`name`.json written into the store under
    `root` (served by no daemon): sessions to export without running them."""
    recording: dict[str, Any] = json.loads((RECORDINGS / f"{name}.json").read_text())
    store = SqliteStore(root / ".prime")
    store.open()

    async def write() -> None:
        try:
            await load_recording(store, recording)
        finally:
            await store.close()

    asyncio.run(write())
    return recording


async def finish(daemon: Daemon, prompt: str, model: str, **options: Any) -> dict[str, Any]:
    """Run a root session to its end; its record."""
    record = await daemon.admission.create_session(SessionRequest(prompt, model=model, **options))
    return await daemon.runs.wait(record["id"], 60)


async def person_runs(daemon: Daemon, session_id: str, code: str) -> None:
    """Run `code` in a session's kernel as a person at a console would (their own client)."""
    assert daemon.kernel_manager is not None
    km = daemon.kernel_manager.get_kernel(daemon.registry.get(session_id).kernel_id)
    client = km.client(session=Session(key=km.session.key))
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=30)
        await client.execute_interactive(code, timeout=30)
    finally:
        client.stop_channels()


def read(path: Path) -> nbformat.NotebookNode:
    """A notebook from disk, validated."""
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    return nb


def by_kind(nb: nbformat.NotebookNode, kind: str) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.metadata.get("prime", {}).get("kind") == kind]


def code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def text_of(nb: nbformat.NotebookNode) -> str:
    return json.dumps(nb)


@pytest.fixture
def exporter(daemon: Daemon) -> NotebookExporter:
    return NotebookExporter(redactor=Redactor(daemon.secrets.known()))


async def notebook_of(
    daemon: Daemon, exporter: NotebookExporter, session_id: str, **options: Any
) -> nbformat.NotebookNode:
    """A session's notebook, from what the daemon holds (as the REST export builds it)."""
    record = daemon.listing.session_json(session_id)
    states = {c: daemon.listing.session_json(c)["state"] for c in record["children"]}
    return exporter.notebook(
        record, await daemon.listing.events(session_id), states=states, **options
    )
