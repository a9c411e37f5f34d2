"""Prime Agent as Jupyter infrastructure: a self-improving RLM harness on Jupyter kernels."""

from __future__ import annotations

from typing import Any

try:
    from ._version import __version__
except ImportError:  # running from a source tree that was never built
    __version__ = "0.0.0+unknown"


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from .server.app import PrimeApp

    return [{"module": "prime_kernel", "app": PrimeApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "prime-kernel"}]


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext prime_kernel`: put the rlm primitives in the user namespace, and in a
    kernel that holds no capability yet, ask the frontend for one."""
    from .kernel.client import credentials
    from .kernel.primitives import install

    install(ipython)
    url, token = credentials()
    if not (url and token) and getattr(ipython, "kernel", None) is not None:
        from .kernel import capability

        capability.request()


def unload_ipython_extension(ipython: Any) -> None:
    from .kernel.primitives import uninstall

    uninstall(ipython)
