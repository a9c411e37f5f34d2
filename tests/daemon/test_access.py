"""Access over fakes (no server, no kernel): a token stands for its kernel's session, a
notebook's made once on its first call; a bad, pool or ended kernel's token is refused; a
caller reaches itself and its descendants, nothing else."""

from __future__ import annotations

import asyncio

import pytest

from prime_kernel.daemon.access import Access, TokenRegistry
from prime_kernel.daemon.records import SessionRecord
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.session import LiveSession
from prime_kernel.protocol.errors import Forbidden, NotFound, PrimeError, Unauthorized
from prime_kernel.protocol.states import SessionKind, SessionState
from tests.daemon.conftest import FakeEvents, agent_record, shared


class FakeAdmission:
    max_name_chars = 12

    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry

    def record(self, record: SessionRecord) -> SessionRecord:
        return self.registry.add(record, lambda sid, fields: None)


class World:
    def __init__(self) -> None:
        self.registry = SessionRegistry()
        self.tokens = TokenRegistry()
        self.events = FakeEvents()
        self.access = Access(
            shared(self.registry, events=self.events),
            tokens=self.tokens,
            admission=FakeAdmission(self.registry),  # type: ignore[arg-type]
        )

    def agent(self, sid: str, parent: str | None = None, kernel: str | None = None) -> LiveSession:
        record = agent_record(sid, parent)
        live = self.registry.attach(self.registry.add(record, lambda sid, fields: None))
        if kernel is not None:
            self.tokens.bind(kernel, sid)
        return live


def test_a_token_stands_for_its_kernels_session_and_nothing_else() -> None:
    async def main() -> None:
        w = World()
        live = w.agent("s1", kernel="k1")
        token = w.tokens.mint("k1")
        assert await w.access.caller(token) is live
        with pytest.raises(Unauthorized, match="missing session token"):
            await w.access.caller(None)
        with pytest.raises(Unauthorized, match="unknown or revoked"):
            await w.access.caller("forged")
        pool = w.tokens.mint("k-pool")  # a pool kernel's, before any session has it
        with pytest.raises(Forbidden, match="does not serve a session"):
            await w.access.caller(pool)
        live.record.update(state=SessionState.DONE)
        with pytest.raises(Unauthorized, match=r"session s1 has ended \(DONE\)"):
            await w.access.caller(token)
        del w.registry.live["s1"]
        with pytest.raises(Unauthorized, match="no longer running"):
            await w.access.caller(token)

    asyncio.run(main())


def test_a_notebooks_session_is_made_once_on_its_first_call() -> None:
    async def main() -> None:
        w = World()

        async def path(kernel_id: str) -> str:
            await asyncio.sleep(0.01)  # both first calls are in here at once
            return "analysis/quarterly.ipynb"

        w.access.kernel_path = path
        token = w.tokens.mint("kn", notebook=True)
        first, second = await asyncio.gather(w.access.caller(token), w.access.caller(token))
        assert first is second and len(w.registry) == 1
        record = first.record
        assert record.kind == SessionKind.NOTEBOOK and record.state == SessionState.IDLE
        assert record.name == "analysis/qu…" and record.notebook_path == "analysis/quarterly.ipynb"
        assert w.tokens.session_for_kernel("kn") == record.id
        assert w.events.emitted == [(record.id, "state", {"state": "IDLE"})]
        w.access.kernel_path = None  # no server: named after its kernel
        other = await w.access.caller(w.tokens.mint("kernel-two", notebook=True))
        assert other.record.name == "kernel kernel-t" and other.record.notebook_path is None

    asyncio.run(main())


def test_a_caller_reaches_itself_and_its_descendants() -> None:
    w = World()
    root, child, sibling = w.agent("r"), w.agent("c", parent="r"), w.agent("x")
    grandchild = w.agent("g", parent="c")
    assert w.access.own_tree(root, None) == "r" and w.access.own_tree(root, "g") == "g"
    w.access.descendant_of(root, "c")
    assert w.access.can_reach(child, grandchild.id) and not w.access.can_reach(child, "r")
    with pytest.raises(Forbidden, match="not r or one of its descendants"):
        w.access.own_tree(root, sibling.id)
    with pytest.raises(Forbidden, match="not a descendant of session c"):
        w.access.descendant_of(child, "r")
    with pytest.raises(NotFound):
        w.access.descendant_of(root, "nobody")
    with pytest.raises(PrimeError, match="must be a string"):
        w.access.own_tree(root, 7)
