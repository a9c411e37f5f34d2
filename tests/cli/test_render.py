"""The CLI's text view renders every trajectory event kind the protocol defines."""

from __future__ import annotations

from typing import Any

from prime_kernel.cli.common import print_table
from prime_kernel.cli.render import RENDERERS, render
from prime_kernel.protocol.events import EVENTS, EventKind
from prime_kernel.util.format import fmt_interval, fmt_usage

SAMPLES: dict[str, Any] = {
    "string": "text",
    "number": 1.5,
    "integer": 3,
    "boolean": True,
    "array": [],
    "object": {},
}


def sample(schema: dict[str, Any]) -> Any:
    """A value of the smallest kind `schema` allows."""
    if "enum" in schema:
        return schema["enum"][0]
    kinds = schema.get("type", "object")
    kind = next(k for k in ([kinds] if isinstance(kinds, str) else kinds) if k != "null")
    if kind == "object" and "properties" in schema:
        return {k: sample(v) for k, v in schema["properties"].items()}
    return SAMPLES[kind]


def test_every_event_kind_has_a_renderer() -> None:
    assert set(RENDERERS) == set(EventKind)
    for kind, spec in EVENTS.items():
        event = {"seq": 1, "kind": kind.value, "data": sample(spec.schema)}
        lines = render(event)
        assert all(isinstance(line, str) and "\n" not in line for line in lines), kind


def test_a_cell_shows_its_code_then_its_output() -> None:
    event = {
        "kind": "cell",
        "data": {
            "code": "print(6 * 7)",
            "source": "agent",
            "status": "ok",
            "execution_count": 4,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "42\n"}],
        },
    }
    assert render(event) == ["cell [4] ok:", "> print(6 * 7)", "  42"]


def test_an_unknown_kind_shows_its_data() -> None:
    assert render({"kind": "newer", "data": {"x": 1}}) == ['newer: {"x": 1}']


def test_the_harness_setup_cell_is_not_the_agents() -> None:
    event = {
        "kind": "cell",
        "data": {"code": "import math", "source": "setup", "status": "ok", "outputs": []},
    }
    assert render(event)[0] == "harness setup cell ok:"


def test_a_snapshot_says_what_a_new_kernel_would_lack_and_why() -> None:
    data = {"reason": "turn", "saved": ["math", "n"], "skipped": {"f": "defined in the REPL"}}
    assert render({"kind": "snapshot", "data": data}) == [
        "REPL snapshot (turn): 2 names kept for a restart; a new kernel would lack f "
        "(defined in the REPL)"
    ]


def test_usage_counts_read_as_words() -> None:
    one = {"total_tokens": 5, "prompt_tokens": 4, "completion_tokens": 1, "model_calls": 1}
    assert fmt_usage({**one, "cells": 1}).endswith("$0, 1 model call, 1 cell")
    assert fmt_usage({**one, "model_calls": 2}).endswith("$0, 2 model calls, 0 cells")


def test_usage_shows_the_cached_share_and_the_money_saved() -> None:
    u = {"total_tokens": 10_300, "prompt_tokens": 10_000, "completion_tokens": 300}
    u |= {"cached_tokens": 9_300, "cost": 0.0121, "uncached_cost": 0.0345, "model_calls": 3}
    assert fmt_usage(u) == (
        "10.3k tok (10.0k in / 300 out; 93% cached), $0.0121 (saved $0.0224), "
        "3 model calls, 0 cells"
    )
    # Usage recorded before uncached_cost existed, or a cache write dearer than a plain read.
    assert "saved" not in fmt_usage({**u, "uncached_cost": 0}) + fmt_usage({**u, "cost": 0.04})


def test_intervals_read_as_a_person_writes_them() -> None:
    assert [fmt_interval(s) for s in (600, 5400, 90, 1.5, 86405, 0)] == [
        "10m",
        "1h 30m",
        "1m 30s",
        "1.5s",
        "1d 5s",
        "0s",
    ]


def test_a_table_has_a_header_and_columns(capsys: Any) -> None:
    print_table(["ID", "STATE", "TASK"], [["s1", "DONE", "a"], ["s22", "INACTIVE", "b c"]])
    assert capsys.readouterr().out.splitlines() == [
        "ID   STATE     TASK",
        "s1   DONE      a",
        "s22  INACTIVE  b c",
    ]
