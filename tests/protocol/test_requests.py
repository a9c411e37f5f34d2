"""`SessionRequest` is the one definition of a session's creation arguments: the JSON Schemas of
the request bodies list the same fields, and a request survives its trip as a body. `SessionFilter`
is the one definition of a list's filters: read from a query, checked, and written as one."""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.parse
from pathlib import Path

import pytest

from prime_kernel.protocol import generate
from prime_kernel.protocol.errors import InvalidRequest
from prime_kernel.protocol.requests import (
    FIELDS,
    NO_CONTEXT,
    QUERY,
    RENAMED,
    SessionFilter,
    SessionRequest,
)
from prime_kernel.protocol.rest import ROUTES
from prime_kernel.protocol.states import SessionState
from prime_kernel.protocol.wire import MAX_INT

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


def test_a_filter_from_a_query_and_back() -> None:
    query = "state=done&state=Running&state=&root=r1&parent=p1&limit=5&changed_after=0&token=x"
    filters = SessionFilter.from_query(urllib.parse.parse_qs(query, keep_blank_values=True))
    assert filters == SessionFilter(
        frozenset({SessionState.DONE, SessionState.RUNNING}),
        root_id="r1",
        parent_id="p1",
        limit=5,
        changed_after=0,
    )
    assert SessionFilter.from_query(urllib.parse.parse_qs(filters.to_query())) == filters
    # Blank values are no filter; a name given twice counts once, its last value.
    blank = {"state": [" "], "root": [""], "limit": ["", " "], "changed_after": [""]}
    assert SessionFilter.from_query(blank) == SessionFilter() == SessionFilter.from_query({})
    assert SessionFilter().to_query() == ""
    assert SessionFilter.from_query({"limit": ["3", "9"], "root": ["a", "b"]}) == SessionFilter(
        root_id="b", limit=9
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"state": ["done", "bogus"]}, "unknown state 'BOGUS'; a state is one of ADMITTED, "),
        ({"limit": ["1e3"]}, "limit must be an integer, not '1e3'"),
        ({"limit": ["0"]}, f"limit must be an integer from 1 to {MAX_INT}"),
        ({"limit": [str(MAX_INT + 1)]}, f"limit must be an integer from 1 to {MAX_INT}"),
        ({"changed_after": ["-1"]}, f"changed_after must be an integer from 0 to {MAX_INT}"),
        ({"changed_after": ["nan"]}, "changed_after must be an integer, not 'nan'"),
    ],
)
def test_a_bad_query_says_what_is_wrong(query: dict[str, list[str]], message: str) -> None:
    with pytest.raises(InvalidRequest, match=re.escape(message)):
        SessionFilter.from_query(query)


def test_a_filter_made_in_code_is_checked_too() -> None:
    with pytest.raises(InvalidRequest, match="limit must be an integer from 1"):
        SessionFilter(limit=0)
    with pytest.raises(InvalidRequest, match="changed_after must be an integer from 0"):
        SessionFilter(changed_after=True)
    # The query names are what the REST API documents.
    route = next(r for r in ROUTES if (r.method, r.path) == ("GET", "/sessions"))
    assert set(re.findall(r"\?(\w+)=", route.summary)) == set(QUERY.values())


def test_the_lab_extension_gets_the_filter_and_its_query_names_from_here() -> None:
    # protocol.ts declares SessionFilter field by field and SESSION_FILTER_QUERY from QUERY, so
    # the lab extension's list has no filter of its own (and `generate --check` keeps it fresh).
    fields = dataclasses.fields(SessionFilter)
    assert set(QUERY) == {f.name for f in fields}
    assert all(f.metadata["description"] for f in fields)
    ts = generate.typescript()
    declared = ts[ts.index("export interface SessionFilter {") :]
    assert "  states?: readonly SessionState[];" in declared
    assert all(f"  {f.name}?: " in declared for f in fields)
    query_map = declared[declared.index("export const SESSION_FILTER_QUERY") :]
    assert query_map.startswith("export const SESSION_FILTER_QUERY: Readonly<Record<keyof ")
    assert json.dumps(QUERY, indent=2) in query_map
