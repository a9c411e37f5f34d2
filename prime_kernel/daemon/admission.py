"""Admission: a session's request checked, its record built and stored, its context kept.

Every new agent session comes through here as a `SessionRequest` (protocol/requests.py) — a
person's POST, `rlm()` / `rlm.map()` from a kernel, `prime-agent run`:

- `store_context`: a context given inline (JSON) pickled and kept as a blob, as the one a
  kernel uploads is (`check_blob_size` bounds both, and answers and spills);
- `admit`: the request checked (prompt, name, turns, depth, model, budget, sub-agent, autonomy,
  replay) and its record built; nothing is stored until every request of a call passed, so a
  refused `rlm.map()` admits nothing;
- `record`: the admitted record stored and registered;
- `create_sessions`: all of that for a call, and each admitted session's run started.

Configure as `c.Admission.<trait>` (the old `c.Daemon.<trait>` works one more release).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import pickle
import time
from collections.abc import Callable
from typing import Any

from traitlets import Instance, Int, Unicode
from traitlets.config import LoggingConfigurable

from ..harness import Harness
from ..models import local
from ..models.router import ModelRouter
from ..protocol.errors import DepthExceeded, InvalidRequest, LimitExceeded, PrimeError, TooLarge
from ..protocol.events import EventKind
from ..protocol.requests import NO_CONTEXT, SessionRequest
from ..protocol.states import SessionKind, SessionState
from ..util.files import new_id
from . import usage as usage_mod
from .autonomy import Autonomy
from .listing import Listing
from .records import SessionRecord
from .replay import Replays
from .session import LiveSession
from .shared import Shared


class Admission(LoggingConfigurable):
    """Checks and records new sessions. Configure as `c.Admission.<trait>`."""

    default_model = Unicode(
        local.MODEL,
        config=True,
        help="Model used when neither the call nor PRIME_MODEL names one (a litellm name).",
    )
    max_depth = Int(3, config=True, help="Deepest rlm() nesting allowed (a root is depth 0).")
    default_budget = Instance(
        dict,
        kw={},
        config=True,
        help="Budget of a root session started without one: any of tokens, dollars, "
        "seconds, turns (see prime_kernel.daemon.budget). Empty: no limit.",
    )
    max_children = Int(
        500, config=True, help="Most children one session may start in all (rlm() calls)."
    )
    max_batch = Int(200, config=True, help="Most sessions one rlm.map() call may start.")
    max_name_chars = Int(
        200,
        min=1,
        config=True,
        help="Longest name a session may be given (longer ones are refused; a default name, "
        "made from the prompt or a notebook's path, is cut to it). Every list carries every "
        "name, so this bounds what a list costs per session.",
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

    def __init__(
        self,
        shared: Shared,
        *,
        router: ModelRouter,
        harness: Harness,
        autonomy: Autonomy,
        replays: Replays,
        listing: Listing,
        start: Callable[[LiveSession], None],
        **kwargs: Any,
    ) -> None:
        super().__init__(parent=shared.parent, **kwargs)
        self.events = shared.events
        self.listing = listing
        # Starts an admitted session's run (Runs.start).
        self.start = start
        self.registry = shared.registry
        self.store = shared.store
        self.router = router
        self.harness = harness
        self.accounting = shared.accounting
        self.autonomy = autonomy
        self.replays = replays

    def resolve_model(self, explicit: str | None, parent: SessionRecord | None = None) -> str:
        """The model of a call: the one it names, else its parent's, PRIME_MODEL, the default."""
        if explicit:
            return explicit
        if parent is not None and parent.model:
            return parent.model
        return os.environ.get("PRIME_MODEL") or self.default_model

    def models(self) -> dict[str, Any]:
        """The models the router knows, and the default (listed first if it is not one)."""
        models = self.router.known_models()
        default = self.resolve_model(None)
        if default not in models:
            models.insert(0, default)
        return {"default": default, "models": models}

    # -- blobs ----------------------------------------------------------------------------
    def check_blob_size(self, size: int, what: str) -> None:
        if size > self.max_blob_bytes:
            raise TooLarge(
                f"{what} is {size} bytes pickled; the daemon accepts at most "
                f"{self.max_blob_bytes} (c.Admission.max_blob_bytes)",
                size=size,
                limit=self.max_blob_bytes,
            )

    async def put_blob(self, data: bytes | bytearray, what: str) -> str:
        """Keep `data` (a pickle a kernel hands over: a context, an answer, a spill) as a
        blob, once its size is checked; its id."""
        self.check_blob_size(len(data), what)
        return await self.store.put_blob(data)

    async def store_context(self, request: SessionRequest) -> SessionRequest:
        """A request whose context was given inline (JSON), with it pickled and stored as a
        blob, as a kernel uploads one; the pickling runs off the event loop."""
        if not request.has_context:
            return request
        context = request.context
        data = await asyncio.to_thread(pickle.dumps, context)
        return dataclasses.replace(
            request,
            context=NO_CONTEXT,
            context_blob=await self.put_blob(data, "the context"),
            context_type=type(context).__name__,
        )

    # -- requests ---------------------------------------------------------------------------
    async def requests(
        self, parent: SessionRecord | None, requests: list[SessionRequest]
    ) -> list[SessionRecord]:
        """The records of `requests` (one `rlm()` or a root's, or an `rlm.map()`'s), each
        checked; none is stored yet, and one refused refuses them all."""
        await self.router.ready()  # validating a hosted model needs litellm: never on the loop
        if len(requests) == 1 and requests[0].replay is not None:
            return [await self._replay(parent, requests[0])]
        request = requests[0]
        if len(requests) == 1 and (request.until is not None or request.subtree):
            raise PrimeError("until and subtree go with replay")
        if len(requests) > 1:
            if parent is None:
                raise InvalidRequest("many sessions at once are children of a session")
            if len(requests) > self.max_batch:
                raise LimitExceeded(
                    f"rlm.map() asked for {len(requests)} children; one call may start at most "
                    f"{self.max_batch} (c.Admission.max_batch)",
                    limit=self.max_batch,
                )
            if any(r.replay is not None or r.until is not None or r.subtree for r in requests):
                raise InvalidRequest("replay goes with rlm(), one session at a time")
            self.check_children(parent, len(requests))
        plans = [await self._child_replay(parent, i) for i in range(len(requests))]
        records = [self.admit(r, parent, plan) for r, plan in zip(requests, plans, strict=True)]
        if parent is not None and len(requests) == 1:
            self.check_children(parent, 1)
        return records

    async def _replay(self, parent: SessionRecord | None, request: SessionRequest) -> SessionRecord:
        """A replay of an ended session: its prompt, context, model and turn limit stand for
        those the request leaves out (see replay.py)."""
        assert request.replay is not None
        plan = await self.replays.plan(request.replay, request.until, request.subtree)
        recorded = self.registry.get(request.replay)
        request = dataclasses.replace(
            request,
            prompt=request.prompt or recorded.prompt,
            model=request.model or recorded.model,
            max_turns=request.max_turns or recorded.options.get("max_turns"),
        )
        if request.context_blob is None:
            request = dataclasses.replace(
                request, context_blob=recorded.context_blob, context_type=recorded.context_type
            )
        record = self.admit(request, parent, plan)
        if parent is not None:
            self.check_children(parent, 1)
        return record

    async def _child_replay(self, parent: SessionRecord | None, more: int) -> dict[str, Any] | None:
        """The replay plan of the child `parent` starts after `more` others it is starting
        now: in a replayed turn, the recorded child of the same rank replays."""
        if parent is None:
            return None
        live = self.registry.live.get(parent.id)
        if live is None or not parent.options.get("replay"):
            return None
        rank = len(self.registry.children(parent.id)) + more
        return await self.replays.child_plan(parent, live.turns - 1, rank)

    def check_children(self, parent: SessionRecord, more: int) -> None:
        have = len(self.registry.children(parent.id))
        if have + more > self.max_children:
            raise LimitExceeded(
                f"session {parent.id} has {have} children and asked for {more} more; a session "
                f"may start at most {self.max_children} (c.Admission.max_children)",
                limit=self.max_children,
            )

    def admit(
        self,
        request: SessionRequest,
        parent: SessionRecord | None,
        replay: dict[str, Any] | None = None,
    ) -> SessionRecord:
        """Check a request and build its record (nothing is stored yet)."""
        prompt, model, name = request.prompt, request.model, request.name
        budget, max_turns = request.budget, request.max_turns
        if not isinstance(prompt, str) or not prompt.strip():
            raise PrimeError("the prompt must be a non-empty string")
        if len(prompt) > self.max_prompt_chars:
            raise TooLarge(
                f"the prompt has {len(prompt)} characters; the daemon accepts at most "
                f"{self.max_prompt_chars} (pass large inputs as context=...)"
            )
        if request.context_blob is not None and not self.store.has_blob(request.context_blob):
            raise PrimeError(f"no uploaded context {request.context_blob!r}")
        if request.context_type is not None and not isinstance(request.context_type, str):
            raise PrimeError("context_type must be a string")
        subagent = None
        if request.subagent is not None:
            # A sub-agent fills in what the call leaves out: model, budget, max_turns.
            subagent, preset = self.harness.subagent(request.subagent)
            model = model or preset.get("model")
            budget = budget if budget is not None else preset.get("budget")
            max_turns = max_turns or preset.get("max_turns")
        if max_turns is not None and (
            isinstance(max_turns, bool) or not isinstance(max_turns, int) or not max_turns >= 1
        ):
            raise PrimeError("max_turns must be a positive integer")
        if max_turns is not None and max_turns > 10_000:
            raise PrimeError(f"max_turns must be at most 10000, not {max_turns}")
        if name is not None and not isinstance(name, str):
            raise PrimeError("name must be a string")
        if name is not None and len(name) > self.max_name_chars:
            raise TooLarge(
                f"the name has {len(name)} characters; a session name may have at most "
                f"{self.max_name_chars} (c.Admission.max_name_chars)",
                size=len(name),
                limit=self.max_name_chars,
            )
        depth = parent.depth + 1 if parent else 0
        if depth > self.max_depth:
            raise DepthExceeded(
                f"rlm() depth limit reached: a child here would be at depth {depth}, "
                f"and the maximum depth is {self.max_depth}",
                depth=depth,
                max_depth=self.max_depth,
            )
        model = self.resolve_model(model, parent)
        if replay is None or replay["until"] is not None:  # a whole replay calls no model
            self.router.validate(model)  # before any kernel starts
        budget = self.accounting.admit(parent, budget, self.default_budget)
        session_id = new_id("s")
        options: dict[str, Any] = {
            "max_turns": max_turns,  # None: the model profile's default (see loop.py)
            "persistent": bool(request.persistent),
        }
        if subagent is not None:
            options.update(subagent=subagent.id, instructions=subagent.content)
        plan = self.autonomy.parse(request.autonomous)
        if plan is not None:
            options["autonomous"] = plan
        if replay is not None:
            options["replay"] = replay
        return SessionRecord(
            id=session_id,
            name=name or short_name(prompt, self.max_name_chars),
            prompt=prompt,
            model=model,
            state=SessionState.ADMITTED,
            kind=SessionKind.AGENT,
            parent_id=parent.id if parent else None,
            root_id=parent.root_id if parent else session_id,
            depth=depth,
            created=time.time(),
            context_blob=request.context_blob,
            context_type=request.context_type,
            budget=budget,
            options=options,
            usage=usage_mod.empty(),
        )

    def record(self, record: SessionRecord) -> SessionRecord:
        """Store an admitted record and register it; the record as stored (scrubbed)."""
        record.adopt(self.store.insert_session(record.to_row()))
        return self.registry.add(record, self.store.update_session)

    # -- creating sessions ----------------------------------------------------------------
    async def create_session(
        self, request: SessionRequest, *, parent_id: str | None = None
    ) -> dict[str, Any]:
        """Admit a new agent session and start running it; returns its record at once."""
        [session] = await self.create_sessions([request], parent_id=parent_id)
        return session

    async def create_sessions(
        self, requests: list[SessionRequest], *, parent_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Admit sessions (a root, a child, an rlm.map()'s children: all or none) and start
        running them; returns their records at once."""
        parent = self.registry.get(parent_id) if parent_id else None
        requests = [await self.store_context(r) for r in requests]
        records = await self.requests(parent, requests)
        for record in records:
            self._launch(record, parent)
        return [self.listing.session_json(r.id) for r in records]

    def _launch(self, record: SessionRecord, parent: SessionRecord | None) -> None:
        live = self.registry.attach(self.record(record))
        task_data: dict[str, Any] = {
            "prompt": record.prompt,
            "model": record.model,
            "budget": record.budget,
        }
        if record.context_type:
            task_data["context_type"] = record.context_type
        self.events.emit(record, EventKind.TASK, task_data)
        self.events.emit(record, EventKind.STATE, {"state": SessionState.ADMITTED.value})
        if parent is not None:
            child = {"child_id": record.id, "name": record.name, "prompt": record.prompt}
            self.events.emit(parent, EventKind.CHILD, child)
        self.start(live)


def short_name(prompt: str, chars: int, words: int = 8) -> str:
    """A session's default name: the prompt's first words, cut to `chars`."""
    parts = prompt.split()
    text = " ".join(parts[:words])
    return cut(text + ("…" if len(parts) > words else ""), chars)


def cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(chars - 1, 0)] + "…"
