"""Model providers served in this process, found through the entry-point group
`prime_kernel.model_providers`.

A provider serves the models named `<prefix>/...`, where the prefix is its entry point's name;
the entry point names a `ModelProvider`. The built-in `scripted` (deterministic test models)
and `local` (the embedded models) are declared in our own pyproject.toml exactly as another
package declares its own:

    [project.entry-points."prime_kernel.model_providers"]
    mine = "my_package.models:model_provider"

A provider that fails to load (an import error, the wrong type) is logged and skipped: one
broken package never keeps the server from starting. Every other prefix goes to litellm's own
providers (`openai/`, `anthropic/`, ...).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .profiles import Profile

GROUP = "prime_kernel.model_providers"

log = logging.getLogger(__name__)


def _never(model: str) -> bool:
    return False


@dataclass(frozen=True)
class ModelProvider:
    """What the model router asks of a provider of `<prefix>/...` models."""

    # Called once with the litellm module when it is imported: registers the provider's
    # `litellm.CustomLLM` handler under its prefix (`litellm.custom_provider_map`) and the
    # prices of its models (`litellm.register_model`).
    register: Callable[[Any], None]
    # Raises, with a message that says the fix, unless the model can be used here. Cheap: it
    # runs before any kernel starts, and litellm need not be imported yet.
    check: Callable[[str], None]
    # The models usable here now (full names, `<prefix>/...`), for pickers.
    models: Callable[[], list[str]]
    # Whether `response_format={"type": "json_schema", ...}` constrains its decoding.
    response_schema: bool = False
    # Whether a model caches only what `cache_control` breakpoints mark (as Claude does).
    breakpoints: Callable[[str], bool] = _never
    # How the agent loop prompts its models (profiles.py), unless one is named there by its
    # full name; None: as a hosted frontier model (`profiles.DEFAULT`). A small embedded
    # model wants `profiles.SMALL`: short prompts, fenced code, brief errors.
    profile: Profile | None = None


def load(entry_points: Iterable[metadata.EntryPoint]) -> dict[str, ModelProvider]:
    """The providers of `entry_points` by prefix, in their order; a broken one is logged and
    left out, and a second one claiming a prefix already taken is ignored (with a warning)."""
    found: dict[str, ModelProvider] = {}
    values: dict[str, str] = {}
    for ep in entry_points:
        if ep.name in found:
            if ep.value != values[ep.name]:
                log.warning(
                    "model provider %r = %r ignored: the prefix is already served by %r",
                    ep.name,
                    ep.value,
                    values[ep.name],
                )
            continue
        try:
            provider = ep.load()
        except Exception as e:
            log.error("model provider %r = %r skipped: it failed to load: %r", ep.name, ep.value, e)
            continue
        if not isinstance(provider, ModelProvider):
            log.error(
                "model provider %r = %r skipped: it names a %s, not a "
                "prime_kernel.models.providers.ModelProvider",
                ep.name,
                ep.value,
                type(provider).__name__,
            )
            continue
        found[ep.name] = provider
        values[ep.name] = ep.value
    return found


@functools.cache
def installed() -> dict[str, ModelProvider]:
    """The providers the installed distributions declare, loaded once per process (read-only)."""
    return load(metadata.entry_points(group=GROUP))
