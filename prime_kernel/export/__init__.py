"""Trajectories as notebooks: export a session, or its whole subtree, to .ipynb."""

from __future__ import annotations

from .contexts import ContextFile, context_file
from .files import (
    Export,
    Source,
    collect,
    default_target,
    export_to,
    target_parts,
    under_root,
    write,
)
from .markdown import notebook_name
from .notebook import NotebookExporter
from .story import RENDERERS

__all__ = [
    "RENDERERS",
    "ContextFile",
    "Export",
    "NotebookExporter",
    "Source",
    "collect",
    "context_file",
    "default_target",
    "export_to",
    "notebook_name",
    "target_parts",
    "under_root",
    "write",
]
