"""The printer of `prime-agent run` on a terminal, without a server: what a streamed reply
looks like once it is stored."""

from __future__ import annotations

import io

from prime_kernel.cli.follow import Progress, Stop


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_streamed_reply_is_not_printed_again_when_stored_with_its_prefill() -> None:
    # A local model's profile prefills "```python\n": the stored reply has the fence, the
    # stream does not (and the closing fence is the stop sequence).
    out = Terminal()
    progress = Progress(out, Stop())
    record = {"id": "s1", "model": "local/x"}
    for seq, text in enumerate(["answer(sum(", "range(10)))\n"], start=1):
        note = {"session_id": "s1", "call": 1, "seq": seq, "text": text, "done": False}
        progress.delta(record, 0, note)
    progress.delta(record, 0, {"session_id": "s1", "call": 1, "seq": 3, "text": "", "done": True})
    stored = {"kind": "assistant", "data": {"content": "```python\nanswer(sum(range(10)))\n```"}}
    progress.show(record, 0, stored)
    assert out.getvalue().count("answer(sum(range(10)))") == 1


def test_a_different_stored_reply_is_printed() -> None:
    out = Terminal()
    progress = Progress(out, Stop())
    record = {"id": "s1", "model": "local/x"}
    note = {"session_id": "s1", "call": 1, "seq": 1, "text": "print(1)", "done": True}
    progress.delta(record, 0, note)
    progress.show(record, 0, {"kind": "assistant", "data": {"content": "print(2)"}})
    assert "print(1)" in out.getvalue() and "print(2)" in out.getvalue()
