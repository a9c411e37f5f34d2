"""The names a Prime unpickler resolves (safe_pickle.py): plain data types of the standard
library, numpy and pandas, and what a person allows beyond them (`allow`). Everything allowed
can be called with arguments the pickle chooses, so nothing here runs more than its own
constructor. Stdlib only; nothing named here is imported until a pickle names it.
"""

from __future__ import annotations

import threading

STDLIB: dict[str, tuple[str, ...]] = {
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

NUMPY: dict[str, tuple[str, ...]] = {
    "numpy": ("dtype", "ndarray", "bool_"),
    "numpy._core.multiarray": ("_reconstruct", "scalar"),
    "numpy.core.multiarray": ("_reconstruct", "scalar"),
    "numpy._core.numeric": ("_frombuffer",),
    "numpy.core.numeric": ("_frombuffer",),
    "numpy.ma": ("MaskedArray",),
    "numpy.ma.core": ("MaskedArray", "_mareconstruct"),
    "numpy.dtypes": ("StringDType",),
}

PANDAS: dict[str, tuple[str, ...]] = {
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
GETATTR = {("zoneinfo", "ZoneInfo", "_unpickle")}

_lock = threading.Lock()
_allowed: set[tuple[str, str]] = {
    (module, name)
    for table in (STDLIB, NUMPY, PANDAS)
    for module, names in table.items()
    for name in names
}


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


def is_allowed(module: str, name: str) -> bool:
    with _lock:
        return (module, name) in _allowed


# Constructors whose integer arguments are sizes of what they allocate.
SIZED = frozenset(
    {
        ("builtins", "bytes"),
        ("builtins", "bytearray"),
        ("numpy", "ndarray"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy.ma.core", "_mareconstruct"),
    }
)
