"""Unpickling values from another session without running its code, or building a bomb.

A pickle is a program: `pickle.loads` calls whatever callables the bytes name, so a child's
answer could run a shell command in its parent. Values crossing between sessions (answers,
contexts, the contexts an export writes beside its notebooks) are therefore loaded by an
unpickler that resolves only the names pickle_names.py lists — plain data types of the
standard library, numpy and pandas — and refuses anything else with a message that names what
was refused and how to allow it.

Plain data can still be a bomb: `bytearray(2**30)` is 30 bytes of pickle and a GiB of memory,
and a list of a million references to one large string costs nothing to build and everything
to print. So the unpickler also counts what it builds — every element put into a container,
every object a constructor returns, and before a call, what the call's arguments ask it to
allocate — and refuses past `max_bytes` in all (default `MAX_BYTES`, which a Prime kernel sets
to the daemon's `max_blob_bytes`) or past `max_depth` levels of nesting. It is the pure-Python
unpickler of the standard library with those checks added (the C one cannot be watched).

`load(file)` is the same, for a file (what an exported notebook calls). Stdlib only (it runs
in kernels, in notebooks and in the server); numpy and pandas are imported only when a pickle
names them.
"""

from __future__ import annotations

import _compat_pickle
import io
import itertools
import pickle
import struct
import sys
from collections.abc import Iterable
from typing import IO, Any

# `allow` and `allowed` live with the names; they are called here (`safe_pickle.allow`), as
# the refusal message and the docs say.
from .pickle_names import GETATTR, SIZED, STDLIB, allow, allowed, is_allowed

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "UnpicklingRefused",
    "allow",
    "allowed",
    "load",
    "loads",
    "set_limits",
]

# What one load may build, in bytes, and how deeply nested (a kernel sets MAX_BYTES from
# the daemon's max_blob_bytes through its boot document).
MAX_BYTES = 256 * 1024 * 1024
MAX_DEPTH = 200


class UnpicklingRefused(pickle.UnpicklingError):
    """The pickle names a callable or class outside the allow-list, or would build more than
    the limits allow; nothing of it ran."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


def set_limits(*, max_bytes: int | None = None, max_depth: int | None = None) -> None:
    """This process's defaults for `loads` and `load` (a kernel's boot sets them)."""
    global MAX_BYTES, MAX_DEPTH
    if max_bytes is not None and max_bytes > 0:
        MAX_BYTES = int(max_bytes)
    if max_depth is not None and max_depth > 0:
        MAX_DEPTH = int(max_depth)


def loads(
    data: bytes,
    *,
    trusted: bool = False,
    what: str = "the value",
    hint: str = "",
    max_bytes: int | None = None,
    max_depth: int | None = None,
) -> Any:
    """Unpickle `data`; unless `trusted`, only allow-listed names are resolved and at most
    `max_bytes` are built, `max_depth` levels deep (UnpicklingRefused otherwise)."""
    if trusted:
        return pickle.loads(data)
    return load(io.BytesIO(data), what=what, hint=hint, max_bytes=max_bytes, max_depth=max_depth)


def load(
    file: IO[bytes],
    *,
    what: str = "the value",
    hint: str = "",
    max_bytes: int | None = None,
    max_depth: int | None = None,
) -> Any:
    """`loads` for an open binary file: what an exported notebook's context cell calls. There
    is no trusted variant here: a person who trusts the file can call `pickle.load`."""
    limits = (max_bytes or MAX_BYTES, max_depth or MAX_DEPTH)
    unpickler = _Restricted(file, what, hint, *limits)
    value = unpickler.load()
    unpickler.check_depth(value)
    return value


def _sizes(args: Iterable[Any], counted: bool) -> int:
    """What a call with `args` may allocate beyond them: a `range` it may expand, and with
    `counted` (a constructor that takes a size: bytes(n), bytearray(n), an array's shape)
    the integers, a tuple of them as a product."""
    total = 0
    for arg in args:
        if isinstance(arg, range):
            total += len(arg) * 8
        elif counted and isinstance(arg, int) and not isinstance(arg, bool):
            total += max(arg, 0)
        elif counted and isinstance(arg, tuple) and arg and all(isinstance(a, int) for a in arg):
            product = 8
            for a in arg:
                product *= max(a, 0)
            total += product
        elif isinstance(arg, (tuple, list)) and len(arg) < 64:
            total += _sizes(arg, counted)
    return total


_CONTAINERS = (list, tuple, dict, set, frozenset)
_ZEROS = itertools.repeat(0)


# The standard library's pure-Python unpickler, whose opcodes can be watched one by one (its
# internals are not in the type stubs).
_PyUnpickler: Any = pickle._Unpickler


class _Restricted(_PyUnpickler):
    dispatch = dict(_PyUnpickler.dispatch)

    def __init__(self, file: IO[bytes], what: str, hint: str, max_bytes: int, depth: int) -> None:
        super().__init__(file)
        self._what = what
        self._hint = hint
        self._max_bytes = max_bytes
        self._max_depth = depth
        self._built = 0
        # Nesting depth of the containers built so far, by id (1: holds no container).
        self._depths: dict[int, int] = {}
        self._revisited = False
        self._sized: set[int] = set()  # ids of the callables in SIZED this pickle resolved

    # -- what may be named ----------------------------------------------------------------
    def find_class(self, module: str, name: str) -> Any:
        # Protocol 0-2 pickles name Python 2 modules; map them as pickle itself would (no
        # Python 3 module has those names), then resolve only the mapped, allowed name.
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        if module == "builtins" and name == "getattr":
            return _getattr
        if module == "copyreg" and name == "_reconstructor":
            return self._reconstructor
        if not is_allowed(module, name):
            full = f"{module}.{name}"
            hint = self._hint or "Load it with trusted=True if you trust its sender"
            raise UnpicklingRefused(
                f"refused to unpickle {self._what}: it names {full}, which is not a plain "
                f"data type, and unpickling it could run code from another session. Nothing "
                f"of it was run. {hint}; or allow the type in every session with "
                f"prime_kernel.kernel.safe_pickle.allow({full!r}) (in this kernel) or "
                f"c.PrimeProvisioner.unpickle_allow = [{full!r}] (server config).",
                full,
            )
        __import__(module)
        found = getattr(sys.modules[module], name)
        if (module, name) in SIZED:
            self._sized.add(id(found))
        return found

    # -- counting what is built -------------------------------------------------------------
    def _count(self, size: int, doing: str) -> None:
        self._built += size
        if self._built > self._max_bytes:
            raise UnpicklingRefused(
                f"refused to unpickle {self._what}: {doing} would make it build more than "
                f"{self._max_bytes} bytes in all (the limit for a value passed between "
                "sessions, c.Admission.max_blob_bytes; or pass max_bytes=). Nothing of it was "
                "kept.",
                "size",
            )

    def _put(self, container: Any, items: list[Any]) -> None:
        """`items` go into `container`: count them (a reference to a large object counts its
        size every time: whatever walks the value later pays it every time), and the depth."""
        depths = self._depths
        # map() keeps the loops in C: this runs for every element of every container.
        self._built += 8 * len(items) + sum(map(sys.getsizeof, items))
        if self._built > self._max_bytes:
            self._count(0, "its containers")
        deepest = max(map(depths.get, map(id, items), _ZEROS), default=0)
        key = id(container)
        if deepest >= depths.get(key, 1):
            if deepest >= self._max_depth:
                self._too_deep()
            depths[key] = deepest + 1
        elif key not in depths:
            depths[key] = 1

    def _too_deep(self) -> None:
        raise UnpicklingRefused(
            f"refused to unpickle {self._what}: it is nested more than {self._max_depth} "
            "levels deep (pass max_depth= to allow it). Nothing of it was kept.",
            "depth",
        )

    def _call(self, func: Any, args: Iterable[Any]) -> None:
        """Before `func(*args)`: what it may allocate."""
        args = tuple(args)
        size = _sizes(args, id(func) in self._sized)
        if size:
            name = getattr(func, "__qualname__", repr(func))
            self._count(size, f"calling {name} with these arguments")

    def _made(self, value: Any) -> None:
        self._count(_size(value), f"making a {type(value).__name__}")

    def _reconstructor(self, cls: Any, base: Any, state: Any) -> Any:
        """What copyreg's reconstructor does for protocol 0-1 objects (make `cls` through
        `base` with `state`), its constructor call counted first."""
        if state is not None:
            self._call(base, (state,))
        if base is object:
            value = object.__new__(cls)
        else:
            value = base.__new__(cls, state)
            if base.__init__ != object.__init__:
                base.__init__(value, state)
        self._made(value)
        return value

    # The container opcodes of pickle._Unpickler, each counting what it puts in.
    def load_append(self) -> None:
        stack = self.stack
        value = stack.pop()
        self._put(stack[-1], [value])
        stack[-1].append(value)

    def load_appends(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        self._put(target, items)
        try:
            extend = target.extend
        except AttributeError:
            for item in items:
                target.append(item)
        else:
            extend(items)

    def load_setitem(self) -> None:
        stack = self.stack
        value = stack.pop()
        key = stack.pop()
        self._put(stack[-1], [key, value])
        stack[-1][key] = value

    def load_setitems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        self._put(target, items)
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def load_additems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        self._put(target, items)
        if isinstance(target, set):
            target.update(items)
        else:
            for item in items:
                target.add(item)

    def _made_from(self, make: Any, items: list[Any]) -> None:
        value = make(items)
        self._put(value, items)
        self.append(value)

    def load_tuple(self) -> None:
        self._made_from(tuple, self.pop_mark())

    def load_tuple1(self) -> None:
        self.stack[-1] = self._tuple([self.stack[-1]])

    def load_tuple2(self) -> None:
        self.stack[-2:] = [self._tuple(self.stack[-2:])]

    def load_tuple3(self) -> None:
        self.stack[-3:] = [self._tuple(self.stack[-3:])]

    def _tuple(self, items: list[Any]) -> tuple[Any, ...]:
        value = tuple(items)
        self._put(value, items)
        return value

    def load_list(self) -> None:
        self._made_from(list, self.pop_mark())

    def load_dict(self) -> None:
        self._made_from(lambda i: {i[n]: i[n + 1] for n in range(0, len(i), 2)}, self.pop_mark())

    def load_frozenset(self) -> None:
        self._made_from(frozenset, self.pop_mark())

    def load_reduce(self) -> None:
        stack = self.stack
        args = stack.pop()
        self._call(stack[-1], args)
        stack[-1] = stack[-1](*args)
        self._made(stack[-1])

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        self._call(cls, args)
        obj = cls.__new__(cls, *args)
        self._made(obj)
        self.append(obj)

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        self._call(cls, (*args, *kwargs.values()))
        obj = cls.__new__(cls, *args, **kwargs)
        self._made(obj)
        self.append(obj)

    def _instantiate(self, klass: Any, args: list[Any]) -> None:
        self._call(klass, args)
        super()._instantiate(klass, args)
        self._made(self.stack[-1])

    def load_build(self) -> None:
        stack = self.stack
        inst = stack[-2]
        if isinstance(inst, type) or type(inst).__name__ == "module":
            # Setting attributes of a class would change it for the whole process.
            raise UnpicklingRefused(
                f"refused to unpickle {self._what}: it sets attributes of "
                f"{getattr(inst, '__qualname__', inst)!r} itself. Nothing of it was kept.",
                "build",
            )
        state = stack[-1]
        self._put(inst, [state])
        super().load_build()

    def _memo_get(self, key: int) -> None:
        value = self.memo[key]
        if isinstance(value, _CONTAINERS):
            # A container reached again may grow after it was put in another: the depths
            # counted on the way are then checked again once the value is whole.
            self._revisited = True
        self.append(value)

    def load_get(self) -> None:
        self._memo_get(int(self.readline()[:-1]))

    def load_binget(self) -> None:
        self._memo_get(self.read(1)[0])

    def load_long_binget(self) -> None:
        (key,) = struct.unpack("<I", self.read(4))
        self._memo_get(key)

    for _name in (
        "APPEND",
        "APPENDS",
        "SETITEM",
        "SETITEMS",
        "ADDITEMS",
        "TUPLE",
        "TUPLE1",
        "TUPLE2",
        "TUPLE3",
        "LIST",
        "DICT",
        "FROZENSET",
        "REDUCE",
        "NEWOBJ",
        "NEWOBJ_EX",
        "BUILD",
        "GET",
        "BINGET",
        "LONG_BINGET",
    ):
        dispatch[getattr(pickle, _name)[0]] = locals()[f"load_{_name.lower()}"]
    del _name

    # -- nesting ----------------------------------------------------------------------------
    def check_depth(self, value: Any) -> None:
        """After a pickle that reached a container again (see `_memo_get`), measure the
        value's nesting as a whole: iterative, each container once."""
        if not self._revisited:
            return
        limit = self._max_depth
        heights: dict[int, int] = {}
        stack: list[tuple[Any, bool]] = [(value, False)]
        while stack:
            node, done = stack.pop()
            key = id(node)
            if done:
                height = 1 + max((heights.get(id(c), 0) for c in _children(node)), default=0)
                heights[key] = height
                if height > limit:
                    self._too_deep()
                continue
            if key in heights or not isinstance(node, _CONTAINERS):
                continue
            heights[key] = 0  # in progress: a cycle does not recurse
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node) if isinstance(c, _CONTAINERS))


def _size(value: Any) -> int:
    """What a constructor's result holds of its own: the whole object for the standard
    library's types, the data of a numpy array, else the object itself. Not a pandas object's
    `nbytes` or `__sizeof__`: it is made empty and given its state afterwards (BUILD), and
    before that it reads uninitialised memory; its arrays are counted as they are made."""
    kind = type(value)
    if kind.__module__ in STDLIB or isinstance(value, (str, bytes, bytearray)):
        return sys.getsizeof(value)
    if kind.__module__.partition(".")[0] == "numpy":
        nbytes = getattr(value, "nbytes", None)
        if isinstance(nbytes, int):
            return nbytes
    return object.__sizeof__(value)


def _children(node: Any) -> Iterable[Any]:
    if isinstance(node, dict):
        return [*node.keys(), *node.values()]
    if isinstance(node, _CONTAINERS):
        return node
    return ()


def _getattr(obj: Any, name: str) -> Any:
    owner = (getattr(obj, "__module__", ""), getattr(obj, "__qualname__", ""), name)
    if isinstance(obj, type) and owner in GETATTR:
        return getattr(obj, name)
    raise UnpicklingRefused(
        f"refused to unpickle: it asks for the attribute {name!r} of {obj!r}", "getattr"
    )
