"""Agentic garbage collection of the REPL: `gc()`, `gc(drop=[...])`, `gc(spill=[...])`.

    gc()                      # the REPL's variables with their sizes, biggest first
    gc(drop=["df_raw"])       # delete them (and IPython's cached references to them)
    gc(spill=["features"])    # move them to disk; they reload on first use
    gc.collect()              # `gc` is also the standard library's gc module

How a spilled variable behaves. Its value is pickled and handed to the daemon, which keeps it
on disk (readable back only by this session), and the variable is rebound to a stand-in — a
`Spilled` object that knows where the value is. Then:

- a cell that names the variable gets the real value: before such a cell runs, an IPython AST
  transformer reloads every spilled variable it names and rebinds it, so the cell sees the
  original type, identity-free copy of the value and all (`type(x)`, `x is y` behave as for any
  freshly unpickled object);
- any other use goes through the stand-in: a function reading the global, a container holding
  it, `globals()["x"]`. Its first attribute access, operator, call, `len()`, `iter()`, `repr()`,
  `isinstance()` (through `__class__`) ... loads the value, rebinds the name, and delegates that
  and every later operation to it. Only `type(stand_in)` and `id()` tell it apart;
- `gc()` lists it as spilled with its size on disk; snapshots (passivation, restarts) keep the
  reference, not the value, so a revived REPL gets the stand-in back.

Spilling frees memory only if nothing else holds the value: other variables bound to the same
object keep it alive (`gc(spill=...)` says so). IPython's output cache (`_`, `Out`) is cleared
of it, as `%xdel` does.

The daemon also spills automatically, at a compaction and before passivation, every variable
over `c.Spills.spill_threshold` (16 MiB), and tells the model. Stdlib only.
"""

from __future__ import annotations

import ast
import gc as _stdlib_gc
import json
import operator
import os
import pickle
import sys
import types
import urllib.parse
from collections import deque
from typing import Any

from .primitives import client

MARKER = "PRIME_GC "
# Objects visited to size one variable before the size is reported as "at least".
MAX_NODES = 100_000
# Containers longer than this are sized from a sample of their items.
SAMPLE = 200

_spilled: dict[str, Spilled] = {}  # name -> the stand-in now bound to it


def _shell() -> Any:
    try:
        from IPython import get_ipython

        return get_ipython()
    except ImportError:
        return None


def _namespace() -> tuple[dict[str, Any], set[str]]:
    ip = _shell()
    if ip is None:
        import __main__

        return vars(__main__), set()
    return ip.user_ns, set(ip.user_ns_hidden)


# -- sizes ---------------------------------------------------------------------------------------
def is_spilled(value: Any) -> bool:
    """Whether `value` is a stand-in — asked without loading it (any other isinstance() of a
    stand-in reads its `__class__`, which loads the value)."""
    return type(value) is Spilled


def where(stand_in: Spilled) -> dict[str, Any]:
    """Where a stand-in's value is: {"blob", "size" (bytes on disk), "type"}."""
    get = object.__getattribute__
    return {
        "blob": get(stand_in, "_prime_blob"),
        "size": get(stand_in, "_prime_size"),
        "type": get(stand_in, "_prime_type"),
    }


def load(stand_in: Spilled) -> Any:
    """The value a stand-in stands for (loaded, and its name rebound, the first time)."""
    return object.__getattribute__(stand_in, "_prime_load")()


def deep_size(value: Any) -> tuple[int, bool]:
    """Bytes `value` holds, following containers and instance dicts; and whether it is exact
    (False: sampled, or cut off after MAX_NODES objects)."""
    if is_spilled(value):
        return int(where(value)["size"]), True
    seen: set[int] = set()
    stack: list[tuple[Any, float]] = [(value, 1.0)]
    total, exact, nodes = 0.0, True, 0
    while stack:
        obj, weight = stack.pop()
        if id(obj) in seen or is_spilled(obj):
            continue
        seen.add(id(obj))
        nodes += 1
        if nodes > MAX_NODES:
            return int(total), False
        total += weight * _own_size(obj)
        children, scale = _children(obj)
        if scale != 1.0:
            exact = False
        stack.extend((c, weight * scale) for c in children)
    return int(total), exact


def _own_size(obj: Any) -> int:
    nbytes = getattr(obj, "nbytes", None) if _array_like(obj) else None
    if isinstance(nbytes, int):  # numpy arrays (and the like): their buffer, unless a view
        return sys.getsizeof(obj, 0) if _is_view(obj) else max(nbytes, sys.getsizeof(obj, 0))
    usage = (
        getattr(obj, "memory_usage", None) if type(obj).__module__.startswith("pandas") else None
    )
    if callable(usage):
        try:
            total = usage(deep=True)
            return int(total.sum() if hasattr(total, "sum") else total)
        except Exception:
            pass
    try:
        return sys.getsizeof(obj)
    except Exception:
        return 0


def _array_like(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] in ("numpy", "torch", "cupy", "jax", "pyarrow")


def _is_view(obj: Any) -> bool:
    return getattr(obj, "base", None) is not None and type(obj).__module__.startswith("numpy")


def _children(obj: Any) -> tuple[list[Any], float]:
    """The objects `obj` holds that count towards its size, and the weight of each (a sample
    of a long container stands for the rest)."""
    if isinstance(obj, (str, bytes, bytearray, int, float, complex, bool, type(None), range)):
        return [], 1.0
    if isinstance(obj, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
        return [], 1.0
    if _array_like(obj) or type(obj).__module__.startswith("pandas"):
        return [], 1.0
    if isinstance(obj, dict):
        items: list[Any] = [x for kv in obj.items() for x in kv]
    elif isinstance(obj, (list, tuple, set, frozenset, deque)):
        items = list(obj) if len(obj) <= SAMPLE * 4 else None  # type: ignore[assignment]
        if items is None:
            seq = list(obj) if not isinstance(obj, (list, tuple)) else obj
            step = len(seq) / SAMPLE
            return [seq[int(i * step)] for i in range(SAMPLE)], len(seq) / SAMPLE
    else:
        items = []
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            items.append(attrs)
        for slot in getattr(type(obj), "__slots__", ()) or ():
            if isinstance(slot, str) and hasattr(obj, slot):
                items.append(getattr(obj, slot))
    return items, 1.0


def _fmt(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def _type_name(value: Any) -> str:
    if is_spilled(value):
        return str(where(value)["type"])
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


class Listing(list[dict[str, Any]]):
    """gc()'s result: a list of {"name", "type", "size", "exact", "spilled"}, biggest first,
    shown as a table."""

    def __repr__(self) -> str:
        if not self:
            return "(no variables)"
        width = max(len(r["name"]) for r in self)
        lines = []
        for r in self:
            where = "  spilled to disk: reloads on first use" if r["spilled"] else ""
            approx = "" if r["exact"] else "~"
            lines.append(
                f"{r['name']:<{width}}  {approx + _fmt(r['size']):>10}  {r['type']}{where}"
            )
        total = sum(r["size"] for r in self if not r["spilled"])
        spilled = sum(1 for r in self if r["spilled"])
        tail = f", {spilled} spilled to disk" if spilled else ""
        lines.append(f"{_fmt(total)} in memory in {len(self) - spilled} variables{tail}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


def listing() -> Listing:
    ns, hidden = _namespace()
    rows: list[dict[str, Any]] = []
    for name, value in list(ns.items()):
        if name.startswith("_") or name in hidden:
            continue
        spilled = is_spilled(value)
        if not spilled and isinstance(value, types.ModuleType):
            continue
        size, exact = deep_size(value)
        rows.append(
            {
                "name": name,
                "type": _type_name(value),
                "size": size,
                "exact": exact,
                "spilled": spilled,
            }
        )
    rows.sort(key=lambda r: (-r["size"], r["name"]))
    return Listing(rows)


# -- the stand-in --------------------------------------------------------------------------------
class Spilled:
    """Stands for a variable whose value is on disk; the first use loads it back."""

    __slots__ = ("_prime_blob", "_prime_name", "_prime_size", "_prime_type", "_prime_value")

    def __init__(self, name: str, blob: str, size: int, type_name: str) -> None:
        object.__setattr__(self, "_prime_name", name)
        object.__setattr__(self, "_prime_blob", blob)
        object.__setattr__(self, "_prime_size", size)
        object.__setattr__(self, "_prime_type", type_name)
        object.__setattr__(self, "_prime_value", _UNLOADED)

    def _prime_load(self) -> Any:
        value = object.__getattribute__(self, "_prime_value")
        if value is _UNLOADED:
            blob = object.__getattribute__(self, "_prime_blob")
            data = client().request(
                "GET", f"spills/{urllib.parse.quote(blob)}", binary=True, timeout=3600
            )
            value = pickle.loads(data)  # our own value, readable only by this session
            object.__setattr__(self, "_prime_value", value)
            name = object.__getattribute__(self, "_prime_name")
            ns, _ = _namespace()
            if ns.get(name) is self:
                ns[name] = value
            if _spilled.get(name) is self:
                del _spilled[name]
        return value

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(stand_in, list) is that of the value
        return type(self._prime_load())

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._prime_load(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._prime_load(), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(self._prime_load(), attr)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return self._prime_load().__reduce_ex__(protocol)


_UNLOADED = object()


def _delegate(fn: Any) -> Any:
    def method(self: Spilled, *args: Any, **kwargs: Any) -> Any:
        return fn(self._prime_load(), *args, **kwargs)

    return method


def _reflected(fn: Any) -> Any:
    def method(self: Spilled, other: Any) -> Any:
        return fn(other, self._prime_load())

    return method


_OPERATORS = {
    "__len__": len,
    "__iter__": iter,
    "__reversed__": reversed,
    "__bool__": bool,
    "__contains__": lambda v, x: x in v,
    "__getitem__": operator.getitem,
    "__setitem__": operator.setitem,
    "__delitem__": operator.delitem,
    "__call__": lambda v, *a, **k: v(*a, **k),
    "__repr__": repr,
    "__str__": str,
    "__format__": format,
    "__hash__": hash,
    "__dir__": dir,
    "__int__": int,
    "__float__": float,
    "__complex__": complex,
    "__index__": operator.index,
    "__round__": round,
    "__bytes__": bytes,
    "__fspath__": os.fspath,
    "__neg__": operator.neg,
    "__pos__": operator.pos,
    "__abs__": abs,
    "__invert__": operator.invert,
    "__enter__": lambda v: v.__enter__(),
    "__exit__": lambda v, *a: v.__exit__(*a),
    "__array__": lambda v, *a, **k: v.__array__(*a, **k),
    "__eq__": operator.eq,
    "__ne__": operator.ne,
    "__lt__": operator.lt,
    "__le__": operator.le,
    "__gt__": operator.gt,
    "__ge__": operator.ge,
}
_BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "matmul": operator.matmul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
    "and": operator.and_,
    "xor": operator.xor,
    "or": operator.or_,
}
for _name, _fn in _OPERATORS.items():
    setattr(Spilled, _name, _delegate(_fn))
for _name, _fn in _BINARY.items():
    setattr(Spilled, f"__{_name}__", _delegate(_fn))
    setattr(Spilled, f"__r{_name}__", _reflected(_fn))
    setattr(Spilled, f"__i{_name}__", _delegate(getattr(operator, f"i{_name}")))
setattr(Spilled, "__divmod__", _delegate(divmod))  # noqa: B010
setattr(Spilled, "__rdivmod__", _reflected(divmod))  # noqa: B010


# -- reloading before a cell ---------------------------------------------------------------------
class _Reloader(ast.NodeTransformer):
    """Before a cell runs: reload the spilled variables it reads, so it sees the real values."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        if not _spilled:
            return node
        ns, _ = _namespace()
        for name, stand_in in list(_spilled.items()):
            if ns.get(name) is not stand_in:  # rebound or deleted since
                del _spilled[name]
        read = {
            n.id
            for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in _spilled
        }
        if not read:
            return node
        call = ast.parse(
            "__import__('prime_kernel.kernel.memory', fromlist=['reload'])"
            f".reload({sorted(read)!r})"
        ).body[0]
        at = 0
        while at < len(node.body) and _is_future(node.body[at]):
            at += 1
        node.body.insert(at, call)
        return ast.fix_missing_locations(node)


def _is_future(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
        return True
    return isinstance(stmt, ast.Expr) and isinstance(getattr(stmt, "value", None), ast.Constant)


_hooked = False


def _hook() -> None:
    global _hooked
    ip = _shell()
    if _hooked or ip is None:
        return
    ip.ast_transformers.append(_Reloader())
    _hooked = True


def reload(names: list[str]) -> None:
    """Load the spilled variables `names` back into the namespace (called before a cell)."""
    for name in names:
        stand_in = _spilled.get(name)
        if stand_in is not None:
            load(stand_in)


def bind(name: str, blob: str, size: int, type_name: str) -> Spilled:
    """Bind `name` to a stand-in for a value already on disk (a restored snapshot)."""
    ns, _ = _namespace()
    stand_in = Spilled(name, blob, size, type_name)
    ns[name] = stand_in
    _spilled[name] = stand_in
    _hook()
    return stand_in


# -- drop and spill ------------------------------------------------------------------------------
def _check_names(names: Any, what: str) -> list[str]:
    if names is None:
        return []
    if isinstance(names, str):
        names = [names]
    try:
        names = list(names)
    except TypeError:
        raise TypeError(f"gc({what}=...) takes a list of variable names") from None
    ns, hidden = _namespace()
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"gc({what}=...) takes variable names (strings), not {bad[0]!r}")
    missing = [n for n in names if n not in ns or n in hidden or n.startswith("_")]
    if missing:
        raise NameError(
            f"gc({what}=...): no variable {', '.join(map(repr, missing))} in the REPL "
            "(see gc() for the names); nothing was changed"
        )
    return list(dict.fromkeys(names))


def _forget(name: str) -> Any:
    """Unbind `name`, and clear IPython's caches of its value (the output history, `_`,
    `_N`): what %xdel does, without also deleting other names bound to the same value."""
    ns, _ = _namespace()
    value = ns.pop(name, None)
    ip = _shell()
    if ip is None or value is None:
        return value
    caches = [ns, ip.history_manager.output_hist]
    for cache in caches:
        for key in [k for k, v in list(cache.items()) if v is value]:
            if cache is not ns or str(key).startswith("_"):
                del cache[key]
    for attr in ("_", "__", "___"):
        if getattr(ip.displayhook, attr, None) is value:
            setattr(ip.displayhook, attr, None)
    last = getattr(ip, "last_execution_result", None)
    if last is not None and getattr(last, "result", None) is value:
        ip.last_execution_result = None
    return value


def spill_values(names: list[str]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Pickle each variable and hand it to the daemon, then rebind each to a stand-in.

    Every value is pickled and handed over before any variable changes: one that cannot be
    pickled (TypeError), or that the daemon refuses (too large), leaves them all as they were.
    """
    ns, _ = _namespace()
    blobs: dict[str, tuple[bytes, str]] = {}
    for name in names:
        value = ns[name]
        if is_spilled(value):
            continue  # on disk already
        if isinstance(value, (types.ModuleType, types.FunctionType, type)):
            raise TypeError(
                f"gc(spill=...): {name!r} is a {type(value).__name__}, not data; nothing was "
                "spilled"
            )
        try:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            raise TypeError(
                f"gc(spill=...): {name!r} ({_type_name(value)}) cannot be pickled, so it cannot "
                f"go to disk ({type(e).__name__}: {e}); nothing was spilled"
            ) from None
        blobs[name] = (data, _type_name(value))
    uploaded = {}
    for name, (data, type_name) in blobs.items():
        query = {"name": name, "type": type_name}
        uploaded[name] = client().request("POST", "spills", raw=data, query=query, timeout=3600)
    spilled, shared = [], {}
    for name, (data, type_name) in blobs.items():
        value = _forget(name)
        # Held elsewhere too (beyond `value` here and getrefcount's argument)?
        if sys.getrefcount(value) > 2:
            shared[name] = "another reference keeps its value in memory too"
        del value
        blob = uploaded[name]["blob_id"]
        bind(name, blob, len(data), type_name)
        spilled.append({"name": name, "blob_id": blob, "size": len(data), "type": type_name})
    return spilled, shared


def auto_spill(threshold: int) -> None:
    """Spill every variable of at least `threshold` bytes (the daemon's call, at a compaction
    or before passivation); prints what it did for the daemon to read."""
    ns, _ = _namespace()
    big = [r["name"] for r in listing() if not r["spilled"] and r["size"] >= threshold]
    spilled: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    for name in big:
        value = ns.get(name)
        if is_spilled(value) or isinstance(value, (types.ModuleType, types.FunctionType, type)):
            continue
        try:
            done, _ = spill_values([name])
            spilled += done
        except Exception as e:
            failed[name] = str(e)[:300]
    print(MARKER + json.dumps({"spilled": spilled, "failed": failed}))


class _GC:
    """`gc()`: the REPL's variables by size; `gc(drop=[...])`, `gc(spill=[...])`. Anything
    else is the standard library's gc module (`gc.collect()`)."""

    def __call__(self, drop: Any = None, spill: Any = None) -> Listing:
        drops, spills = _check_names(drop, "drop"), _check_names(spill, "spill")
        both = set(drops) & set(spills)
        if both:
            raise ValueError(f"gc(): {', '.join(sorted(both))} both dropped and spilled")
        ns, _ = _namespace()
        before = {n: deep_size(ns[n])[0] for n in drops}
        spilled, shared = spill_values(spills) if spills else ([], {})
        for name in drops:
            _spilled.pop(name, None)
            _forget(name)  # its value goes with the last reference
        _stdlib_gc.collect()
        if drops or spilled:
            client().request("POST", "gc", {"dropped": drops, "spilled": spilled})
            parts = []
            if drops:
                parts.append("dropped " + ", ".join(f"{n} ({_fmt(before[n])})" for n in drops))
            if spilled:
                parts.append(
                    "spilled "
                    + ", ".join(f"{s['name']} ({_fmt(s['size'])})" for s in spilled)
                    + " to disk: each reloads on first use"
                )
            for name, why in shared.items():
                parts.append(f"{name}: {why}")
            print("gc: " + "; ".join(parts))
        return listing()

    def __getattr__(self, name: str) -> Any:
        return getattr(_stdlib_gc, name)

    def __repr__(self) -> str:
        return (
            "<gc(): your variables by size; gc(drop=[names]); gc(spill=[names]) moves them to "
            "disk (they reload on first use). gc.collect() etc.: the standard gc module>"
        )


gc = _GC()

EXPORTS: dict[str, Any] = {"gc": gc}
