"""`python -m prime_kernel.kernel`: an IPython kernel with the Prime primitives preloaded."""

from __future__ import annotations


def main() -> None:
    # Before IPython is imported: take the capability and apply the limits first.
    from . import capability
    from .boot import boot
    from .client import credentials

    boot()
    if not all(credentials()):  # its server has no daemon to call
        capability.started_without_daemon()

    from traitlets.config import Config

    from .app import PrimeKernelApp

    config = Config()
    config.InteractiveShellApp.extensions = ["prime_kernel"]
    PrimeKernelApp.launch_instance(config=config)


if __name__ == "__main__":
    main()
