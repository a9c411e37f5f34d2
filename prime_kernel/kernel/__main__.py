"""`python -m prime_kernel.kernel`: an IPython kernel with the Prime primitives preloaded."""

from __future__ import annotations

from ipykernel.kernelapp import IPKernelApp
from traitlets.config import Config


def main() -> None:
    config = Config()
    config.InteractiveShellApp.extensions = ["prime_kernel"]
    IPKernelApp.launch_instance(config=config)


if __name__ == "__main__":
    main()
