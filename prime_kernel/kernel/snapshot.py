"""Saving and restoring a REPL namespace when the daemon passivates a session.

The daemon runs `save()` in a silent cell before shutting an idle session's kernel down and
`restore()` in the new kernel when a message revives it. Each prints one line the daemon reads:
``PRIME_SNAPSHOT {json}``. Values travel as pickles through the daemon's blob store; modules by
name; what cannot be pickled (or would not unpickle in a fresh kernel, like functions and
classes defined in the REPL) is named, not lost silently. A variable spilled to disk
(`gc(spill=...)`, see memory.py) is kept as its reference, so a restored REPL gets its
stand-in back without the value passing through the snapshot; values that would take a
snapshot over its cap (`c.Spills.snapshot_cap`) are named as skipped.
"""

from __future__ import annotations

import inspect
import json
import pickle
import types
from typing import Any

from . import memory
from .primitives import client, user_namespace

MARKER = "PRIME_SNAPSHOT "


def _namespace() -> tuple[dict[str, Any], set[str]]:
    """The live user namespace and the names IPython (or our install) put there itself."""
    try:
        from IPython import get_ipython

        ip = get_ipython()
    except ImportError:
        ip = None
    if ip is None:
        return user_namespace(), set()
    return ip.user_ns, set(ip.user_ns_hidden)


def _why_not(value: Any) -> str | None:
    """Why `value` would not come back in a fresh kernel, or None if it should."""
    if (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ == "__main__":
        return "defined in the REPL"
    if getattr(type(value), "__module__", None) == "__main__":
        return "an instance of a class defined in the REPL"
    return None


def names() -> list[str]:
    """The user's names in the REPL (what a snapshot would try to save), sorted."""
    ns, hidden = _namespace()
    return sorted(n for n in ns if not n.startswith("_") and n not in hidden)


def save(cap: int = 0) -> None:
    """Pickle the namespace to a blob; `cap`: most bytes of values it holds (0: no cap)."""
    ns, hidden = _namespace()
    values: dict[str, bytes] = {}
    modules: dict[str, str] = {}
    spilled: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    total = 0
    for name, value in list(ns.items()):
        if name.startswith("_") or name in hidden:
            continue
        if memory.is_spilled(value):  # before any isinstance(), which would load it
            spilled[name] = memory.where(value)
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
            continue
        reason = _why_not(value)
        if reason is None:
            try:
                data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as e:
                reason = f"cannot be pickled: {type(e).__name__}: {e}"[:200]
            else:
                if cap and total + len(data) > cap:
                    reason = (
                        f"{len(data)} bytes would take the snapshot over its cap of {cap} bytes "
                        "(c.Spills.snapshot_cap): spill it with gc(spill=[...])"
                    )
                else:
                    values[name] = data
                    total += len(data)
        if reason is not None:
            skipped[name] = reason
    snapshot = {"values": values, "modules": modules, "skipped": skipped, "spilled": spilled}
    data = pickle.dumps(snapshot)
    blob = client().request("POST", "blobs", raw=data, query={"what": "snapshot"})
    report = {
        "blob_id": blob["blob_id"],
        "size": len(data),
        "saved": sorted([*values, *modules, *spilled]),
        "skipped": skipped,
    }
    print(MARKER + json.dumps(report))


def restore() -> None:
    import importlib

    ns, _ = _namespace()
    snap = pickle.loads(client().request("GET", "snapshot", binary=True))
    restored: list[str] = []
    failed: dict[str, str] = {}
    for name, module in snap["modules"].items():
        try:
            ns[name] = importlib.import_module(module)
            restored.append(name)
        except Exception as e:
            failed[name] = f"import {module} failed: {e}"[:200]
    for name, data in snap["values"].items():
        try:
            ns[name] = pickle.loads(data)
            restored.append(name)
        except Exception as e:
            failed[name] = f"{type(e).__name__}: {e}"[:200]
    for name, ref in snap.get("spilled", {}).items():
        memory.bind(name, ref["blob"], ref["size"], ref["type"])  # still on disk
        restored.append(name)
    report = {"restored": sorted(restored), "failed": failed, "skipped": snap["skipped"]}
    print(MARKER + json.dumps(report))
