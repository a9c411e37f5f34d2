"""The CLI's text view renders every trajectory event kind the protocol defines."""

from __future__ import annotations

from typing import Any

from prime_kernel.cli.render import RENDERERS, render
from prime_kernel.protocol.events import EVENTS, EventKind

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
