"""The prefix check: a call's stored conversation must begin with the previous call's."""

from __future__ import annotations

from prime_kernel.daemon.prompt_cache import PrefixCheck, stable_length

SYSTEM = {"role": "system", "content": "You are an agent."}
TASK = {"role": "user", "content": "Count the primes."}


def test_appending_keeps_the_prefix_and_a_rewrite_is_a_break() -> None:
    check = PrefixCheck()
    turn = [SYSTEM, TASK]
    assert check.check(turn) is None  # the first call has nothing to begin with
    turn += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "mail"}]
    assert check.check(turn) is None
    # A changed system message (the old goal layout) breaks at 0, unplanned.
    changed = [{**SYSTEM, "content": "You are an agent.\n\n## Your goal"}, *turn[1:]]
    assert check.check(changed) == {"at": 0, "planned": False}
    # A compaction: shorter, with a summary after the head; planned once, then cleared.
    check.planned = True
    assert check.check([changed[0], TASK, {"role": "user", "content": "summary"}]) == {
        "at": 2,
        "planned": True,
    }
    assert check.check([changed[0], TASK]) == {"at": 2, "planned": False}


def test_a_trailing_assistant_message_is_a_prefill_not_the_conversation() -> None:
    assert stable_length([SYSTEM, TASK]) == 2
    assert stable_length([SYSTEM, TASK, {"role": "assistant", "content": "```python\n"}]) == 2
    assert stable_length([]) == 0
