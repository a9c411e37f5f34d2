"""Harness entry kinds: what each is, where its files live, and the names it is known by."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class HarnessKind(str, Enum):
    NOTE = "note"
    MEMORY = "memory"
    SKILL = "skill"
    SUBAGENT = "subagent"
    EXAMPLE = "example"


@dataclass(frozen=True)
class KindSpec:
    kind: HarnessKind
    folder: str  # under a harness root (`.prime/harness/` or `~/.prime/harness/`)
    title: str
    description: str
    plural: str  # a heading over entries of the kind


KINDS: dict[HarnessKind, KindSpec] = {
    s.kind: s
    for s in [
        KindSpec(
            HarnessKind.NOTE,
            "notes",
            "Prompt note",
            "standing instructions added to every session's context (`notes/<id>.md`)",
            "Prompt notes",
        ),
        KindSpec(
            HarnessKind.MEMORY,
            "memory",
            "Memory",
            "a fact learned, with where it came from (`memory/<id>.md`)",
            "Memories",
        ),
        KindSpec(
            HarnessKind.SKILL,
            "skills",
            "Skill",
            "Agent Skills format: `skills/<id>/SKILL.md` plus optional files and an entrypoint",
            "Skills",
        ),
        KindSpec(
            HarnessKind.SUBAGENT,
            "subagents",
            "Sub-agent",
            "a named recipe for a child — instructions, `model`, `budget`, `max_turns` "
            "(`subagents/<id>.md`; `rlm(prompt, subagent=...)`)",
            "Sub-agents",
        ),
        KindSpec(
            HarnessKind.EXAMPLE,
            "examples",
            "Worked example",
            "a verified task, the code that answered it and the outcome, learned from a session "
            "(`examples/<id>.md`); shown to similar later tasks, not to every session",
            "Worked examples",
        ),
    ]
}

# Every name a kind is accepted under (URLs, the REPL, the CLI): the kind and its folder.
ALIASES: dict[str, HarnessKind] = {
    **{s.folder: k for k, s in KINDS.items()},
    **{k.value: k for k in KINDS},
    "memories": HarnessKind.MEMORY,
}

# Names of kinds before a rename -> the names now; still accepted, with a warning, for one
# release. A sub-agent was a "spec", a word that here also means a schedule's timing.
DEPRECATED: dict[str, str] = {"spec": "subagent", "specs": "subagents"}
ALIASES.update({old: ALIASES[new] for old, new in DEPRECATED.items()})


def deprecation(name: str) -> str | None:
    """The warning for a kind given under its old name (None: not an old name)."""
    new = DEPRECATED.get(name.lower())
    if new is None:
        return None
    return (
        f"the harness kind {name!r} is deprecated: use {new!r} "
        "(the old name goes in the next release)"
    )
