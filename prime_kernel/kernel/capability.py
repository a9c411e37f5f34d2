"""`%load_ext prime_kernel` in a kernel the server did not start with a capability.

Notebook kernels do not get a token by default (it can start agents, which spend money): a
person asks for one. The kernel opens a comm; the frontend (JupyterLab's Agents extension)
answers it by calling `POST /api/prime/capability` with the user's own server session, which
mints a token bound to this kernel's id, and sends the daemon's URL and the token back over
the comm. The comm message arrives once the cell that ran `%load_ext` has finished, so the
primitives work from the next cell on.
"""

from __future__ import annotations

from typing import Any

TARGET = "prime_kernel.capability"

_state = {"pending": False, "error": "", "standalone": False}

STANDALONE = (
    "this kernel was not started by a server with prime_kernel: open it in JupyterLab or use "
    "%load_ext prime_kernel there"
)


def started_without_daemon() -> None:
    """A "Prime Agent" kernel whose starter handed it no capability: nbclient, nbconvert, a
    Jupyter server without the prime_kernel extension. Only a frontend's answer (if one ever
    comes) can connect it now."""
    _state["standalone"] = True


def request() -> None:
    """Ask the frontend for a capability (answered after the current cell)."""
    from comm import create_comm

    comm = create_comm(target_name=TARGET, data={})
    _state.update(pending=True, error="")

    def answered(msg: dict[str, Any]) -> None:
        from . import boot, client

        data = msg["content"]["data"]
        if data.get("token") and data.get("url"):
            boot.set_nondumpable()  # it holds a capability now
            client.connect(str(data["url"]), str(data["token"]))
            _state.update(pending=False, error="")
        else:
            _state.update(pending=False, error=str(data.get("error") or "refused"))
        comm.close()

    def closed(msg: dict[str, Any]) -> None:
        # Closed without an answer: no frontend here knows the target.
        if _state["pending"]:
            _state.update(pending=False, error="the frontend does not answer capability requests")

    comm.on_msg(answered)
    comm.on_close(closed)


def status() -> str:
    """Why this kernel has no capability yet, for the NotConnected message ('' if unknown)."""
    if _state["error"]:
        return f"the request for a capability failed: {_state['error']}"
    if _state["standalone"]:
        return STANDALONE
    if _state["pending"]:
        return (
            "the capability `%load_ext prime_kernel` asked for has not arrived yet: it comes "
            "after the cell that ran %load_ext finishes, so call rlm() in the next cell"
        )
    return ""
