"""What a model is shown of a cell (daemon/observation.py): its outputs as text, how it ended,
a cap with a note of what was cut; and the JSON report a silent cell of the daemon printed."""

from __future__ import annotations

from prime_kernel.daemon.observation import render, report
from prime_kernel.util.format import NO_OUTPUT

PRINTED = {"output_type": "stream", "name": "stdout", "text": "42\n"}
ERROR = {
    "output_type": "error",
    "ename": "ZeroDivisionError",
    "evalue": "division by zero",
    "traceback": ["\x1b[31mTraceback\x1b[0m", "ZeroDivisionError: division by zero"],
}


def test_outputs_and_how_the_cell_ended() -> None:
    result = {"output_type": "execute_result", "data": {"text/plain": "[0, 1]"}}
    image = {"output_type": "display_data", "data": {"image/png": "..."}}
    text = render([PRINTED, result, image], status="ok", limit=1000, timeout=60)
    assert text == "42\n[0, 1]\n[display data: image/png]\n"
    # An error's traceback, its colours gone; or only `Name: message` where brief.
    assert render([ERROR], status="error", limit=1000, timeout=60) == (
        "Traceback\nZeroDivisionError: division by zero"
    )
    brief = render([ERROR], status="error", limit=1000, timeout=60, brief_errors=True)
    assert brief == "ZeroDivisionError: division by zero\n"
    assert render([], status="ok", limit=1000, timeout=60) == NO_OUTPUT
    assert render([PRINTED], status="timeout", limit=1000, timeout=30).endswith(
        "[the cell ran longer than 30 s and was interrupted]"
    )
    assert "did not stop when interrupted: its kernel was killed]" in render(
        [], status="killed", limit=1000, timeout=30
    )
    died = render([], status="died", limit=1000, timeout=30, exit="signal SIGKILL")
    assert died == "\n[the kernel died during this cell (signal SIGKILL)]"


def test_a_long_output_keeps_its_head_and_tail_and_says_what_was_cut() -> None:
    lines = "".join(f"line {i}\n" for i in range(1000))
    text = render([{"output_type": "stream", "text": lines}], status="ok", limit=300, timeout=0)
    assert text.startswith("line 0\n") and text.endswith("line 999\n")
    cut = len(lines) - 300
    assert f"[... {cut} characters cut from the middle of this output" in text


def test_a_silent_cells_report_is_read_after_its_marker() -> None:
    marker = "PRIME_TEST "
    noise = {"output_type": "stream", "text": "warming up\nPRIME_TEST {bad json\n"}
    printed = {"output_type": "stream", "text": 'PRIME_TEST {"saved": ["x"]}\n'}
    assert report([noise, printed], "ok", marker) == {"saved": ["x"]}
    assert report([printed], "error", marker) is None  # a failed cell reports nothing
    assert report([noise], "ok", marker) is None
