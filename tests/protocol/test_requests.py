"""`SessionRequest` is the one definition of a session's creation arguments: the JSON Schemas of
the request bodies list the same fields, and a request survives its trip as a body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prime_kernel.protocol.errors import InvalidRequest
from prime_kernel.protocol.requests import FIELDS, NO_CONTEXT, RENAMED, SessionRequest

SCHEMAS = Path(__file__).parents[2] / "prime_kernel" / "protocol" / "schemas"


def properties(name: str) -> set[str]:
    return set(json.loads((SCHEMAS / f"{name}.json").read_text())["properties"])


def test_the_schemas_and_the_dataclass_name_the_same_fields() -> None:
    # A person gives a context inline; a kernel uploads it first and names the blob.
    person, kernel = properties("create_session"), properties("create_child")
    assert person | kernel == set(FIELDS) | set(RENAMED)  # old names accepted one release
    assert person ^ kernel == {"context", "context_blob", "context_type"}


def test_a_request_as_a_body_and_back() -> None:
    request = SessionRequest("p", model="m", budget={"turns": 3}, persistent=True)
    body = request.to_json()
    assert body == {"prompt": "p", "model": "m", "budget": {"turns": 3}, "persistent": True}
    assert SessionRequest.from_json(body) == request
    assert SessionRequest().to_json() == {}
    inline = SessionRequest("p", context=None)  # None is a context like any other
    assert inline.has_context and inline.to_json() == {"prompt": "p", "context": None}
    assert not SessionRequest("p").has_context and repr(NO_CONTEXT) == "NO_CONTEXT"


def test_a_field_under_its_old_name_is_read_as_the_new_one() -> None:
    with pytest.warns(FutureWarning, match="'spec' is deprecated: use 'subagent'"):
        old = SessionRequest.from_json({"prompt": "p", "spec": "reviewer"})
    assert old == SessionRequest("p", subagent="reviewer")
    with pytest.raises(InvalidRequest, match="give 'subagent' only"):
        SessionRequest.from_json({"prompt": "p", "spec": "a", "subagent": "b"})
    schema = json.loads((SCHEMAS / "create_session.json").read_text())
    assert schema["properties"]["spec"]["deprecated"] is True
