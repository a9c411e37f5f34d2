"""The protocol between the parts: session states and kinds, trajectory event kinds, error codes,
harness kinds, wire names and REST schemas — defined once, here.

Stdlib only and importing nothing else of ours, so that the kernel side, the daemon, the server,
the CLI and the generator of the lab extension's TypeScript types (`python -m
prime_kernel.protocol.generate`) all read the same definitions.
"""

from __future__ import annotations

from .errors import ERRORS, PrimeError
from .events import EVENTS, EventKind
from .harness import KINDS as HARNESS_KINDS
from .harness import HarnessKind
from .states import TERMINAL, SessionKind, SessionState, check_transition

__all__ = [
    "ERRORS",
    "EVENTS",
    "HARNESS_KINDS",
    "TERMINAL",
    "EventKind",
    "HarnessKind",
    "PrimeError",
    "SessionKind",
    "SessionState",
    "check_transition",
]
