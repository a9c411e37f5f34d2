"""The secrets a daemon knows, and the one place they are blanked out.

Provider keys in the environment, key-like values in the config (`c.Host.model_kwargs`, under
whichever name it was given), what the server adds (its token, a gateway's credentials) and
the capability tokens of live kernels. The store scrubs everything it writes with `redactor()`
(the one door: what it returns is what memory keeps); the harness's files and history, and
what learning keeps, go through `scrub`; an export redacts everything `known()`.
"""

from __future__ import annotations

import os
from typing import Any

from ..util.redact import Redactor, Scrubber, secrets_of
from .access import TokenRegistry


class Secrets:
    def __init__(self, config: Any, tokens: TokenRegistry) -> None:
        self.tokens = tokens
        self.scrubber = Scrubber(config=[config])

    def add(self, *values: str | None) -> None:
        """More fixed secrets (the server's token, a gateway's credentials)."""
        self.scrubber.add(*values)

    def redactor(self) -> Redactor:
        """What blanks out every secret known now (cached while they stay the same)."""
        return self.scrubber.redactor(self.tokens.live_tokens())

    def scrub(self, value: Any) -> Any:
        """`value` without any secret the daemon knows (tokens, keys, the server's token)."""
        return self.redactor().value(value)

    def known(self) -> set[str]:
        """Every secret the daemon knows now (an export redacts them all)."""
        return secrets_of(os.environ, None, None, self.tokens.live_tokens()) | self.scrubber.static
