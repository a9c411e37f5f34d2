"""Listing the server root while exports are written, as the file browser does.

jupyter_server lists a folder entry by entry: a temporary file beside the target, renamed away
between the listing and its stat, turned the whole listing into a 404 (and showed the
temporary in the listings that did succeed). Exports write their temporaries in the store's
private folder instead.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nbformat
import pytest
from traitlets.config import Config

from .conftest import finish

EXPORTS = 30


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    # A person who shows hidden files: every entry of a folder is listed, hidden ones too. No
    # hide_globs either, so that only where the temporaries are written keeps them out.
    jp_server_config.ContentsManager.allow_hidden = True
    jp_server_config.ContentsManager.hide_globs = []
    return jp_server_config


async def test_listing_never_fails_nor_shows_a_temporary(daemon, script, jp_fetch, jp_root_dir):
    record = await finish(daemon, "export me", script([{"code": "print('hi')"}, {"text": "done"}]))
    url = ("api", "prime", "sessions", record["id"], "export")

    async def export(**body: Any) -> None:
        resp = await jp_fetch(*url, method="POST", body=json.dumps(body))
        assert resp.code == 201

    async def export_all() -> None:
        for i in range(EXPORTS):
            # A new notebook each time, and the same folder replaced each time (the replaced
            # folder is moved aside and deleted: that must not be listed either).
            await export(path=f"nb-{i}.ipynb")
            await export(path="tree", subtree=True, force=True)

    exports = {".prime", "tree", *(f"nb-{i}.ipynb" for i in range(EXPORTS))}
    exporting = asyncio.ensure_future(export_all())
    listings = 0
    try:
        while not exporting.done():
            # A failing listing raises here (HTTPClientError 404).
            resp = await jp_fetch("api", "contents", "", params={"content": "1"})
            names = {entry["name"] for entry in json.loads(resp.body)["content"]}
            assert names <= exports, f"listed while exporting: {sorted(names - exports)}"
            listings += 1
    finally:
        await exporting
    assert listings > 0

    # Every export is complete, and no temporary is left behind anywhere.
    assert {p.name for p in jp_root_dir.iterdir()} == exports
    assert [p.name for p in (jp_root_dir / "tree").iterdir()] == [f"{record['id']}.ipynb"]
    for i in range(EXPORTS):
        nbformat.validate(nbformat.read(jp_root_dir / f"nb-{i}.ipynb", as_version=4))
    assert list(daemon.store.tmp_dir.iterdir()) == []
