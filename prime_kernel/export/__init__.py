"""Trajectories as notebooks: export a session, or its whole subtree, to .ipynb."""

from __future__ import annotations

from .files import Export, ExportError, collect, default_target, export_to, under_root, write
from .notebook import NotebookExporter, context_name, notebook_name
from .redact import Redactor, daemon_secrets

__all__ = [
    "Export",
    "ExportError",
    "NotebookExporter",
    "Redactor",
    "collect",
    "context_name",
    "daemon_secrets",
    "default_target",
    "export_to",
    "notebook_name",
    "under_root",
    "write",
]
