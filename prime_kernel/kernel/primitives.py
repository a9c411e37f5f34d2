"""The primitives an agent (or a notebook) sees: rlm, Handle, llm, answer and friends.

Each one is a thin call to the daemon. Nothing here enforces a limit — the daemon does, from
the caller's token — so code that rewrites these functions gains nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import os
import pickle
import time
import warnings
from collections.abc import (
    Generator,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Sequence,
    ValuesView,
)
from typing import Any

from ..protocol.errors import (
    BudgetExceeded,
    Cancelled,
    ChildBudgetExceeded,
    ChildFailed,
    InvalidRequest,
)
from ..protocol.requests import FIELDS, RENAMED, SessionRequest
from ..protocol.states import TERMINAL as ENDED
from ..protocol.states import SessionState
from . import safe_pickle
from .client import DaemonClient
from .harness import EXPORTS as HARNESS_EXPORTS

__all__ = [
    "FINAL",
    "FINAL_VAR",
    "Cancelled",
    "ChildFailed",
    "Handle",
    "answer",
    "export",
    "llm",
    "llm_query",
    "llm_query_batched",
    "rlm",
]

TERMINAL = frozenset(s.value for s in ENDED)
# One long-poll is kept under typical proxy timeouts; result() loops over them.
POLL_SECONDS = 30.0

_client: DaemonClient | None = None


def client() -> DaemonClient:
    global _client
    if _client is None:
        _client = DaemonClient()
    return _client


def _check_timeout(timeout: float | None) -> None:
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
        raise InvalidRequest(
            f"timeout must be a positive number of seconds or None, not {timeout!r}"
        )


def _pickle(value: Any, what: str) -> bytes:
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        raise TypeError(
            f"{what} of type {type(value).__module__}.{type(value).__qualname__} cannot be "
            f"pickled, so it cannot be passed to another session: {e}"
        ) from None


class Handle:
    """A running (or finished) child session. Returned by `rlm()` as soon as it is admitted."""

    def __init__(self, record: dict[str, Any]) -> None:
        self._record = record

    def __repr__(self) -> str:
        return f"<Handle {self.session_id} {self._record.get('name')!r} {self.status}>"

    @property
    def session_id(self) -> str:
        return str(self._record["id"])

    @property
    def name(self) -> str:
        return str(self._record.get("name") or "")

    def refresh(self) -> dict[str, Any]:
        self._record = client().request("GET", f"sessions/{self.session_id}")
        return self._record

    @property
    def status(self) -> str:
        if self._record.get("state") in TERMINAL:
            return str(self._record["state"])
        return str(self.refresh()["state"])

    @property
    def usage(self) -> dict[str, Any]:
        return dict(self.refresh()["usage"])

    def replay_report(self) -> dict[str, Any]:
        """For `rlm(replay=ID)`, once it ended: turns replayed, sessions, divergent cells, and
        each session's first divergent cell (with a diff of its output)."""
        return dict(client().request("GET", f"sessions/{self.session_id}/replay"))

    def done(self) -> bool:
        return self.status in TERMINAL

    def send(self, message: str) -> dict[str, Any]:
        """Send `message` to this session (a receipt: delivered or queued)."""
        from .messaging import send

        receipt = send(self, message)
        self.refresh()  # a woken session's earlier answer no longer settles a wait
        return receipt  # type: ignore[return-value]

    def cancel(self) -> dict[str, Any]:
        """Cancel this session and everything it started."""
        out = client().request("DELETE", f"sessions/{self.session_id}")
        self.refresh()
        return dict(out)

    def verify(self, correct: bool = True, *, note: str = "") -> dict[str, Any]:
        """Mark this session's answer right (or `correct=False`: wrong), from a notebook.

        The harness learns from it: a right answer becomes a worked example for similar later
        tasks, a wrong one a caution (both under the review policy). Only a person verifies: an
        agent's kernel is refused.
        """
        body: dict[str, Any] = {"correct": bool(correct)}
        if note:
            body["note"] = note
        out = client().request("POST", f"sessions/{self.session_id}/verify", body)
        self.refresh()
        return dict(out)

    def _settled(self, record: dict[str, Any]) -> bool:
        return record.get("state") in TERMINAL or (
            record.get("state") == SessionState.IDLE.value and bool(record.get("has_answer"))
        )

    def wait(self, timeout: float | None = None) -> dict[str, Any]:
        """Block until the session ends (or answers, if persistent); returns its record."""
        _check_timeout(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        record = self._record
        while not self._settled(record):
            remaining = (
                POLL_SECONDS if deadline is None else min(POLL_SECONDS, deadline - time.monotonic())
            )
            if remaining <= 0:
                raise TimeoutError(f"session {self.session_id} has not ended after {timeout} s")
            record = client().request(
                "GET",
                f"sessions/{self.session_id}/wait",
                query={"timeout": f"{remaining:.3f}"},
                timeout=remaining + 30,
            )
            self._record = record
        return record

    def result(self, timeout: float | None = None, *, trusted: bool = False) -> Any:
        """The child's answer as a Python object; raises if it failed or was cancelled.

        The answer is unpickled with an allow-list of plain data types (see
        `prime_kernel.kernel.safe_pickle`): a child's pickle cannot run code here. For a
        child you trust to return other types, `trusted=True` unpickles anything.
        """
        record = self.wait(timeout)
        state = record["state"]
        if state == SessionState.CANCELLED.value:
            raise Cancelled(f"session {self.session_id} was cancelled")
        if state == SessionState.FAILED.value:
            partial = self._answer(trusted) if record.get("has_answer") else None
            over = bool((record.get("budget") or {}).get("exceeded"))
            raise (ChildBudgetExceeded if over else ChildFailed)(
                f"session {self.session_id} failed: {record.get('error')}",
                error=record.get("error"),
                partial=partial,
            )
        return self._answer(trusted)

    def _answer(self, trusted: bool) -> Any:
        data = client().request("GET", f"sessions/{self.session_id}/answer", binary=True)
        return safe_pickle.loads(
            data,
            trusted=trusted,
            what=f"the answer of session {self.session_id}",
            hint=f"If you trust session {self.session_id}, call .result(trusted=True)",
        )

    def __await__(self) -> Generator[Any, None, Any]:
        return asyncio.to_thread(self.result).__await__()

    def export(
        self,
        path: str | os.PathLike[str] | None = None,
        subtree: bool = False,
        *,
        force: bool = False,
        with_context: bool = False,
    ) -> str:
        """Write this session's trajectory as a notebook; see `export()`."""
        return export(
            path, subtree, force=force, with_context=with_context, session_id=self.session_id
        )


def _rlm_request(
    prompt: str | None,
    context: Any,
    has_context: bool,
    **options: Any,
) -> dict[str, Any]:
    given = {k: v for k, v in options.items() if v is not None}
    for old, new in RENAMED.items():
        if old in given:
            warnings.warn(
                f"rlm({old}=...) is deprecated: use rlm({new}=...) "
                "(the old name goes in the next release)",
                FutureWarning,
                stacklevel=3,
            )
            if new in given:
                raise InvalidRequest(f"rlm() got {new}= and its old name {old}=; give {new}= only")
            given[new] = given.pop(old)
    unknown = sorted(set(given) - set(REQUEST_OPTIONS))
    if unknown:
        raise InvalidRequest(
            f"rlm() has no option {unknown[0]!r}; its options: {', '.join(REQUEST_OPTIONS)}"
        )
    # A replay's prompt defaults to the recorded one; any other request needs one.
    if (prompt is not None or "replay" not in given) and (
        not isinstance(prompt, str) or not prompt.strip()
    ):
        raise InvalidRequest("rlm() needs a non-empty prompt string")
    request = SessionRequest(prompt=prompt, **given)
    if has_context:
        data = _pickle(context, "the context")
        blob = client().request("POST", "blobs", raw=data, query={"what": "context"})
        kind = f"{type(context).__module__}.{type(context).__qualname__}"
        request = dataclasses.replace(
            request, context_blob=blob["blob_id"], context_type=kind.removeprefix("builtins.")
        )
    return request.to_json()


# What a caller of rlm() may give besides the prompt and context (the context travels as an
# uploaded blob, never inline).
REQUEST_OPTIONS = tuple(
    f for f in FIELDS if f not in ("prompt", "context", "context_blob", "context_type")
)


_MISSING = object()


class _RLM:
    """`rlm(prompt, context=..., model=..., name=..., subagent=..., budget=..., autonomous=...)`
    -> Handle. `autonomous=True` (or {"gate": "pytest -q", "max_continuations": 3, "turns": 12,
    "tokens": 80_000, "seconds": 1800}) keeps the child going until its gate passes.
    `rlm(replay=ID)` replays the ended session ID (its recorded model replies, its code run
    again; `until=N`: the live model takes over after N turns; `subtree=True`: its children
    replay too, each in its own kernel); its handle's `replay_report()` says where its cells
    diverged from the recording. `subagent="reviewer"` starts the child as the harness's
    sub-agent `reviewer` (`spec=` is its deprecated old name)."""

    def __call__(
        self,
        prompt: str | None = None,
        *,
        context: Any = _MISSING,
        model: str | None = None,
        name: str | None = None,
        subagent: str | None = None,
        budget: dict[str, Any] | None = None,
        max_turns: int | None = None,
        persistent: bool | None = None,
        autonomous: bool | dict[str, Any] | None = None,
        replay: str | None = None,
        until: int | None = None,
        subtree: bool | None = None,
        spec: str | None = None,
    ) -> Handle:
        body = _rlm_request(
            prompt,
            context,
            context is not _MISSING,
            model=model,
            name=name,
            subagent=subagent,
            spec=spec,
            budget=budget,
            max_turns=max_turns,
            persistent=persistent,
            autonomous=autonomous,
            replay=replay,
            until=until,
            subtree=subtree,
        )
        return Handle(client().request("POST", "sessions", body))

    def map(
        self,
        prompts: str | Sequence[str],
        contexts: Iterable[Any] | None = None,
        **options: Any,
    ) -> list[Handle]:
        """Start one child per prompt (a single prompt is repeated for each context)."""
        ctx = list(contexts) if contexts is not None else None
        if isinstance(prompts, str):
            if ctx is None:
                raise InvalidRequest(
                    "rlm.map() with one prompt needs contexts=[...] to fan out over"
                )
            prompt_list = [prompts] * len(ctx)
        else:
            prompt_list = list(prompts)
        if ctx is not None and len(ctx) != len(prompt_list):
            raise InvalidRequest(
                f"rlm.map() got {len(prompt_list)} prompts but {len(ctx)} contexts"
            )
        bodies = [
            _rlm_request(
                p,
                ctx[i] if ctx is not None else None,
                ctx is not None,
                **options,
            )
            for i, p in enumerate(prompt_list)
        ]
        records = client().request("POST", "sessions/batch", {"sessions": bodies})
        return [Handle(r) for r in records["sessions"]]

    def gather(
        self,
        *handles: Handle | Iterable[Handle],
        timeout: float | None = None,
        trusted: bool = False,
    ) -> list[Any]:
        """Wait for every handle; results in order (raises the first failure). `trusted` as
        for `Handle.result`."""
        flat: list[Handle] = []
        for h in handles:
            flat.extend([h] if isinstance(h, Handle) else list(h))
        _check_timeout(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        results = []
        for h in flat:
            left = None if deadline is None else max(deadline - time.monotonic(), 1e-3)
            results.append(h.result(left, trusted=trusted))
        return results


class _LLM:
    """`llm(prompt, model=None)` -> str: a plain model call, no kernel."""

    def __call__(self, prompt: str, model: str | None = None) -> str:
        if not isinstance(prompt, str):
            raise TypeError(f"llm() takes a string prompt, not {type(prompt).__name__}")
        return str(self.batch([prompt], model=model)[0])

    def batch(self, prompts: Sequence[str], model: str | None = None) -> list[str]:
        prompts = list(prompts)
        if not all(isinstance(p, str) for p in prompts):
            raise TypeError("llm.batch() takes a list of string prompts")
        if not prompts:
            return []
        out = client().request("POST", "llm", {"prompts": prompts, "model": model}, timeout=3600)
        return list(out["texts"])


rlm = _RLM()
llm = _LLM()


def llm_query(prompt: str, model: str | None = None) -> str:
    """Recursive Language Models paper alias of `llm`."""
    return llm(prompt, model=model)


def llm_query_batched(prompts: Sequence[str], model: str | None = None) -> list[str]:
    """Recursive Language Models paper alias of `llm.batch`."""
    return llm.batch(prompts, model=model)


# Most items an iterator given to answer() is read for (more: a list must be passed).
MAX_ITERATOR_ITEMS = 1_000_000


def _materialised(value: Any) -> Any:
    """A one-shot iterator (a generator, map(), reversed(), iter(range())) or a dict view as the
    list of what it yields: the value it stands for, where the iterator itself would arrive
    as `<range_iterator object at 0x…>` (or not pickle at all)."""
    if isinstance(value, (KeysView, ValuesView, ItemsView)):
        return list(value)
    if not isinstance(value, Iterator):
        return value
    items = list(itertools.islice(value, MAX_ITERATOR_ITEMS + 1))
    if len(items) > MAX_ITERATOR_ITEMS:
        raise InvalidRequest(
            f"answer() got an iterator of more than {MAX_ITERATOR_ITEMS} items; pass a list "
            "(or a summary) instead"
        )
    return items


def answer(value: Any) -> None:
    """Finish this session with `value`, returned to whoever started it as a Python object
    (an iterator as the list of its items)."""
    value = _materialised(value)
    data = _pickle(value, "the answer")
    text = repr(value)
    if len(text) > 2000:
        text = text[:2000] + "…"
    # One request: the value as raw bytes, which the daemon stores without decoding them,
    # and its repr in the query (as UTF-8: a lone surrogate could not travel).
    text = text.encode("utf-8", "replace").decode("utf-8")
    client().request("POST", "answer", raw=data, query={"repr": text})


def FINAL(value: Any) -> None:
    """Recursive Language Models paper alias of `answer`."""
    answer(value)


def FINAL_VAR(name: str) -> None:
    """Answer with the REPL variable called `name` (Recursive Language Models paper)."""
    ns = user_namespace()
    if name not in ns:
        raise NameError(f"FINAL_VAR: there is no variable named {name!r} in the REPL")
    answer(ns[name])


def export(
    path: str | os.PathLike[str] | None = None,
    subtree: bool = False,
    *,
    force: bool = False,
    with_context: bool = False,
    session_id: str | None = None,
) -> str:
    """Write this session's trajectory as a notebook and return the path written.

    `path` defaults to `<session-id>.ipynb` in the working folder; with `subtree` it names a
    folder holding one linked notebook per session below this one. An existing path is
    refused unless `force`; `with_context` writes the session's `context` beside it. The
    daemon writes the files, only under its root, and only for this session or its
    descendants (`session_id`, as `Handle.export` does).
    """
    body = {
        "session_id": session_id,
        "path": None if path is None else os.fspath(path),
        "cwd": os.getcwd(),
        "subtree": bool(subtree),
        "force": bool(force),
        "with_context": bool(with_context),
    }
    return str(client().request("POST", "export", body, timeout=600)["path"])


def compact() -> str:
    """Summarise this session's earlier turns before its next model call, to free context.

    Only the conversation shrinks: every variable in this REPL stays as it is.
    """
    client().request("POST", "compact", {})
    return "The earlier turns will be summarised before your next turn; your REPL is unchanged."


def load_context(trusted: bool = False) -> Any:
    """This session's `context`, fetched from the daemon (large values travel by file) and
    unpickled with the allow-list of plain data types unless `trusted`."""
    return safe_pickle.loads(
        client().request("GET", "context", binary=True),
        trusted=trusted,
        what="this session's context",
        hint="If you trust the session that started this one, call "
        "prime_kernel.kernel.primitives.load_context(trusted=True)",
    )


def user_namespace() -> dict[str, Any]:
    try:
        from IPython import get_ipython

        ip = get_ipython()
    except ImportError:
        ip = None
    if ip is None:
        import __main__

        return vars(__main__)
    return dict(ip.user_ns)


_EXPORTS = {
    "rlm": rlm,
    "llm": llm,
    "llm_query": llm_query,
    "llm_query_batched": llm_query_batched,
    "answer": answer,
    "FINAL": FINAL,
    "FINAL_VAR": FINAL_VAR,
    "Handle": Handle,
    "Cancelled": Cancelled,
    "ChildFailed": ChildFailed,
    "BudgetExceeded": BudgetExceeded,
    "export": export,
    "compact": compact,
    **HARNESS_EXPORTS,
}


def _all_exports() -> dict[str, Any]:
    # These build on this module.
    from .control import EXPORTS as CONTROL
    from .memory import EXPORTS as MEMORY
    from .messaging import EXPORTS

    return {**_EXPORTS, **EXPORTS, **CONTROL, **MEMORY}


def install(ipython: Any) -> None:
    ipython.push(_all_exports(), interactive=False)


def uninstall(ipython: Any) -> None:
    for name, value in _all_exports().items():
        if ipython.user_ns.get(name) is value:
            del ipython.user_ns[name]
