"""Errors of the primitives shown as a person (or a model) reads a cell's error: the frames of
the code that called `rlm()`, `send()`, `h.result()`..., and the daemon's message — not the
frames of this package's client that made the call.

IPython asks an exception for its own traceback through `_render_traceback_`; this gives the
protocol's errors (`PrimeError` and its subclasses) one that leaves out every frame of the
prime_kernel package. The exception itself is unchanged (`%tb`, `%debug` and `sys.last_traceback`
still have every frame).
"""

from __future__ import annotations

import os
from types import TracebackType

from ..protocol.errors import PrimeError

# prime_kernel/, with a separator: a user's file beside it (prime_kernel_notes.py) is not in it.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def without_package_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback `tb` without the frames of prime_kernel's own code (None if it had only
    those)."""
    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for frame in reversed(kept):
        out = TracebackType(out, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return out


def _render_traceback_(self: BaseException) -> list[str]:
    from IPython import get_ipython

    shell = get_ipython()
    tb = without_package_frames(self.__traceback__) or self.__traceback__
    if shell is None:  # IPython asked, so there is a shell; a plain fallback all the same
        import traceback

        return traceback.format_exception(type(self), self, tb)
    return list(shell.InteractiveTB.structured_traceback(type(self), self, tb))


def install() -> None:
    """Show every PrimeError a cell raises this way."""
    PrimeError._render_traceback_ = _render_traceback_  # type: ignore[attr-defined]
