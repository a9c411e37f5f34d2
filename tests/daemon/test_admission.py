"""Admission over fakes (no server, no kernel, no model): a request checked and its record
built, a batch admitted all or nothing, an inline context kept as a blob, each limit refused
where it was asked for, naming its setting."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import pytest

from prime_kernel.daemon.admission import Admission, short_name
from prime_kernel.daemon.autonomy import parse
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.protocol.errors import (
    DepthExceeded,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    PrimeError,
    TooLarge,
)
from prime_kernel.protocol.requests import SessionRequest
from prime_kernel.protocol.states import SessionState
from tests.daemon.conftest import shared


class FakeStore:
    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.rows: dict[str, dict[str, Any]] = {}

    def has_blob(self, blob_id: str) -> bool:
        return blob_id in self.blobs

    async def put_blob(self, data: bytes) -> str:
        blob_id = f"b{len(self.blobs)}"
        self.blobs[blob_id] = data
        return blob_id

    def insert_session(self, row: dict[str, Any]) -> dict[str, Any]:
        self.rows[row["id"]] = row
        return row

    def update_session(self, session_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        self.rows[session_id].update(fields)
        return fields


class FakeRouter:
    def __init__(self) -> None:
        self.validated: list[str] = []

    async def ready(self) -> None:
        pass

    def validate(self, model: str) -> None:
        if model.startswith("unknown/"):
            raise PrimeError(f"unknown model {model}")
        self.validated.append(model)


class FakeHarness:
    def subagent(self, name: str) -> tuple[Any, dict[str, Any]]:
        if name != "reviewer":
            raise NotFound(f"no sub-agent named {name!r}")
        entry = type("Entry", (), {"id": "reviewer", "content": "Review carefully."})()
        return entry, {"model": "scripted/reviewer", "max_turns": 5, "budget": {"turns": 9}}


class FakeAutonomy:
    def parse(self, value: Any) -> dict[str, Any] | None:
        return parse(value)


class FakeReplays:
    async def child_plan(self, parent: Any, turn: int, rank: int) -> None:
        return None


class FakeListing:
    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry

    def session_json(self, session_id: str) -> dict[str, Any]:
        return {"id": session_id, "state": self.registry.get(session_id).state.value}


@pytest.fixture
def admission(monkeypatch: pytest.MonkeyPatch) -> Admission:
    monkeypatch.delenv("PRIME_MODEL", raising=False)
    registry = SessionRegistry()
    return Admission(
        shared(registry, store=FakeStore()),
        router=FakeRouter(),  # type: ignore[arg-type]
        harness=FakeHarness(),  # type: ignore[arg-type]
        autonomy=FakeAutonomy(),  # type: ignore[arg-type]
        replays=FakeReplays(),  # type: ignore[arg-type]
        listing=FakeListing(registry),  # type: ignore[arg-type]
        start=lambda live: None,
        default_model="scripted/default",
        max_batch=3,
        max_children=4,
        max_depth=1,
    )


def admitted(admission: Admission, *requests: SessionRequest, parent: Any = None) -> list[Any]:
    records = asyncio.run(admission.requests(parent, list(requests)))
    return [admission.record(r) for r in records]


def test_a_root_is_admitted_with_its_defaults(admission: Admission) -> None:
    [root] = admitted(admission, SessionRequest("Sum the numbers one to ten, please, and more"))
    assert root.state == SessionState.ADMITTED and root.depth == 0 and root.root_id == root.id
    assert (
        root.model == "scripted/default" and root.name == "Sum the numbers one to ten, please, and…"
    )
    assert root.options == {"max_turns": None, "persistent": False}
    assert admission.registry.get(root.id) is root and root.id in admission.store.rows  # type: ignore[attr-defined]


def test_a_child_inherits_its_parents_model_and_the_subagent_fills_what_is_left(
    admission: Admission, monkeypatch: pytest.MonkeyPatch
) -> None:
    [root] = admitted(admission, SessionRequest("root", model="scripted/parent"))
    [child] = admitted(admission, SessionRequest("child"), parent=root)
    assert child.model == "scripted/parent" and child.parent_id == root.id and child.depth == 1
    [reviewer] = admitted(admission, SessionRequest("check", subagent="reviewer"))
    assert reviewer.model == "scripted/reviewer" and reviewer.options["max_turns"] == 5
    assert reviewer.options["subagent"] == "reviewer"
    assert reviewer.options["instructions"] == "Review carefully."
    monkeypatch.setenv("PRIME_MODEL", "scripted/env")
    assert admission.resolve_model(None) == "scripted/env"
    assert admission.resolve_model("scripted/named", root) == "scripted/named"


@pytest.mark.parametrize(
    ("request_", "error", "message"),
    [
        (SessionRequest("  "), PrimeError, "the prompt must be a non-empty string"),
        (SessionRequest("x" * 200_001), TooLarge, "pass large inputs as context="),
        (SessionRequest("p", name="n" * 201), TooLarge, r"c\.Admission\.max_name_chars"),
        (SessionRequest("p", max_turns=0), PrimeError, "max_turns must be a positive integer"),
        (SessionRequest("p", max_turns=10_001), PrimeError, "at most 10000"),
        (SessionRequest("p", context_blob="nope"), PrimeError, "no uploaded context 'nope'"),
        (SessionRequest("p", model="unknown/m"), PrimeError, "unknown model"),
        (SessionRequest("p", subagent="nobody"), NotFound, "no sub-agent named 'nobody'"),
        (SessionRequest("p", until=2), PrimeError, "until and subtree go with replay"),
        (SessionRequest("p", autonomous={"turns": "many"}), PrimeError, "turns"),
    ],
)
def test_bad_requests_are_refused_saying_why(
    admission: Admission, request_: SessionRequest, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        admitted(admission, request_)
    assert len(admission.registry) == 0


def test_depth_children_and_batches_are_limited_and_a_refused_batch_admits_nothing(
    admission: Admission,
) -> None:
    [root] = admitted(admission, SessionRequest("root"))
    [child] = admitted(admission, SessionRequest("child"), parent=root)
    with pytest.raises(DepthExceeded, match="maximum depth is 1"):
        admitted(admission, SessionRequest("grandchild"), parent=child)
    many = [SessionRequest(f"c{i}") for i in range(4)]
    with pytest.raises(LimitExceeded, match=r"at most 3 \(c\.Admission\.max_batch\)"):
        admitted(admission, *many, parent=root)
    bad = [SessionRequest("ok"), SessionRequest("ok"), SessionRequest("")]
    with pytest.raises(PrimeError, match="non-empty"):
        admitted(admission, *bad, parent=root)
    assert len(admission.registry.children(root.id)) == 1  # none of the batch
    admitted(admission, *many[:3], parent=root)
    with pytest.raises(LimitExceeded, match=r"at most 4 \(c\.Admission\.max_children\)"):
        admitted(admission, SessionRequest("one more"), parent=root)
    with pytest.raises(InvalidRequest, match=r"replay goes with rlm\(\)"):
        admitted(admission, SessionRequest("a", replay="s1"), SessionRequest("b"), parent=root)


def test_an_inline_context_is_pickled_and_kept_as_a_blob(admission: Admission) -> None:
    request = asyncio.run(admission.store_context(SessionRequest("p", context={"rows": [1, 2]})))
    assert not request.has_context and request.context_type == "dict"
    assert request.context_blob is not None
    store = admission.store
    assert pickle.loads(store.blobs[request.context_blob]) == {"rows": [1, 2]}  # type: ignore[attr-defined]
    [record] = admitted(admission, request)
    assert record.context_blob == request.context_blob
    plain = SessionRequest("p")
    assert asyncio.run(admission.store_context(plain)) is plain
    admission.max_blob_bytes = 100
    with pytest.raises(TooLarge, match=r"the context is \d+ bytes pickled.*max_blob_bytes"):
        asyncio.run(admission.store_context(SessionRequest("p", context="x" * 200)))
    assert len(store.blobs) == 1  # type: ignore[attr-defined]  # nothing kept of it


def test_created_sessions_are_told_driven_and_started_at_once(admission: Admission) -> None:
    started: list[str] = []
    admission.start = lambda live: started.append(live.id)
    events = admission.events.emitted  # type: ignore[attr-defined]
    root = asyncio.run(admission.create_session(SessionRequest("root", context=[1])))
    assert root["state"] == "ADMITTED" and started == [root["id"]]
    assert admission.registry.live[root["id"]].record.context_type == "list"
    kinds = [(sid, kind) for sid, kind, _ in events]
    assert kinds == [(root["id"], "task"), (root["id"], "state")]
    assert events[0][2]["context_type"] == "list"
    children = asyncio.run(
        admission.create_sessions([SessionRequest("a"), SessionRequest("b")], parent_id=root["id"])
    )
    assert started == [root["id"], *(c["id"] for c in children)]
    told = [(sid, data["child_id"]) for sid, kind, data in events if kind == "child"]
    assert told == [(root["id"], c["id"]) for c in children]


def test_default_names_are_cut() -> None:
    assert short_name("one two three", 200) == "one two three"
    assert short_name("a b c d e f g h i j", 200) == "a b c d e f g h…"
    assert short_name("abcdef", 4) == "abc…"
