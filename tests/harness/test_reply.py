"""The refinement reply's schema and the grammar it is decoded under: every string and array is
bounded, the longest reply fits the token budget (so the grammar, not the token limit, ends
it), whatever the grammar allows the validator takes, and the brief reply a small model is
asked for is shorter and still a REPLY_SCHEMA reply. No model, no server."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from prime_kernel.harness import reply as replies


def unbounded(schema: dict[str, Any], path: str = "$") -> list[str]:
    """The paths of `schema` that could grow without limit."""
    found: list[str] = []
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "string" in kinds and "maxLength" not in schema:
        found.append(path)
    if "array" in kinds:
        if "maxItems" not in schema:
            found.append(path)
        found += unbounded(schema["items"], path + "[]")
    if "object" in kinds:
        for name, sub in (schema.get("properties") or {}).items():
            found += unbounded(sub, f"{path}.{name}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            if "maxProperties" not in schema:
                found.append(path + ".*")
            found += unbounded(extra, path + ".*")
    return found


def longest_reply(schema: dict[str, Any]) -> dict[str, Any]:
    """A reply as long as `schema` lets each top-level string and the list of edits be."""
    top = schema["properties"]
    edit = {"op": "create", "kind": "skill", "id": "x" * 8, "title": "t" * 3}
    edit |= {"content": "c" * 8, "reason": "r" * 8}
    return {
        "summary": "s" * top["summary"]["maxLength"],
        "rationale": "r" * top["rationale"]["maxLength"],
        "expected_outcome": "",
        "edits": [edit] * top["edits"]["maxItems"],
    }


def test_every_string_and_array_of_the_reply_is_bounded():
    """Under a grammar the bounds end the reply: nothing in it may grow without limit."""
    assert unbounded(replies.REPLY_SCHEMA) == []


@pytest.mark.parametrize("brief", [False, True])
@pytest.mark.parametrize("tokens", [300, 1200, 8000])
def test_the_grammar_fits_the_token_budget_and_the_validator_takes_what_it_allows(
    tokens: int, brief: bool
):
    tight = replies.response_format(tokens, brief=brief)["json_schema"]["schema"]
    assert unbounded(tight) == [] and "*" not in json.dumps(tight)
    # The request's max_tokens: what the longest reply needs, never more than the budget
    # (300 tokens is under the schema's floor of one edit of short strings).
    assert replies.tokens_needed(tight) <= tokens or tokens == 300
    most = longest_reply(tight)
    jsonschema.validate(most, tight)
    replies.parse_reply(json.dumps(most))  # what the grammar allows, the validator takes
    # An edit without a title is not in the grammar: a skill would be refused for it.
    del most["edits"][0]["title"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(most, tight)


def test_the_brief_reply_is_shorter_and_edits_text_only():
    full = replies.constrained_schema(1200)
    brief = replies.constrained_schema(1200, brief=True)
    assert replies.tokens_needed(brief) < replies.tokens_needed(full) <= 1200
    edits = brief["properties"]["edits"]
    assert edits["maxItems"] == replies.BRIEF_EDITS
    assert edits["items"]["properties"]["evidence"]["maxItems"] == replies.BRIEF_EVIDENCE
    assert "files" not in edits["items"]["properties"]
    assert "metadata" not in edits["items"]["properties"]
    for name, most in replies.BRIEF_LENGTHS.items():
        where = brief["properties"] if name in brief["properties"] else edits["items"]["properties"]
        assert where[name]["maxLength"] == most
    # A sub-agent's metadata is a full reply's, not a brief one's.
    with_metadata = longest_reply(full)
    with_metadata["edits"][0] = {**with_metadata["edits"][0], "metadata": {"max_turns": 3}}
    jsonschema.validate(with_metadata, full)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(with_metadata, brief)
    # A tighter budget scales the brief reply down too.
    smaller = replies.constrained_schema(400, brief=True)
    assert replies.tokens_needed(smaller) <= 400
    assert smaller["properties"]["summary"]["maxLength"] < replies.BRIEF_LENGTHS["summary"]
