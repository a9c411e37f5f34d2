"""Trajectories as notebooks: export a session, or its whole subtree, to .ipynb."""

from __future__ import annotations

from .files import Export, Source, collect, default_target, export_to, under_root, write
from .notebook import RENDERERS, NotebookExporter, context_name, notebook_name

__all__ = [
    "RENDERERS",
    "Export",
    "NotebookExporter",
    "Source",
    "collect",
    "context_name",
    "default_target",
    "export_to",
    "notebook_name",
    "under_root",
    "write",
]
