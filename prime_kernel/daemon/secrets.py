"""What the daemon must never record: every secret it knows, scrubbed from every value.

Live session tokens, the hosting server's token (`Daemon.host_secrets`), provider keys in the
environment (any variable litellm would read a credential from) and key-like values in the
configuration. The set is recomputed when tokens are minted or revoked; the matcher is cached
between changes, so scrubbing an event costs one regular-expression pass over its strings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..util.redact import Redactor, config_secrets, environment_secrets

if TYPE_CHECKING:
    from .daemon import Daemon


class Scrubber:
    def __init__(self, daemon: Daemon) -> None:
        self._daemon = daemon
        self._known: frozenset[str] = frozenset()
        self._redactor = Redactor([])

    def secrets(self) -> set[str]:
        daemon = self._daemon
        found = environment_secrets() | config_secrets(daemon.config)
        found |= config_secrets(daemon.model_kwargs)
        return found | set(daemon.host_secrets) | set(daemon.tokens.live_tokens())

    def redactor(self) -> Redactor:
        # Collecting the secrets is cheap (a pass over the environment and config); compiling
        # the matcher is not, so it is rebuilt only when the set changed.
        known = frozenset(self.secrets())
        if known != self._known:
            self._redactor = Redactor(known)
            self._known = known
        return self._redactor

    def value(self, value: Any) -> Any:
        return self.redactor().value(value)

    def text(self, text: str) -> str:
        return self.redactor().text(text)
