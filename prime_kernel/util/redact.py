"""Find the secrets a record must not carry, and blank them out.

Secrets come from where a process keeps them: the daemon's live kernel tokens, the server's
token, provider keys in the environment and key-like values in configuration. Every string of a
value (a cell's code and outputs, an event, a notebook) is scanned for each of them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"

# Shorter values would blank out ordinary words and numbers all over a notebook.
MIN_SECRET_LENGTH = 8

_ENV_SUFFIXES = ("_API_KEY", "_APIKEY", "_TOKEN", "_SECRET", "_SECRET_KEY", "_ACCESS_KEY")

# Provider credentials litellm reads whose names the suffixes above do not catch.
LITELLM_ENV_KEYS = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AZURE_CLIENT_SECRET",
        "CLARIFAI_PAT",
        "DATABRICKS_TOKEN",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "OR_SITE_URL_TOKEN",
        "VERTEXAI_CREDENTIALS",
        "WATSONX_APIKEY",
        "WATSONX_PASSWORD",
        "WATSONX_TOKEN",
    }
)

_CONFIG_KEY = re.compile(r"(api_?key|token|secret|password|access_key|credentials?)$", re.I)


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return upper in LITELLM_ENV_KEYS or upper.endswith(_ENV_SUFFIXES)


def environment_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """Values of environment variables named like credentials."""
    env = os.environ if environ is None else environ
    return {value for name, value in env.items() if is_secret_name(name)}


def config_secrets(config: Any) -> set[str]:
    """String values under key-like names anywhere in a (nested) config mapping."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if isinstance(value, str) and _CONFIG_KEY.search(str(key)):
                    found.add(value)
                else:
                    walk(value)
        elif isinstance(node, (list, tuple)):
            for item in node:
                walk(item)

    walk(config)
    return found


class Redactor:
    """Replaces every occurrence of the given secrets with `[REDACTED]`."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        values = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}
        # Longest first, so a secret that contains another is removed whole.
        ordered = sorted(values, key=len, reverse=True)
        self.count = len(ordered)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def text(self, value: str) -> str:
        if self._pattern is None:
            return value
        return self._pattern.sub(REDACTED, value)

    def value(self, node: Any) -> Any:
        """A copy of a JSON-like value with every string (keys included) redacted."""
        if isinstance(node, str):
            return self.text(node)
        if isinstance(node, dict):  # a NotebookNode stays one
            return type(node)((self.text(str(k)), self.value(v)) for k, v in node.items())
        if isinstance(node, list):
            return [self.value(v) for v in node]
        return node
