"""The kernel application of the "Prime Agent" kernelspec: ipykernel's, with no TCP port.

On the IPC transport ipykernel still binds one TCP port: the pipe through which forked
subprocesses (multiprocessing's fork) send their output to the IOPub thread, on
127.0.0.1:<random>. Here that pipe is an IPC socket beside the kernel's others, in its private
folder, so that a Prime kernel listens on no TCP port at all.

The same application also starts in two halves for kernels forked from a template
(prime_kernel/kernel/template.py): `prepare()` once in the template — configuration, profile and
the IPython shell, the costly part, none of which starts a thread — and `finish()` in each
forked kernel: its sockets, threads, history and extensions.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import Any

import zmq
from ipykernel import ipkernel, kernelapp
from ipykernel.iostream import IOPubThread
from ipykernel.ipkernel import IPythonKernel
from ipykernel.kernelapp import IPKernelApp
from ipykernel.zmqshell import ZMQInteractiveShell
from IPython.core.application import BaseIPythonApplication
from IPython.core.history import HistoryManager
from IPython.core.profiledir import ProfileDir
from IPython.paths import get_ipython_dir
from traitlets import Type
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


class PrimeShell(ZMQInteractiveShell):
    """The shell of a forked kernel, built in the template with no history (a database
    connection must not cross a fork); each kernel opens its own with `open_history()`.

    A forked agent kernel's history is in memory: its own (up-arrow in a console attached to
    it, %history), gone with it — in the sandbox its home was thrown away with it anyway — and
    the user's ~/.ipython history gets no agent cells. No file to sync, no saving thread."""

    template = False

    def init_history(self) -> None:
        if not PrimeShell.template:
            super().init_history()
            return
        self.history_manager = HistoryManager(shell=self, parent=self, enabled=False)
        self.configurables.append(self.history_manager)  # type: ignore[arg-type]  # as IPython

    def open_history(self) -> None:
        old = self.history_manager
        self.history_manager = HistoryManager(shell=self, parent=self, hist_file=":memory:")
        self.configurables.append(self.history_manager)  # type: ignore[arg-type]
        if old is not None:
            self.configurables.remove(old)
        # The namespace holds the history's own lists (In, Out, _ih, ...): the new ones.
        hm = self.history_manager
        assert hm is not None
        names = {
            "_ih": hm.input_hist_parsed,
            "_oh": hm.output_hist,
            "_dh": hm.dir_hist,
            "In": hm.input_hist_parsed,
            "Out": hm.output_hist,
        }
        self.user_ns.update(names)
        self.user_ns_hidden.update(names)

    def use_profile(self, profile_dir: ProfileDir) -> None:
        """Move to the profile of this kernel's home (a sandboxed kernel's is not the
        template's): where its history, startup files and stored values live."""
        self.ipython_dir = os.path.dirname(profile_dir.location)
        self.profile_dir = profile_dir
        self.db = type(self.db)(os.path.join(profile_dir.location, "db"))


class _ModulesSeen:
    """Stands for `sys` in ipykernel.ipkernel while a forked kernel's IPythonKernel is made.

    IPythonKernel.__init__ lists the file of every loaded module for its debugger, and so writes
    to (for a reference count) every module object: in a forked kernel, about 7 MB of the
    template's pages copied, a third of what the kernel has of its own. The template made that
    list once (`PrimeKernel.template_modules`, stand-ins packed together); this hands it over."""

    def __init__(self, modules: dict[str, Any]) -> None:
        self.modules = modules

    def __getattr__(self, name: str) -> Any:
        return getattr(sys, name)


class PrimeKernel(IPythonKernel):
    shell_class = Type(PrimeShell)
    # Set in the template: each loaded module, as a stand-in with only its __file__.
    template_modules: dict[str, Any] = {}

    def __init__(self, **kwargs: Any) -> None:
        if not PrimeKernel.template_modules:
            super().__init__(**kwargs)
            return
        ipkernel.sys = _ModulesSeen(PrimeKernel.template_modules)  # type: ignore[assignment]
        try:
            super().__init__(**kwargs)
        finally:
            ipkernel.sys = sys


class PrimeKernelApp(IPKernelApp):
    def init_iopub(self, context: Any) -> None:
        if self.transport == "ipc":
            IpcIOPubThread.address = f"ipc://{self.ip}-pipe"
            kernelapp.IOPubThread = IpcIOPubThread  # type: ignore[misc]  # init_iopub uses it
        super().init_iopub(context)

    # -- forked kernels -----------------------------------------------------------------------
    def prepare(self) -> None:
        """In the template: everything of `initialize()` that is the same for every kernel and
        starts no thread: configuration files, the profile, the shell (half of a kernel's
        start)."""
        self.kernel_class = PrimeKernel
        BaseIPythonApplication.initialize(self, [])
        self.init_pdb()
        self.init_blackhole()
        # Copies, made one after the other: a kernel reading them touches few pages.
        PrimeKernel.template_modules = {
            name: SimpleNamespace(__file__=(path + "/")[:-1])
            for name, module in list(sys.modules.items())
            if isinstance(path := getattr(module, "__file__", None), str) and path
        }
        PrimeShell.template = True
        try:
            PrimeShell.instance(
                parent=self,
                profile_dir=self.profile_dir,
                compiler_class=PrimeKernel.compiler_class.default_value,
            )
        finally:
            PrimeShell.template = False

    def finish(self, connection_file: str) -> None:
        """In a forked kernel: the rest of `IPKernelApp.initialize()`, in its order."""
        self.connection_file = connection_file
        # A forked kernel watches the server itself; ipykernel's parent poller and its
        # "Ctrl-C will not work" banner are off, as for a kernel started in the sandbox.
        self.parent_handle = 1
        shell = PrimeShell.instance()
        ipython_dir = get_ipython_dir()
        if os.path.realpath(ipython_dir) != os.path.realpath(shell.ipython_dir):
            os.makedirs(ipython_dir, mode=0o700, exist_ok=True)
            profile = ProfileDir.create_profile_dir_by_name(ipython_dir, "default")
            shell.use_profile(profile)
            self.profile_dir = profile
        self.init_connection_file()
        self.init_poller()
        self.init_sockets()
        self.init_heartbeat()
        self.write_connection_file()
        self.log_connection_info()
        self.init_io()
        self.init_signal()
        self.init_kernel()
        # The kernel found the shell already made (a singleton): give it its kernel.
        shell.kernel = self.kernel
        shell.open_history()
        self.init_path()
        self.init_shell()
        self.init_gui_pylab()
        self.init_extensions()
        self.init_code()
        sys.stdout.flush()
        sys.stderr.flush()
