"""The daemon: owner of every session, its kernel, its loop and its durable record.

Plain asyncio + jupyter_client: the server adapter (`prime_kernel.server`) and the CLI drive
this class; it never imports tornado. Everything a kernel asks for arrives here with the calling
session already resolved from its token, so identity, depth and limits are decided here and
nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from traitlets import Bool, Float, Instance, Int, Type, Unicode, default
from traitlets.config import LoggingConfigurable

from ..harness.harness import Harness
from . import budget as budget_mod
from . import usage as usage_mod
from .errors import DepthExceeded, Forbidden, NotFound, PrimeError, TooLarge
from .kernels import CellResult, KernelPool, KernelRunner
from .loop import AgentLoop, TurnLimitReached
from .mailbox import Mailbox
from .models import Completion, ModelGateway
from .observation import render
from .passivation import Passivation
from .scheduler import Scheduler
from .states import SessionState, check_transition
from .store import Store, new_id
from .tokens import TokenRegistry

DEFAULT_MODEL = "local/smollm2"

Listener = Callable[[dict[str, Any]], None]

_current: Daemon | None = None


def current_daemon() -> Daemon | None:
    """The daemon running in this process, if any (the provisioner asks for it)."""
    return _current


@dataclass
class LiveSession:
    """What the daemon holds in memory for a session it is running."""

    record: dict[str, Any]
    runner: KernelRunner | None = None
    task: asyncio.Task[None] | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    news: list[str] = field(default_factory=list)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    answered: bool = False
    turns: int = 0
    cancelling: bool = False
    compact_requested: bool = False  # compact() was called: compact before the next model call

    @property
    def id(self) -> str:
        return str(self.record["id"])

    @property
    def state(self) -> SessionState:
        return SessionState(self.record["state"])


class Daemon(LoggingConfigurable):
    """Runs agent sessions. Configure as `c.Daemon.<trait>` (or through PrimeApp)."""

    root_dir = Unicode(".", config=True, help="The working folder; the store lives below it.")
    store_dir = Unicode(
        "", config=True, help="Where the SQLite store and blobs live (default: <root>/.prime)."
    )
    default_model = Unicode(
        DEFAULT_MODEL,
        config=True,
        help="Model used when neither the call nor PRIME_MODEL names one (a litellm name).",
    )
    kernel_name = Unicode(
        "prime-agent", config=True, help="Kernelspec that agent sessions are started from."
    )
    max_depth = Int(3, config=True, help="Deepest rlm() nesting allowed (a root is depth 0).")
    max_concurrent = Int(4, config=True, help="Sessions taking turns at once; the rest queue.")
    pool_size = Int(2, config=True, help="Warm kernels kept ready for new sessions (0 = none).")
    max_turns = Int(20, config=True, help="Default limit of model turns per session.")
    cell_timeout = Float(
        600.0, config=True, help="Seconds a cell may run before it is interrupted."
    )
    observation_chars = Int(
        8000, config=True, help="Characters of cell output shown to the model per cell."
    )
    max_cell_output_bytes = Int(
        10_000_000, config=True, help="Bytes of output stored per cell; the rest is counted."
    )
    kernel_start_timeout = Float(
        120.0, config=True, help="Seconds a new kernel may take to answer before it is retried."
    )
    keep_root_kernel = Float(
        3600.0,
        config=True,
        help="Seconds a root session's kernel stays up after it ends (for co-working).",
    )
    model_kwargs = Instance(
        dict, kw={}, config=True, help="Extra keyword arguments for every litellm completion."
    )
    prune_children_kernels = Bool(
        True, config=True, help="Shut a child's kernel down as soon as the child ends."
    )
    default_budget = Instance(
        dict,
        kw={},
        config=True,
        help="Budget of a root session started without one: any of tokens, dollars, "
        "seconds, turns (see prime_kernel.daemon.budget). Empty: no limit.",
    )
    max_llm_batch = Int(1000, config=True, help="Most prompts one llm.batch() call may send.")
    llm_batch_concurrency = Int(
        8, config=True, help="Model calls of one llm.batch() in flight at once."
    )
    max_prompt_chars = Int(
        200_000,
        config=True,
        help="Longest prompt a session may be created with; large inputs go in context=.",
    )
    max_blob_bytes = Int(
        256 * 1024 * 1024,
        config=True,
        help="Largest pickled context or answer a kernel may hand to the daemon, in bytes.",
    )
    message_max_bytes = Int(
        64_000, config=True, help="Largest message (UTF-8 bytes) a send() may carry."
    )
    max_pending_messages = Int(
        100, config=True, help="Unread messages a session's mailbox holds before sends fail."
    )
    message_rate_limit = Int(
        60, config=True, help="Messages a sender may send per message_rate_window seconds."
    )
    message_rate_window = Float(
        10.0, config=True, help="The window (seconds) message_rate_limit counts over."
    )
    idle_timeout = Float(
        1800.0,
        config=True,
        help="Seconds an IDLE agent session waits before it is passivated (INACTIVE): its "
        "REPL is snapshotted and its kernel shut down until a message revives it.",
    )

    compact_at = Float(
        0.8,
        min=0.0,
        max=1.0,
        config=True,
        help="Compact a session's conversation before a model call once its prompt fills this "
        "fraction of the model's context window (see daemon/compaction.py); 0 turns that off "
        "(compact() from the REPL still works).",
    )
    compact_keep_recent = Int(
        6, min=0, config=True, help="Most recent messages a compaction keeps verbatim."
    )

    gateway_class = Type(ModelGateway, config=True, help="The model gateway implementation.")
    loop_class = Type(AgentLoop, config=True, help="The agent loop implementation.")
    harness_class = Type(Harness, config=True, help="The Continual Harness implementation.")

    kernel_manager = Instance(AsyncMultiKernelManager, allow_none=True)
    url = Unicode("", help="Base URL kernels call back to (set by the server adapter).")

    @default("store_dir")
    def _default_store_dir(self) -> str:
        return str(Path(self.root_dir) / ".prime")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tokens = TokenRegistry()
        self.gateway: ModelGateway = self.gateway_class()
        self.store = Store(self.store_dir)
        self.harness: Harness = self.harness_class(
            parent=self, daemon=self, project_dir=str(Path(self.store_dir) / "harness")
        )
        self.scheduler = Scheduler(self.max_concurrent)
        self.live: dict[str, LiveSession] = {}
        self._listeners: list[Listener] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._notebook_locks: dict[str, asyncio.Lock] = {}
        self.mailbox = Mailbox(self)
        self.passivation = Passivation(self)
        self.add_listener(self.passivation.on_event)
        self.pool: KernelPool | None = None
        # Set once start() made the pool: the server takes requests before that (start runs
        # after it listens and imports litellm), so sessions created early wait for it.
        self._started = asyncio.Event()
        self.kernel_path: Callable[[str], Awaitable[str | None]] | None = None

    # -- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        global _current
        _current = self
        if self.kernel_manager is None:
            self.kernel_manager = AsyncMultiKernelManager()
        self._recover()
        await self.gateway.ready()
        # Agents work in the root (their relative paths, exports included, land there).
        root = str(Path(self.root_dir).resolve())
        self.pool = KernelPool(
            self.kernel_manager, self.kernel_name, self.pool_size, lambda: {"cwd": root}
        )
        self.pool.runner_kwargs = {"max_output_bytes": self.max_cell_output_bytes}
        self.pool.start_timeout = self.kernel_start_timeout
        self.pool.fill()
        self._started.set()

    async def stop(self) -> None:
        global _current
        for live in list(self.live.values()):
            if live.task and not live.task.done():
                live.task.cancel()
        tasks = [lv.task for lv in self.live.values() if lv.task]
        await asyncio.gather(*tasks, return_exceptions=True)
        for live in list(self.live.values()):
            if not live.state.terminal and live.record["kind"] == "agent":
                self._set_state(live, SessionState.FAILED, error="the daemon stopped")
            await self._release_kernel(live)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self.pool:
            await self.pool.close()
        self.store.close()
        self.harness.close()
        if _current is self:
            _current = None

    def _recover(self) -> None:
        """Sessions a previous daemon left unfinished cannot continue: say so in the record."""
        for rec in self.store.list_sessions(states=["ADMITTED", "RUNNING", "IDLE", "INACTIVE"]):
            if rec["kind"] == "notebook":
                continue
            self.store.update_session(
                rec["id"], state="FAILED", ended=time.time(), error="the daemon stopped"
            )
            self.store.append_event(
                rec["id"], "state", {"state": "FAILED", "reason": "the daemon stopped"}
            )

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    # -- recording ------------------------------------------------------------------------
    def record(self, live: LiveSession, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        event = self.store.append_event(live.id, kind, data)
        self._notify(live, event)
        return event

    def _notify(self, live: LiveSession, event: dict[str, Any]) -> None:
        note = {
            "session_id": live.id,
            "kind": event["kind"],
            "state": live.record["state"],
            "seq": event["seq"],
            "root_id": live.record["root_id"],
        }
        for listener in list(self._listeners):
            try:
                listener(note)
            except Exception:
                self.log.exception("a session listener failed")

    def _set_state(
        self, live: LiveSession, state: SessionState, *, error: str | None = None, reason: str = ""
    ) -> None:
        old = live.state
        if old == state:
            return
        check_transition(old, state)
        fields: dict[str, Any] = {"state": state.value}
        now = time.time()
        if state == SessionState.RUNNING and not live.record.get("started"):
            fields["started"] = now
        if state.terminal:
            fields["ended"] = now
        if error is not None:
            fields["error"] = error
        live.record.update(fields)
        live.record["usage"] = self._own_usage(live)
        fields["usage"] = live.record["usage"]
        self.store.update_session(live.id, **fields)
        data: dict[str, Any] = {"state": state.value}
        if error or reason:
            data["reason"] = error or reason
        self.record(live, "state", data)
        if state.terminal or (state == SessionState.IDLE and live.answered):
            live.settled.set()
        if state.terminal:
            self.harness.session_ended(live)

    def _own_usage(self, live: LiveSession) -> dict[str, Any]:
        u = dict(live.record.get("usage") or usage_mod.empty())
        started = live.record.get("started")
        if started:
            u["wall_time"] = round((live.record.get("ended") or time.time()) - started, 6)
        return u

    # -- creating sessions ----------------------------------------------------------------
    def resolve_model(self, explicit: str | None, parent: dict[str, Any] | None = None) -> str:
        if explicit:
            return explicit
        if parent and parent.get("model"):
            return str(parent["model"])
        return os.environ.get("PRIME_MODEL") or self.default_model

    async def create_session(
        self,
        prompt: str,
        *,
        parent_id: str | None = None,
        model: str | None = None,
        name: str | None = None,
        context_blob: str | None = None,
        context_type: str | None = None,
        budget: dict[str, Any] | None = None,
        max_turns: int | None = None,
        persistent: bool = False,
        spec: str | None = None,
    ) -> dict[str, Any]:
        """Admit a new agent session and start running it; returns its record at once."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise PrimeError("the prompt must be a non-empty string")
        if len(prompt) > self.max_prompt_chars:
            raise TooLarge(
                f"the prompt has {len(prompt)} characters; the daemon accepts at most "
                f"{self.max_prompt_chars} (pass large inputs as context=...)"
            )
        if context_blob is not None and not self.store.has_blob(context_blob):
            raise PrimeError(f"no uploaded context {context_blob!r}")
        if context_type is not None and not isinstance(context_type, str):
            raise PrimeError("context_type must be a string")
        spec_entry = None
        if spec is not None:
            # A sub-agent spec fills in what the call leaves out: model, budget, max_turns.
            spec_entry, spec_options = self.harness.spec(spec)
            model = model or spec_options.get("model")
            budget = budget if budget is not None else spec_options.get("budget")
            max_turns = max_turns or spec_options.get("max_turns")
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise PrimeError("max_turns must be a positive integer")
        if name is not None and not isinstance(name, str):
            raise PrimeError("name must be a string")
        parent = self.store.get_session(parent_id) if parent_id else None
        if parent_id and parent is None:
            raise NotFound(f"no session {parent_id}")
        depth = parent["depth"] + 1 if parent else 0
        if parent and parent["kind"] == "notebook":
            depth = parent["depth"] + 1
        if depth > self.max_depth:
            raise DepthExceeded(
                f"rlm() depth limit reached: a child here would be at depth {depth}, "
                f"and the maximum depth is {self.max_depth}",
                depth=depth,
                max_depth=self.max_depth,
            )
        model = self.resolve_model(model, parent)
        self.gateway.validate(model)  # before any kernel starts
        budget = budget_mod.admit(self, parent_id, budget, self.default_budget)
        session_id = new_id("s")
        record: dict[str, Any] = {
            "id": session_id,
            "name": name or _short(prompt),
            "prompt": prompt,
            "model": model,
            "state": SessionState.ADMITTED.value,
            "kind": "agent",
            "parent_id": parent_id,
            "root_id": parent["root_id"] if parent else session_id,
            "depth": depth,
            "created": time.time(),
            "context_blob": context_blob,
            "context_type": context_type,
            "budget": budget,
            "options": {
                "max_turns": max_turns,  # None: the model profile's default (see loop.py)
                "persistent": bool(persistent),
            },
            "usage": usage_mod.empty(),
        }
        if spec_entry is not None:
            record["options"].update(spec=spec_entry.id, instructions=spec_entry.content)
        self.store.insert_session(record)
        live = self.live[session_id] = LiveSession(record)
        task_data: dict[str, Any] = {"prompt": prompt, "model": model, "budget": budget}
        if context_type:
            task_data["context_type"] = context_type
        self.record(live, "task", task_data)
        self.record(live, "state", {"state": SessionState.ADMITTED.value})
        if parent is not None:
            parent_live = self.live.get(parent["id"])
            child = {"child_id": session_id, "name": record["name"], "prompt": prompt}
            if parent_live:
                self.record(parent_live, "child", child)
            else:
                self.store.append_event(parent["id"], "child", child)
        live.task = asyncio.create_task(self._run(live), name=f"session-{session_id}")
        return self.session_json(session_id)

    async def notebook_session(self, kernel_id: str) -> LiveSession:
        """The session standing for a user's kernel (a notebook), created on its first call."""
        # Two first calls at once (threads in one kernel) must not create two sessions.
        async with self._notebook_locks.setdefault(kernel_id, asyncio.Lock()):
            existing = self.tokens.session_for_kernel(kernel_id)
            if existing and existing in self.live:
                return self.live[existing]
            return await self._new_notebook_session(kernel_id)

    async def _new_notebook_session(self, kernel_id: str) -> LiveSession:
        path = await self.kernel_path(kernel_id) if self.kernel_path else None
        session_id = new_id("n")
        record: dict[str, Any] = {
            "id": session_id,
            "name": path or f"kernel {kernel_id[:8]}",
            "prompt": f"notebook {path}" if path else f"kernel {kernel_id}",
            "model": None,
            "state": SessionState.IDLE.value,
            "kind": "notebook",
            "parent_id": None,
            "root_id": session_id,
            "depth": 0,
            "notebook_path": path,
            "kernel_id": kernel_id,
            "created": time.time(),
            "started": time.time(),
            "options": {},
            "usage": usage_mod.empty(),
        }
        self.store.insert_session(record)
        live = self.live[session_id] = LiveSession(record)
        self.tokens.bind(kernel_id, session_id)
        self.record(live, "state", {"state": SessionState.IDLE.value})
        return live

    async def caller(self, kernel_id: str) -> LiveSession:
        session_id = self.tokens.session_for_kernel(kernel_id)
        if session_id is None:
            return await self.notebook_session(kernel_id)
        live = self.live.get(session_id)
        if live is None:
            raise Forbidden("this kernel's session is no longer running")
        return live

    # -- running --------------------------------------------------------------------------
    async def _run(self, live: LiveSession) -> None:
        acquired = False
        try:
            await self._started.wait()
            await self.scheduler.acquire(live.id)
            acquired = True
            if live.runner is None:  # a woken IDLE session still has its kernel
                await self._attach_kernel(live)
            self._set_state(live, SessionState.RUNNING)
            loop = self.loop_class(self, live)
            await loop.run(live.record["options"].get("max_turns"))
            if live.record["options"].get("persistent"):
                self._set_state(live, SessionState.IDLE)
            elif live.answered:
                self._set_state(live, SessionState.DONE)
            else:
                self._set_state(live, SessionState.FAILED, error="ended without an answer")
        except asyncio.CancelledError:
            if not live.state.terminal:
                self._set_state(live, SessionState.CANCELLED, reason="cancelled")
        except TurnLimitReached as e:
            self._set_state(live, SessionState.FAILED, error=str(e))
        except PrimeError as e:
            self._set_state(live, SessionState.FAILED, error=e.message)
        except Exception as e:
            self.log.exception("session %s failed", live.id)
            self._set_state(live, SessionState.FAILED, error=f"{type(e).__name__}: {e}")
        finally:
            if acquired:
                self.scheduler.release(live.id)
            if live.state.terminal:
                self._schedule_kernel_release(live)

    async def _attach_kernel(self, live: LiveSession) -> None:
        assert self.pool is not None
        runner = await self.pool.acquire()
        live.runner = runner
        runner.on_foreign_cell = lambda cell: self._on_user_cell(live, cell)
        self.tokens.bind(runner.kernel_id, live.id)
        live.record["kernel_id"] = runner.kernel_id
        self.store.update_session(live.id, kernel_id=runner.kernel_id)
        if live.record.get("context_blob"):
            result = await runner.execute(
                "import prime_kernel.kernel.primitives as __pk\n"
                "context = __pk.load_context()\n"
                "del __pk",
                silent=True,
                timeout=self.cell_timeout,
            )
            if result.status != "ok":
                detail = render(result.outputs, status=result.status, limit=2000, timeout=0)
                raise PrimeError(f"could not load the context in the child's REPL: {detail}")
        await self.passivation.restore(live)  # a revived INACTIVE session gets its REPL back

    def _schedule_kernel_release(self, live: LiveSession) -> None:
        if live.runner is None:
            return
        delay = 0.0
        if live.record["parent_id"] is None or not self.prune_children_kernels:
            delay = self.keep_root_kernel
        task = asyncio.create_task(self._release_kernel(live, delay))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _release_kernel(self, live: LiveSession, delay: float = 0.0) -> None:
        if delay:
            await asyncio.sleep(delay)
        runner, live.runner = live.runner, None
        if runner is None:
            return
        self.tokens.revoke(runner.kernel_id)
        # Shielded: a shutdown cancelled halfway leaves the kernel manager in a state it
        # cannot clean up.
        await asyncio.shield(self._shutdown_kernel(runner))

    async def _shutdown_kernel(self, runner: KernelRunner) -> None:
        await runner.stop()
        assert self.kernel_manager is not None
        with contextlib.suppress(Exception):
            result = self.kernel_manager.shutdown_kernel(runner.kernel_id, now=True)
            if asyncio.iscoroutine(result):
                await result

    def check_limits(self, live: LiveSession) -> None:
        """Called before every model call; raises to stop the session."""
        if live.cancelling:
            raise asyncio.CancelledError()
        budget_mod.check(self, live)

    async def model_call(
        self, live: LiveSession, messages: list[dict[str, Any]], tools: bool, **kwargs: Any
    ) -> Completion:
        from .prompts import PYTHON_TOOL

        completion = await self.gateway.complete(
            live.record["model"],
            messages,
            tools=[PYTHON_TOOL] if tools else None,
            **{**self.model_kwargs, **kwargs},
        )
        self._account_model_call(live, completion)
        self.harness.turn_taken(live)
        return completion

    def _account_model_call(self, live: LiveSession, completion: Completion) -> None:
        u = live.record.setdefault("usage", usage_mod.empty())
        for k in ("prompt_tokens", "completion_tokens", "cached_tokens", "total_tokens"):
            u[k] = u.get(k, 0) + completion.usage.get(k, 0)
        u["cost"] = round(u.get("cost", 0) + completion.cost, 10)
        u["model_calls"] = u.get("model_calls", 0) + 1
        self.store.update_session(live.id, usage=self._own_usage(live))
        self.record(
            live,
            "model_call",
            {
                "model": live.record["model"],
                "usage": completion.usage,
                "cost": completion.cost,
                "duration": round(completion.duration, 6),
                "finish_reason": completion.finish_reason,
            },
        )

    async def run_cell(self, live: LiveSession, code: str) -> CellResult:
        runner = live.runner
        if runner is None:
            raise PrimeError("the session has no kernel")
        try:
            result = await runner.execute(code, timeout=self.cell_timeout)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await runner.interrupt()
            self.record(
                live,
                "cell",
                CellResult(code=code, status="cancelled").to_json("agent"),
            )
            raise
        u = live.record.setdefault("usage", usage_mod.empty())
        u["cells"] = u.get("cells", 0) + 1
        u["kernel_time"] = round(u.get("kernel_time", 0) + result.duration, 6)
        self.store.update_session(live.id, usage=self._own_usage(live))
        self._scrub(result)
        self.record(live, "cell", result.to_json("agent"))
        return result

    def _scrub(self, cell: CellResult) -> None:
        """Remove live session tokens from a cell before it is stored or shown to a model.

        Agent code can print its own token (or a sibling's it found); the store, the events API
        and the model provider must never see one.
        """
        from ..export.redact import Redactor

        redactor = Redactor(self.tokens.live_tokens())
        if redactor.count:
            cell.code = redactor.text(cell.code)
            cell.outputs = redactor.value(cell.outputs)

    def _on_user_cell(self, live: LiveSession, cell: CellResult) -> None:
        self._scrub(cell)
        self.record(live, "cell", cell.to_json("user"))
        text = render(cell.outputs, status=cell.status, limit=self.observation_chars, timeout=0)
        live.news.append(
            f"[A person ran this in your REPL]\n```python\n{cell.code}\n```\nOutput:\n{text}"
        )

    def take_news(self, live: LiveSession) -> list[str]:
        self.mailbox.absorb(live)  # unread messages are shown now, and so count as read
        news, live.news = live.news, []
        return news

    def context_notes(self, live: LiveSession) -> str:
        """Extra system-prompt text for a session (harness notes, memories, skills)."""
        return self.harness.context(live.record)

    # -- answers --------------------------------------------------------------------------
    def check_blob_size(self, size: int, what: str) -> None:
        if size > self.max_blob_bytes:
            raise TooLarge(
                f"{what} is {size} bytes pickled; the daemon accepts at most "
                f"{self.max_blob_bytes} (c.Daemon.max_blob_bytes)",
                size=size,
                limit=self.max_blob_bytes,
            )

    def record_answer(self, live: LiveSession, data: bytes | None, text: str, kind: str) -> None:
        if live.record["kind"] != "agent":
            raise Forbidden("answer() is for agent sessions; this kernel is not running one")
        blob = self.store.put_blob(data) if data is not None else None
        live.answered = True
        live.record.update(answer_repr=text, answer_blob=blob)
        self.store.update_session(live.id, answer_repr=text, answer_blob=blob)
        self.record(live, "answer", {"repr": text, "kind": kind})
        if live.state == SessionState.IDLE:
            live.settled.set()

    def reply(self, live: LiveSession, text: str) -> None:
        """A turn that ended without code: for a task session the reply is its answer."""
        if not live.answered:
            self.record_answer(live, pickle.dumps(text), text, "reply")

    def answer_bytes(self, session_id: str) -> bytes:
        record = self._record(session_id)
        if not record.get("answer_blob") or not self.store.has_blob(record["answer_blob"]):
            raise NotFound(f"session {session_id} has no answer")
        return self.store.get_blob(record["answer_blob"])

    def context_bytes(self, session_id: str) -> bytes:
        record = self._record(session_id)
        if not record.get("context_blob") or not self.store.has_blob(record["context_blob"]):
            raise NotFound(f"session {session_id} has no context")
        return self.store.get_blob(record["context_blob"])

    # -- waiting, cancelling --------------------------------------------------------------
    async def wait(self, session_id: str, timeout: float | None) -> dict[str, Any]:
        live = self.live.get(session_id)
        if live is not None and not live.settled.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(live.settled.wait(), timeout)
        return self.session_json(session_id)

    async def cancel(self, session_id: str) -> dict[str, Any]:
        """Cancel a session and its whole subtree; a no-op (that says so) if it has ended."""
        record = self._record(session_id)
        targets = [record, *self.store.descendants(session_id)]
        cancelled = []
        for rec in reversed(targets):  # children first, so none outlives its parent's cancel
            live = self.live.get(rec["id"])
            if live is None or live.state.terminal or rec["kind"] == "notebook":
                continue
            cancelled.append(rec["id"])
            live.cancelling = True
            if live.task and not live.task.done():
                live.task.cancel()
            else:
                self._set_state(live, SessionState.CANCELLED, reason="cancelled")
                self._schedule_kernel_release(live)
        waits = [self.live[s].task for s in cancelled if self.live[s].task]
        await asyncio.gather(*[t for t in waits if t], return_exceptions=True)
        ended = SessionState(record["state"]).terminal and record["kind"] != "notebook"
        return {
            "cancelled": cancelled,
            "already_ended": ended and session_id not in cancelled,
            "state": self._record(session_id)["state"],
        }

    async def interrupt(self, session_id: str) -> None:
        live = self.live.get(session_id)
        if live is None or live.runner is None:
            raise PrimeError(f"session {session_id} has no running kernel to interrupt")
        await live.runner.interrupt()

    # -- plain model calls ----------------------------------------------------------------
    async def llm(
        self, caller: LiveSession, prompts: list[str], model: str | None = None
    ) -> list[str]:
        if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
            raise PrimeError("llm() takes a string prompt (llm.batch a list of strings)")
        if len(prompts) > self.max_llm_batch:
            raise PrimeError(
                f"llm.batch() got {len(prompts)} prompts; at most {self.max_llm_batch} at once "
                "(c.Daemon.max_llm_batch)"
            )
        model = self.resolve_model(model, caller.record)
        self.gateway.validate(model)
        self.check_limits(caller)
        # A few calls at a time, each checked against the budget first, so a batch cannot
        # spend far past what remains.
        gate = asyncio.Semaphore(self.llm_batch_concurrency)

        async def one(prompt: str) -> str:
            async with gate:
                self.check_limits(caller)
                completion = await self.gateway.text(model, prompt, **self.model_kwargs)
                self._account_model_call(caller, completion)
            return str(completion.message.get("content") or "")

        return list(await asyncio.gather(*(one(p) for p in prompts)))

    # -- reading --------------------------------------------------------------------------
    def _record(self, session_id: str) -> dict[str, Any]:
        live = self.live.get(session_id)
        if live is not None:
            return live.record
        record = self.store.get_session(session_id)
        if record is None:
            raise NotFound(f"no session {session_id}")
        return record

    def session_json(self, session_id: str) -> dict[str, Any]:
        record = self._record(session_id)
        descendants = self.store.descendants(session_id)
        subtree = usage_mod.summed([self._usage_of(r) for r in (record, *descendants)])
        children = [d["id"] for d in descendants if d["parent_id"] == record["id"]]
        return self._to_json(record, subtree, children)

    def _usage_of(self, record: dict[str, Any]) -> dict[str, Any]:
        live = self.live.get(record["id"])
        return self._own_usage(live) if live else dict(record.get("usage") or {})

    def _to_json(
        self, record: dict[str, Any], subtree: dict[str, float], children: list[str]
    ) -> dict[str, Any]:
        out = {
            k: record.get(k)
            for k in (
                "id",
                "name",
                "prompt",
                "model",
                "state",
                "kind",
                "parent_id",
                "root_id",
                "depth",
                "notebook_path",
                "kernel_id",
                "created",
                "started",
                "ended",
                "error",
                "answer_repr",
                "context_type",
                "budget",
            )
        }
        out["has_answer"] = bool(record.get("answer_blob"))
        # Whether the session's kernel is still up (a person can attach a console to it).
        live = self.live.get(record["id"])
        out["kernel_alive"] = bool(live and live.runner is not None)
        out["options"] = record.get("options") or {}
        out["usage"] = {"own": usage_mod.summed([self._usage_of(record)]), "subtree": subtree}
        out["children"] = children
        return out

    def list_sessions(self, **filters: Any) -> list[dict[str, Any]]:
        """Records matching `filters`, each with its subtree's usage: one read of the store,
        and each subtree summed once (the panel asks for this on every push event)."""
        everything = self.store.list_sessions()
        wanted = self.store.list_sessions(**filters) if any(filters.values()) else everything
        children: dict[str | None, list[dict[str, Any]]] = {}
        for r in reversed(everything):  # oldest first, like session_json's children
            children.setdefault(r["parent_id"], []).append(r)
        totals: dict[str, dict[str, float]] = {}

        def subtree(r: dict[str, Any]) -> dict[str, float]:
            if r["id"] not in totals:
                parts = [self._usage_of(r), *(subtree(c) for c in children.get(r["id"], []))]
                totals[r["id"]] = usage_mod.summed(parts)
            return totals[r["id"]]

        return [
            self._to_json(
                self.live[r["id"]].record if r["id"] in self.live else r,
                subtree(r),
                [c["id"] for c in children.get(r["id"], [])],
            )
            for r in wanted
        ]

    def events(self, session_id: str, after: int = 0) -> list[dict[str, Any]]:
        self._record(session_id)
        return self.store.events(session_id, after=after)

    def can_reach(self, caller: LiveSession, target_id: str) -> bool:
        """Whether `caller` may observe or control `target_id`: its own descendants."""
        record = self.store.get_session(target_id)
        while record is not None and record.get("parent_id"):
            if record["parent_id"] == caller.id:
                return True
            record = self.store.get_session(record["parent_id"])
        return False


def _short(prompt: str, words: int = 8) -> str:
    parts = prompt.split()
    text = " ".join(parts[:words])
    return text + ("…" if len(parts) > words else "")
