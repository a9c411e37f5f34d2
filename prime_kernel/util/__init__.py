"""Helpers every layer uses; stdlib only, importing nothing else of ours."""
