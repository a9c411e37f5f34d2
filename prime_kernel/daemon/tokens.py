"""Per-kernel capability tokens: the only way a kernel proves who is calling.

A token is minted for a kernel when it is launched (by the provisioner) and maps to that
kernel's id; the daemon separately binds a kernel id to the session it serves. Tokens live in
memory only: a kernel outlives neither its daemon nor a restart without being re-minted.
"""

from __future__ import annotations

import hmac
import secrets
import threading


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
