"""The Continual Harness (L3): notes, memories, skills and sub-agents as versioned files."""

from __future__ import annotations

from .manager import Harness

__all__ = ["Harness"]
