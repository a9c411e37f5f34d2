"""The kernel application of the "Prime Agent" kernelspec: ipykernel's, with no TCP port.

On the IPC transport ipykernel still binds one TCP port: the pipe through which forked
subprocesses (multiprocessing's fork) send their output to the IOPub thread, on
127.0.0.1:<random>. Here that pipe is an IPC socket beside the kernel's others, in its private
folder, so that a Prime kernel listens on no TCP port at all.
"""

from __future__ import annotations

import os
from typing import Any

import zmq
from ipykernel import kernelapp
from ipykernel.iostream import IOPubThread
from ipykernel.kernelapp import IPKernelApp
from zmq.eventloop.zmqstream import ZMQStream


class IpcIOPubThread(IOPubThread):
    address = ""  # ipc://<the kernel's private folder>/s-pipe, set before the thread is made

    def _setup_pipe_in(self) -> None:
        pipe_in = self.socket.context.socket(zmq.PULL)
        pipe_in.linger = 0
        # Forked children authenticate their messages with this, as in ipykernel.
        self._pipe_uuid = os.urandom(16)
        pipe_in.bind(self.address)
        self._pipe_in = ZMQStream(pipe_in, self.io_loop)
        self._pipe_in.on_recv(self._handle_pipe_msg)

    def _setup_pipe_out(self) -> tuple[Any, Any]:
        ctx = zmq.Context()  # a forked child needs its own context
        pipe_out = ctx.socket(zmq.PUSH)
        pipe_out.linger = 3000
        pipe_out.connect(self.address)
        return ctx, pipe_out


class PrimeKernelApp(IPKernelApp):
    def init_iopub(self, context: Any) -> None:
        if self.transport == "ipc":
            IpcIOPubThread.address = f"ipc://{self.ip}-pipe"
            kernelapp.IOPubThread = IpcIOPubThread  # type: ignore[misc]  # init_iopub uses it
        super().init_iopub(context)
