"""Settings that moved to another class, kept working under their old name for one release.

A setting lives on the class that reads it (`c.KernelCustody.pool_size`, not
`c.Daemon.pool_size`). When one moves, its old spelling keeps working for a release, with a
warning, as jupyter_server did when settings moved off `NotebookApp` and `ServerApp`
(`ServerApp._warn_deprecated_config`): a value given under the old name is copied to the new
one unless the new one is given too, and then the new one wins.

`relocate` is the one mechanism: the class that lost the settings calls it on its constructor's
keyword arguments, before traitlets reads its config, with a table of `{name: new class}`. The
settings that moved off the Harness went to siblings of it, not to classes it builds, so the
daemon that builds them all relocates those, from its config (`HARNESS_MOVED`). A class that
was renamed relocates its old name's settings itself (`Spills`, once `Collector`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from traitlets.config import Config

# Settings that moved off the Harness (the entries and their history) to the daemon's services
# that read them: refinement's to the Refiner, learning's and recall's to the Learner.
HARNESS_MOVED = {
    name: new_cls
    for new_cls, names in {
        "Refiner": (
            "refine_model",
            "evidence_sessions",
            "refine_timeout",
            "refine_reply_tokens",
            "refine_prompt_tokens",
            "auto_refine_every",
            "auto_refine_after_failure",
            "refine_cooldown",
        ),
        "Learner": (
            "learn",
            "examples_shown",
            "cautions_shown",
            "example_min_coverage",
            "max_example_chars",
        ),
    }.items()
    for name in names
}


def relocate(
    owner: str, moved: Mapping[str, str], kwargs: dict[str, Any], *, arguments: bool = True
) -> list[str]:
    """Move the settings `moved` names from `owner` to their new classes, in place in `kwargs`
    (a Configurable's constructor arguments); the warnings to log, one per moved setting.

    Both spellings are read: `c.<owner>.<name>` in the config (the parent's, if `kwargs` gives
    none) and `<owner>(<name>=...)` (unless `arguments` is False: `kwargs` are not the owner's
    own but those of the class that builds it and its new homes side by side). The config is
    copied, never changed where it came from, and handed on in `kwargs["config"]`, so the
    classes the owner builds (`parent=owner`) read the settings where they live now.
    """
    given = kwargs.get("config")
    parent = kwargs.get("parent")
    if given is None and parent is not None:
        given = parent.config
    old_section = given.get(owner) if isinstance(given, Config) else None
    in_config = [n for n in moved if isinstance(old_section, Config) and n in old_section]
    in_kwargs = [n for n in moved if n in kwargs] if arguments else []
    if not in_config and not in_kwargs:
        return []
    # Copied two levels deep: the sections we touch are ours, the values are shared.
    config = Config()
    for section, values in (given or Config()).items():
        config[section] = Config(values) if isinstance(values, Config) else values
    notes = []
    for name in in_config:
        new_cls = moved[name]
        value = config[owner].pop(name)
        target = config[new_cls]
        if name not in target:
            target[name] = value
            notes.append(
                f"c.{owner}.{name} is deprecated: use c.{new_cls}.{name} "
                "(the old name goes in the next release)"
            )
        elif target[name] != value:
            notes.append(
                f"c.{owner}.{name} is deprecated and ignored: c.{new_cls}.{name} is set too, "
                "and wins"
            )
    for name in in_kwargs:
        new_cls = moved[name]
        config[new_cls][name] = kwargs.pop(name)  # an argument beats the config, as before
        notes.append(
            f"{owner}({name}=...) is deprecated: set c.{new_cls}.{name} "
            "(the old name goes in the next release)"
        )
    kwargs["config"] = config
    return notes


# The settings that moved off the Daemon to the service that reads them (`c.Daemon.<name>`
# still works this release, with a warning): {name: the class it moved to}.
MOVED = {
    name: new_cls
    for new_cls, names in {
        "KernelCustody": (
            "pool_size",
            "kernels_ahead",
            "kernel_start_timeout",
            "kernel_poll_interval",
            "cell_timeout",
            "interrupt_grace",
            "max_cell_output_bytes",
            "max_kernel_restarts",
            "keep_root_kernel",
            "max_kept_kernels",
            "prune_children_kernels",
        ),
        "Admission": (
            "default_model",
            "max_depth",
            "default_budget",
            "max_children",
            "max_batch",
            "max_name_chars",
            "max_prompt_chars",
            "max_blob_bytes",
        ),
        "Runs": ("loop_class",),
        # Where agent kernels run: the launcher's choice, and what the launchers read.
        "KernelPlacement": ("gateway_url", "kernel_launcher_class"),
        "GatewayLauncher": ("public_url",),
        "KernelLauncher": ("kernel_name",),
        "Mailbox": (
            "message_max_bytes",
            "max_pending_messages",
            "message_rate_limit",
            "message_rate_window",
        ),
        "ModelRouter": ("model_timeout", "direct_openai"),
        "Passivation": ("idle_timeout",),
        "Recovery": ("auto_resume", "stop_snapshot_timeout"),
        "Host": (
            "max_turns",
            "observation_chars",
            "model_kwargs",
            "compact_at",
            "compact_keep_recent",
            "snapshot_overhead",
            "max_llm_batch",
            "llm_batch_concurrency",
        ),
    }.items()
    for name in names
}
