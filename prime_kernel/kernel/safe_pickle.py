"""Unpickling values from another session without running its code.

A pickle is a program: `pickle.loads` calls whatever callables the bytes name, so a child's
answer could run a shell command in its parent. Values crossing between sessions (answers,
contexts) are therefore loaded by an unpickler that resolves only the names below — plain data
types of the standard library, numpy and pandas — and refuses anything else with a message
that names what was refused and how to allow it. Stdlib only (it runs in kernels and in the
server); numpy and pandas are imported only when a pickle names them.
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
import sys
import threading
from typing import Any

_STDLIB: dict[str, tuple[str, ...]] = {
    "builtins": (
        "bool",
        "bytearray",
        "bytes",
        "complex",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "range",
        "set",
        "slice",
        "str",
        "tuple",
        "object",
        "Ellipsis",
        "NotImplemented",
        # Exceptions are data too (a child may answer with one); constructing one runs
        # nothing but its own initialiser.
        "ArithmeticError",
        "AssertionError",
        "AttributeError",
        "Exception",
        "FileNotFoundError",
        "IndexError",
        "KeyError",
        "LookupError",
        "NotImplementedError",
        "OSError",
        "RuntimeError",
        "StopIteration",
        "TimeoutError",
        "TypeError",
        "ValueError",
        "ZeroDivisionError",
    ),
    # protocol 0-2 pickles of bytes; any codec name only reaches the `encodings` package
    "_codecs": ("encode",),
    # protocol 0-1 pickles of objects without a reduce of their own (uuid.UUID): only
    # allowed classes get made, as protocol 2's NEWOBJ does
    "copyreg": ("_reconstructor",),
    "collections": ("Counter", "OrderedDict", "defaultdict", "deque"),
    "datetime": ("date", "datetime", "time", "timedelta", "timezone"),
    "decimal": ("Decimal",),
    "fractions": ("Fraction",),
    "uuid": ("UUID", "SafeUUID"),
    "zoneinfo": ("ZoneInfo",),
}

_NUMPY: dict[str, tuple[str, ...]] = {
    "numpy": ("dtype", "ndarray", "bool_"),
    "numpy._core.multiarray": ("_reconstruct", "scalar"),
    "numpy.core.multiarray": ("_reconstruct", "scalar"),
    "numpy._core.numeric": ("_frombuffer",),
    "numpy.core.numeric": ("_frombuffer",),
    "numpy.ma": ("MaskedArray",),
    "numpy.ma.core": ("MaskedArray", "_mareconstruct"),
    "numpy.dtypes": ("StringDType",),
}

_PANDAS: dict[str, tuple[str, ...]] = {
    "pandas": (
        "Categorical",
        "CategoricalDtype",
        "CategoricalIndex",
        "DataFrame",
        "DatetimeIndex",
        "DatetimeTZDtype",
        "Float64Dtype",
        "Index",
        "Int64Dtype",
        "Interval",
        "IntervalDtype",
        "MultiIndex",
        "NA",
        "Period",
        "PeriodDtype",
        "RangeIndex",
        "Series",
        "SparseDtype",
        "StringDtype",
        "TimedeltaIndex",
        "PeriodIndex",
        "IntervalIndex",
        "BooleanDtype",
        "Int32Dtype",
        "Float32Dtype",
    ),
    "pandas.arrays": (
        "BooleanArray",
        "DatetimeArray",
        "FloatingArray",
        "IntegerArray",
        "IntervalArray",
        "PeriodArray",
        "SparseArray",
        "StringArray",
        "TimedeltaArray",
    ),
    "pandas._libs.arrays": ("__pyx_unpickle_NDArrayBacked",),
    "pandas._libs.internals": ("_unpickle_block",),
    "pandas._libs.interval": ("__pyx_unpickle_IntervalMixin",),
    "pandas._libs.sparse": ("IntIndex", "BlockIndex"),
    "pandas._libs.tslibs.nattype": ("_nat_unpickle",),
    "pandas._libs.tslibs.timedeltas": ("_timedelta_unpickle",),
    "pandas._libs.tslibs.timestamps": ("_unpickle_timestamp",),
    "pandas._libs.tslibs.offsets": (
        "Day",
        "Hour",
        "Minute",
        "Second",
        "Milli",
        "Micro",
        "Nano",
        "Week",
        "MonthEnd",
        "MonthBegin",
        "QuarterEnd",
        "QuarterBegin",
        "YearEnd",
        "YearBegin",
        "BusinessDay",
    ),
    "pandas.core.indexes.base": ("_new_Index",),
    "pandas.core.indexes.datetimes": ("_new_DatetimeIndex",),
    "pandas.core.internals.managers": ("BlockManager", "SingleBlockManager"),
}

# Pickles call `getattr(cls, name)` for a few classes (ZoneInfo unpickles through
# `ZoneInfo._unpickle`); `getattr` itself would reach any method, so only these pairs.
_GETATTR = {("zoneinfo", "ZoneInfo", "_unpickle")}

_lock = threading.Lock()
_allowed: set[tuple[str, str]] = {
    (module, name)
    for table in (_STDLIB, _NUMPY, _PANDAS)
    for module, names in table.items()
    for name in names
}


class UnpicklingRefused(pickle.UnpicklingError):
    """The pickle names a callable or class outside the allow-list; nothing of it ran."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


def allow(*names: str) -> None:
    """Allow more classes or functions everywhere in this process, as 'module.Name' (or
    'module:Name'). Everything allowed can be called with arguments the pickle chooses."""
    with _lock:
        for full in names:
            module, _, name = full.replace(":", ".").rpartition(".")
            if not module or not name:
                raise ValueError(f"give 'module.Name', not {full!r}")
            _allowed.add((module, name))


def allowed() -> frozenset[tuple[str, str]]:
    with _lock:
        return frozenset(_allowed)


def loads(data: bytes, *, trusted: bool = False, what: str = "the value", hint: str = "") -> Any:
    """Unpickle `data`; unless `trusted`, only allow-listed names are resolved."""
    if trusted:
        return pickle.loads(data)
    return _Restricted(io.BytesIO(data), what, hint).load()


class _Restricted(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, what: str, hint: str) -> None:
        super().__init__(file)
        self._what = what
        self._hint = hint

    def find_class(self, module: str, name: str) -> Any:
        # Protocol 0-2 pickles name Python 2 modules; map them as pickle itself would (no
        # Python 3 module has those names), then resolve only the mapped, allowed name.
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        if module == "builtins" and name == "getattr":
            return _getattr
        with _lock:
            ok = (module, name) in _allowed
        if not ok:
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
        return getattr(sys.modules[module], name)


def _getattr(obj: Any, name: str) -> Any:
    owner = (getattr(obj, "__module__", ""), getattr(obj, "__qualname__", ""), name)
    if isinstance(obj, type) and owner in _GETATTR:
        return getattr(obj, name)
    raise UnpicklingRefused(
        f"refused to unpickle: it asks for the attribute {name!r} of {obj!r}", "getattr"
    )
