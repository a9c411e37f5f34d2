"""The reply a refinement asks a model for: its JSON Schema, the grammar it is decoded under,
and parsing it.

The model replies with JSON validated against `REPLY_SCHEMA`. Where the backend can (llama.cpp,
hosted models litellm says take a schema) decoding is constrained to that schema, tightened by
`constrained_schema` so its longest reply fits the reply's token budget: its strings and arrays
are all bounded, so the grammar, not the token limit, ends the reply.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import jsonschema

from ..protocol.errors import PrimeError

# What a refinement may edit (worked examples are learned, never refined).
EDITABLE = ("note", "memory", "skill", "subagent")


def _text(most: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": most}


# Every string and array is bounded: under a grammar (llama.cpp's json_schema) the bounds are
# what ends the reply — a small model otherwise rambles inside one string until max_tokens.
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["summary", "rationale", "expected_outcome", "edits"],
    "additionalProperties": False,
    "properties": {
        "summary": {"type": "string", "minLength": 1, "maxLength": 300},
        "rationale": _text(800),
        "expected_outcome": _text(300),
        "edits": {
            "type": "array",
            "maxItems": 8,
            "items": {
                "type": "object",
                "required": ["op", "kind", "id", "reason"],
                "additionalProperties": False,
                "properties": {
                    "op": {"enum": ["create", "update", "delete"]},
                    "kind": _text(20),
                    "id": _text(64),
                    "title": _text(200),
                    "content": _text(3000),
                    "metadata": {
                        "type": "object",
                        "maxProperties": 6,
                        "properties": {
                            "model": _text(100),
                            "max_turns": {"type": "integer", "minimum": 1, "maximum": 1000},
                            "entrypoint": _text(100),
                            "budget": {
                                "type": "object",
                                "maxProperties": 4,
                                "additionalProperties": {"type": "number"},
                            },
                        },
                        "additionalProperties": {
                            "type": ["string", "number", "boolean"],
                            "maxLength": 200,
                        },
                    },
                    "files": {
                        "type": "object",
                        "maxProperties": 4,
                        "additionalProperties": _text(6000),
                    },
                    "reason": _text(300),
                    "evidence": {
                        "type": "array",
                        "maxItems": 8,
                        "items": {
                            "type": "object",
                            "required": ["session_id"],
                            "additionalProperties": False,
                            "properties": {
                                "session_id": _text(64),
                                "turn": {"type": "integer", "minimum": 0, "maximum": 100000},
                            },
                        },
                    },
                },
            },
        },
    },
}


# The brief reply a small model is asked for (a profile's `brief_refinement`): one edit of
# text — no files or metadata, the fields that make a reply long — its strings short. On a CPU
# the reply is the dearer part, every token written one at a time, and the default model fills
# its strings to their bound: in bench/bench_refine.py its summary, rationale and reason ran to
# their limits, and a reply of one edit took ~220 tokens at bounds of 120/160/120/80/400/120.
# The note's content keeps the most room: it is the part that reaches later sessions. Every
# reply it allows matches REPLY_SCHEMA.
BRIEF_LENGTHS = {
    "summary": 100,
    "rationale": 100,
    "expected_outcome": 80,
    "title": 60,
    "content": 400,
    "reason": 80,
}
BRIEF_EDITS = 1
BRIEF_EVIDENCE = 2


def _brief(schema: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(schema)
    top = out["properties"]
    top["edits"]["maxItems"] = BRIEF_EDITS
    edit = top["edits"]["items"]["properties"]
    del edit["metadata"], edit["files"]
    edit["evidence"]["maxItems"] = BRIEF_EVIDENCE
    for name, most in BRIEF_LENGTHS.items():
        (top if name in top else edit)[name]["maxLength"] = most
    return out


# Characters a reply token stands for, at the least, when sizing a grammar to a token budget
# (JSON of English words runs about four; digits and punctuation fewer).
CHARS_PER_TOKEN = 3


def _longest(schema: dict[str, Any]) -> int:
    """The most characters an instance of a (bounded, closed) schema can take, compact JSON."""
    kinds = schema.get("type")
    if "enum" in schema:
        return max(len(json.dumps(v)) for v in schema["enum"])
    if kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
        return int(schema["maxLength"]) + 2
    if kinds in ("integer", "number"):
        return 16
    if kinds == "array":
        return 2 + int(schema["maxItems"]) * (_longest(schema["items"]) + 1)
    if kinds == "object":
        props = schema.get("properties") or {}
        return 2 + sum(len(k) + 4 + _longest(v) for k, v in props.items())
    return 8


def _scaled(schema: dict[str, Any], factor: float) -> dict[str, Any]:
    """A copy with every length and count cut by `factor` (at least 1 item, 8 characters) and
    free-form keys closed off (their number and names would be unbounded)."""
    out = dict(schema)
    if "maxLength" in out:
        out["maxLength"] = max(8, int(out["maxLength"] * factor))
    if "maxItems" in out:
        out["maxItems"] = max(1, int(out["maxItems"] * factor))
    if isinstance(out.get("items"), dict):
        out["items"] = _scaled(out["items"], factor)
    if "properties" in out:
        out["properties"] = {k: _scaled(v, factor) for k, v in out["properties"].items()}
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = False
        out.pop("maxProperties", None)
    return out


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """Only edits that can pass: the kinds refinement may edit, ids spelled as ids, and a title
    and content in each (a small model left the title out, and every skill it proposed was
    refused for want of one; the title comes first, so the content follows from it)."""
    item = schema["properties"]["edits"]["items"]
    item["required"] = ["op", "kind", "id", "title", "content", "reason"]
    edit = item["properties"]
    edit["kind"] = {"enum": list(EDITABLE)}
    edit["title"] = {**edit["title"], "minLength": 3}
    edit["content"] = {**edit["content"], "minLength": 8}
    most = edit["id"]["maxLength"]
    edit["id"] = {
        "type": "string",
        "maxLength": most,
        "pattern": f"^[a-z0-9][a-z0-9._-]{{0,{most - 1}}}$",
    }
    return schema


def constrained_schema(reply_tokens: int, *, brief: bool = False) -> dict[str, Any]:
    """REPLY_SCHEMA (or, `brief`, the small model's shorter reply) tightened for decoding under
    a grammar: the longest reply it allows fits in `reply_tokens`, so the grammar — not the
    token limit — ends it, and it always parses; and only kinds and ids an edit may have.
    Every reply it allows matches REPLY_SCHEMA too."""
    base = _brief(REPLY_SCHEMA) if brief else REPLY_SCHEMA
    budget = max(1, reply_tokens) * CHARS_PER_TOKEN
    low, high = 0.0, 1.0
    if _longest(_scaled(base, high)) <= budget:
        return _closed(_scaled(base, high))
    for _ in range(30):
        mid = (low + high) / 2
        if _longest(_scaled(base, mid)) <= budget:
            low = mid
        else:
            high = mid
    return _closed(_scaled(base, low))


def tokens_needed(schema: dict[str, Any]) -> int:
    """The reply tokens the longest reply `schema` allows may take: the request's max_tokens,
    so that the limit never cuts a reply the grammar would still let grow."""
    return -(-_longest(schema) // CHARS_PER_TOKEN)


def response_format(reply_tokens: int, *, brief: bool = False) -> dict[str, Any]:
    """The OpenAI-style `response_format` that constrains a reply to the schema."""
    schema = constrained_schema(reply_tokens, brief=brief)
    return {
        "type": "json_schema",
        "json_schema": {"name": "harness_refinement", "schema": schema, "strict": False},
    }


def parse_reply(text: str) -> dict[str, Any]:
    """The JSON object in a model reply (a ```json fence is allowed); PrimeError if invalid."""
    body = text.strip()
    fence = re.search(r"```(?:json)?\s*\n(.*?)```", body, re.DOTALL)
    if fence:
        body = fence.group(1).strip()
    try:
        data = json.loads(body)
    except ValueError as e:
        raise PrimeError(f"the refinement reply is not JSON: {e}") from None
    try:
        jsonschema.validate(data, REPLY_SCHEMA)
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise PrimeError(
            f"the refinement reply does not match the schema at {where}: {e.message}"
        ) from None
    return data
