"""Access: who is calling, and what they may reach.

`TokenRegistry` holds the per-kernel capability tokens, the only way a kernel proves who is
calling. A token is minted for a kernel when it is launched (by the provisioner) and maps to
that kernel's id; the daemon separately binds a kernel id to the session it serves. Tokens
live in memory only: a kernel outlives neither its daemon nor a restart without being
re-minted.

`Access` turns a token into the calling session (`caller`; a notebook's session is made on
its first call) and says which sessions a caller may observe or control (`own_tree`,
`descendant_of`): itself and its descendants. Every handler of the kernel routes asks it.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import threading
import time
from collections.abc import Awaitable, Callable

from ..protocol.errors import Forbidden, PrimeError, Unauthorized
from ..protocol.events import EventKind
from ..protocol.states import SessionKind, SessionState
from ..util.files import new_id
from . import usage as usage_mod
from .admission import Admission, cut
from .records import SessionRecord
from .session import LiveSession
from .shared import Shared


class TokenRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_token: dict[str, str] = {}
        self._by_kernel: dict[str, str] = {}
        self._session_of: dict[str, str] = {}
        self._notebooks: set[str] = set()

    def mint(self, kernel_id: str, *, notebook: bool = False) -> str:
        """A fresh token for `kernel_id`; an earlier token of the same kernel stops working.

        Only a `notebook` kernel (one a person started, or asked agents for) may stand for a
        notebook session; an agent kernel's token acts only for the session it is bound to.
        """
        token = secrets.token_urlsafe(32)
        with self._lock:
            if notebook:
                self._notebooks.add(kernel_id)
            else:
                self._notebooks.discard(kernel_id)
            old = self._by_kernel.pop(kernel_id, None)
            if old:
                self._by_token.pop(old, None)
            self._by_token[token] = kernel_id
            self._by_kernel[kernel_id] = token
        return token

    def rename(self, old: str, new: str) -> None:
        """The kernel minted for as `old` is known as `new` from now on (a gateway names its
        kernels only once it started them, with the token already in their environment)."""
        with self._lock:
            token = self._by_kernel.pop(old, None)
            if token is None:
                return
            self._by_kernel[new] = token
            self._by_token[token] = new
            if old in self._notebooks:
                self._notebooks.discard(old)
                self._notebooks.add(new)

    def kernel_for(self, token: str | None) -> str | None:
        if not token:
            return None
        with self._lock:
            # Compare in constant time against the stored token, not just a dict hit.
            kernel_id = self._by_token.get(token)
            if kernel_id is None:
                return None
            stored = self._by_kernel.get(kernel_id, "")
        return kernel_id if hmac.compare_digest(stored, token) else None

    def live_tokens(self) -> list[str]:
        """Every token that works now (an export redacts them all)."""
        with self._lock:
            return list(self._by_token)

    def bind(self, kernel_id: str, session_id: str) -> None:
        with self._lock:
            self._session_of[kernel_id] = session_id

    def holds(self, kernel_id: str) -> bool:
        """Whether `kernel_id` has a token (its provisioner minted one, or a grant did)."""
        with self._lock:
            return kernel_id in self._by_kernel

    def may_be_notebook(self, kernel_id: str) -> bool:
        with self._lock:
            return kernel_id in self._notebooks

    def session_for_kernel(self, kernel_id: str) -> str | None:
        with self._lock:
            return self._session_of.get(kernel_id)

    def revoke(self, kernel_id: str) -> None:
        with self._lock:
            token = self._by_kernel.pop(kernel_id, None)
            if token:
                self._by_token.pop(token, None)
            self._session_of.pop(kernel_id, None)
            self._notebooks.discard(kernel_id)


class Access:
    """Who calls, and what they may reach: the session a kernel's token stands for (a
    notebook's made on its first call), and the sessions a caller may observe or control
    (itself and its descendants)."""

    def __init__(
        self,
        shared: Shared,
        *,
        tokens: TokenRegistry,
        admission: Admission,
    ) -> None:
        self.tokens = tokens
        self.registry = shared.registry
        self.events = shared.events
        self.admission = admission
        # A notebook's path from its kernel id (set by the server adapter; None: no server).
        self.kernel_path: Callable[[str], Awaitable[str | None]] | None = None
        self._notebook_locks: dict[str, asyncio.Lock] = {}

    async def caller(self, token: str | None) -> LiveSession:
        """The session a kernel's token stands for (Unauthorized for a bad or ended one)."""
        kernel_id = self.tokens.kernel_for(token)
        if kernel_id is None:
            raise Unauthorized(
                "missing session token" if not token else "unknown or revoked session token"
            )
        session_id = self.tokens.session_for_kernel(kernel_id)
        if session_id is None:
            if not self.tokens.may_be_notebook(kernel_id):
                # A pool kernel's token (stolen, or used before its session starts).
                raise Forbidden("this kernel does not serve a session (yet)")
            live = await self.notebook_session(kernel_id)
        else:
            found = self.registry.live.get(session_id)
            if found is None:
                raise Unauthorized("this kernel's session is no longer running")
            live = found
        if live.state.terminal and live.record.is_agent:
            # A kernel kept alive after its session ended may still be used by a person,
            # but it cannot act as the session any more.
            raise Unauthorized(f"session {live.id} has ended ({live.state.value})")
        return live

    async def notebook_session(self, kernel_id: str) -> LiveSession:
        """The session standing for a user's kernel (a notebook), created on its first call."""
        # Two first calls at once (threads in one kernel) must not create two sessions.
        async with self._notebook_locks.setdefault(kernel_id, asyncio.Lock()):
            existing = self.tokens.session_for_kernel(kernel_id)
            if existing and existing in self.registry.live:
                return self.registry.live[existing]
            path = await self.kernel_path(kernel_id) if self.kernel_path else None
            session_id = new_id("n")
            now = time.time()
            chars = self.admission.max_name_chars
            record = SessionRecord(
                id=session_id,
                name=cut(path, chars) if path else f"kernel {kernel_id[:8]}",
                prompt=f"notebook {path}" if path else f"kernel {kernel_id}",
                state=SessionState.IDLE,
                kind=SessionKind.NOTEBOOK,
                root_id=session_id,
                created=now,
                started=now,
                notebook_path=path,
                kernel_id=kernel_id,
                usage=usage_mod.empty(),
            )
            live = self.registry.attach(self.admission.record(record))
            self.tokens.bind(kernel_id, session_id)
            self.events.emit(record, EventKind.STATE, {"state": SessionState.IDLE.value})
            return live

    def can_reach(self, caller: LiveSession, target_id: str) -> bool:
        """Whether `caller` may observe or control `target_id`: its own descendants."""
        return self.registry.is_below(target_id, caller.id)

    def own_tree(self, caller: LiveSession, session_id: object) -> str:
        """`session_id` (default: the caller) if it is the caller or one of its descendants."""
        session_id = session_id or caller.id
        if not isinstance(session_id, str):
            raise PrimeError("'session_id' must be a string")
        if session_id != caller.id and not self.can_reach(caller, session_id):
            self.registry.get(session_id)  # a clear 404 for ids that do not exist
            raise Forbidden(f"session {session_id} is not {caller.id} or one of its descendants")
        return session_id

    def descendant_of(self, caller: LiveSession, session_id: str) -> None:
        """Refuse (404 for unknown ids, else 403) unless `session_id` is below the caller."""
        if not self.can_reach(caller, session_id):
            self.registry.get(session_id)
            raise Forbidden(f"session {session_id} is not a descendant of session {caller.id}")
