"""Verified answers, and what the harness learns from them.

A session's answer is verified right or wrong by a person (`prime-agent verify`, the panel's
session view, `h.verify()` in a notebook), a benchmark's checker, or an autonomous gate that
passed (a real test, in a session a person started: an agent's gate for its own children is
not evidence). The verdict is kept on the record (`verified`) and in the trajectory; then, with
`c.Learner.learn` on, the session is distilled into a worked example (right) or a caution (wrong)
by `prime_kernel.harness.learning` and proposed through the review policy, attributed to the
session and the verifier. A second verdict that differs withdraws what the first taught.

`recall` is what the agent loop asks for when it builds a session's first prompt.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from traitlets import Bool, Float, Int
from traitlets.config import LoggingConfigurable

from ..harness import Harness, proposals
from ..harness.examples import Example, context_digest, same_text
from ..harness.learning import Cell, NotLearned, distill
from ..protocol.errors import Conflict, InvalidRequest, NotFound, PrimeError
from ..protocol.events import EventKind
from ..protocol.states import SessionKind, SessionState
from .autonomy import describe
from .records import SessionRecord
from .shared import Shared

# A verdict is about an answer a session gave and stands by: DONE, or IDLE (a persistent one).
_VERIFIABLE = (SessionState.DONE, SessionState.IDLE)


class Learner(LoggingConfigurable):
    """Records verdicts, learns from them and recalls what was learned. Configure as
    `c.Learner.<trait>`."""

    learn = Bool(
        True,
        config=True,
        help="Distil a session whose answer is verified (by a person, a checker or an "
        "autonomous gate) into a worked example (right) or a caution (wrong), proposed under "
        "the review policy. No model call.",
    )
    examples_shown = Int(
        1,
        min=0,
        config=True,
        help="Worked examples recalled into a session's prompt (a model's profile may show "
        "more: SmolLM2's shows 2; 0 shows none to any model).",
    )
    cautions_shown = Int(
        1, min=0, config=True, help="Cautions (verified wrong answers) recalled into a prompt."
    )
    example_min_coverage = Float(
        0.5,
        min=0.0,
        max=1.0,
        config=True,
        help="Share of a task's term weight (BM25 IDF) an example's task must match to be "
        "recalled for it.",
    )
    max_example_chars = Int(
        1500, config=True, help="Longest code a learned worked example may have."
    )

    def __init__(
        self,
        shared: Shared,
        *,
        harness: Harness,
        max_turns: Callable[[], int],
        scrub: Callable[[Any], Any],
        **kwargs: Any,
    ) -> None:
        super().__init__(parent=shared.parent, **kwargs)
        self.registry = shared.registry
        self.store = shared.store
        self.events = shared.events
        self.harness = harness
        self.max_turns = max_turns
        self.scrub = scrub
        self.spawn = shared.spawn

    async def verify(
        self, session_id: str, *, correct: bool = True, by: str = "user", note: str = ""
    ) -> dict[str, Any]:
        """Record a verdict on a session's answer and learn from it; the verification."""
        record = self.registry.get(session_id)
        if not isinstance(correct, bool):
            raise InvalidRequest("'correct' must be true or false")
        if not isinstance(note, str):
            raise InvalidRequest("'note' must be a string")
        if not record.is_agent:
            raise InvalidRequest(
                f"{session_id} is a notebook's session: it has no answer to verify"
            )
        has_answer = record.answer_repr is not None or record.answer_blob is not None
        if record.state not in _VERIFIABLE or not has_answer:
            raise Conflict(
                f"{session_id} has no answer to verify ({record.state.value}"
                f"{', no answer' if not has_answer else ''}): verify a session once it is DONE",
                state=record.state.value,
            )
        verification: dict[str, Any] = {"correct": correct, "by": by, "ts": time.time()}
        if note:
            verification["note"] = self.scrub(note)
        self._withdraw(record, correct, by)
        if self.learn:
            verification.update(await self._learn(record, correct, by, note))
        record.update(verified=verification)
        self.events.emit(
            record, EventKind.VERIFIED, {k: v for k, v in verification.items() if k != "ts"}
        )
        return verification

    async def _learn(
        self, record: SessionRecord, correct: bool, by: str, note: str
    ) -> dict[str, Any]:
        """{"learned": ...} or {"refused": why}."""
        events = await self.store.events(record.id, kinds=["cell"])
        cells = [Cell.from_event(e["data"]) for e in events]
        try:
            edit = distill(
                self.scrub(record.prompt),
                cells,
                answer_repr=self.scrub(record.answer_repr or ""),
                correct=correct,
                session_id=record.id,
                verified_by=by,
                model=record.model,
                context_type=record.context_type,
                context_digest=await asyncio.to_thread(self._context_digest, record),
                note=self.scrub(note),
                max_chars=self.max_example_chars,
            )
        except NotLearned as e:
            return {"refused": str(e)}
        try:
            _, _, version = self.harness.find("example", edit["id"], "project")
        except NotFound:
            pass
        else:  # the same task learned before: this verdict's code replaces it
            edit.update(op="update", base_version=version)
        outcome = "right" if correct else "wrong"
        proposal = proposals.propose(
            self.harness,
            [edit],
            author="learning",
            trigger=f"session {record.id} verified {outcome} by {by}",
            summary=f"{'A worked example' if correct else 'A caution'} from session {record.id}: "
            f"{edit['title'][:80]}",
            rationale=edit["reason"],
            max_turns=self.max_turns(),
            evidence=[record.id],
            learned=True,
        )
        learned = proposal["edits"][0]
        if learned["status"] in ("refused", "failed"):
            return {"refused": learned["note"]}
        return {
            "learned": {
                "refinement_id": proposal["id"],
                "status": learned["status"],
                "entry": f"example/{learned['id']}",
            }
        }

    def _withdraw(self, record: SessionRecord, correct: bool, by: str) -> None:
        """A new verdict that differs from the last one takes back what that one taught."""
        last = record.verified or {}
        learned = last.get("learned")
        if not learned or last.get("correct") == correct:
            return
        rid = learned["refinement_id"]
        try:
            proposal = proposals.get_refinement(self.harness, rid)
            if proposal["status"] == "applied":
                proposals.rollback_refinement(self.harness, rid, who=by)
            elif proposal["status"] == "proposed":
                proposals.reject_edits(self.harness, rid, who=by)
        except PrimeError:
            pass  # already rolled back or changed by a person since: nothing to take back

    # -- autonomous gates --------------------------------------------------------------------
    def session_done(self, record: SessionRecord, _: Any, __: SessionState) -> None:
        """A gate that passed verifies the answer of a session a person started."""
        plan = record.options.get("autonomous") or {}
        state = record.options.get("autonomy") or {}
        if not plan.get("gate") or state.get("phase") != "done" or not self._by_person(record):
            return
        if record.answer_repr is None and record.answer_blob is None:
            return
        self.spawn(
            self.verify(record.id, correct=True, by=f"gate {describe(plan['gate'])}"),
            f"verify-{record.id}",
        )

    def _by_person(self, record: SessionRecord) -> bool:
        if record.parent_id is None:
            return True
        try:
            return self.registry.get(record.parent_id).kind == SessionKind.NOTEBOOK
        except NotFound:
            return False

    # -- recall ------------------------------------------------------------------------------
    def recall(
        self, record: SessionRecord, *, shown: int | None = None, max_chars: int | None = None
    ) -> list[Example]:
        """The worked examples and cautions a session's first prompt shows: `shown` worked
        examples (a model profile's count; None, or `examples_shown` 0: `examples_shown`), their
        code at most `max_chars` long."""
        prompt = self.scrub(record.prompt)  # as a caution learned from it holds it
        digest: list[str | None] = []  # this session's, read once, if a caution needs it

        def same_task(caution: Example) -> bool:
            # The text first: the input is read only for a caution on a task of the same words.
            if not same_text(caution.task, prompt):
                return False
            if not digest:
                digest.append(self._context_digest(record))
            return digest[0] == caution.context_digest and (
                digest[0] is not None or not record.context_blob
            )

        return self.harness.recall(
            record.prompt,
            right=self.examples_shown if shown is None or not self.examples_shown else shown,
            wrong=self.cautions_shown,
            min_coverage=self.example_min_coverage,
            max_chars=max_chars,
            same_task=same_task,
        )

    def _context_digest(self, record: SessionRecord) -> str | None:
        """Which `context` the session has (None: none, or its stored bytes are gone)."""
        if not record.context_blob:
            return None
        try:
            return context_digest(self.store.blob_path(record.context_blob).read_bytes())
        except (OSError, ValueError):
            return None
