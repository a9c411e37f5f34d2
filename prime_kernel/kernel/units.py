"""`convert('6 ft 2 in', 'cm')`: unit conversion with exact factors, for the agent's REPL.

A small model writes the arithmetic of a conversion well and remembers its factors badly: it
took an inch for 3.54 cm, a foot for 3.048 cm and divided kilograms by the pound's factor. Here
each factor is the defined one (an inch is 0.0254 m exactly, a pound 0.45359237 kg), kept as a
Fraction so that a whole result stays whole: `convert('1 day', 'min')` is 1440, not 1440.0.
The quantity may be written as the task writes it, '6 feet 2 inches', which a small model
copies more reliably than it splits into two calls and a sum (it dropped the inches). A bare
'm' is metres, except beside a time, where only minutes make sense.

Units are named as people write them ('ft', 'feet', 'foot', 'km/h', '°C', 'square metres'),
case and plurals aside. A gallon, pint, cup or fluid ounce is the US one (the imperial gallon is
'imperial gallon'). Years and months are left out: their length varies, and datetime/calendar
count them right. Stdlib only: it runs in the agent's kernel.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from numbers import Integral, Real

__all__ = ["convert"]

_F = Fraction

# dimension -> {canonical name: (factor to the dimension's first unit, other names)}
_UNITS: dict[str, dict[str, tuple[Fraction, tuple[str, ...]]]] = {
    "length": {
        "m": (_F(1), ("metre", "meter")),
        "km": (_F(1000), ("kilometre", "kilometer")),
        "cm": (_F(1, 100), ("centimetre", "centimeter")),
        "mm": (_F(1, 1000), ("millimetre", "millimeter")),
        "um": (_F(1, 10**6), ("µm", "micrometre", "micrometer", "micron")),
        "nm": (_F(1, 10**9), ("nanometre", "nanometer")),
        "in": (_F("0.0254"), ("inch", "inches")),
        "ft": (_F("0.3048"), ("foot", "feet")),
        "yd": (_F("0.9144"), ("yard",)),
        "mi": (_F("1609.344"), ("mile",)),
        "nmi": (_F(1852), ("nautical mile",)),
    },
    "mass": {
        "kg": (_F(1), ("kilogram", "kilo", "kilogramme")),
        "g": (_F(1, 1000), ("gram", "gramme")),
        "mg": (_F(1, 10**6), ("milligram",)),
        "t": (_F(1000), ("tonne", "metric ton")),
        "lb": (_F("0.45359237"), ("pound",)),
        "oz": (_F("0.028349523125"), ("ounce",)),
        "st": (_F("6.35029318"), ("stone",)),
    },
    "time": {
        "s": (_F(1), ("second", "sec")),
        "ms": (_F(1, 1000), ("millisecond",)),
        "min": (_F(60), ("minute",)),
        "h": (_F(3600), ("hour", "hr")),
        "day": (_F(86400), ("d",)),
        "week": (_F(604800), ("wk",)),
    },
    "volume": {
        "l": (_F(1), ("litre", "liter")),
        "ml": (_F(1, 1000), ("millilitre", "milliliter", "cm3", "cc")),
        "cl": (_F(1, 100), ("centilitre", "centiliter")),
        "dl": (_F(1, 10), ("decilitre", "deciliter")),
        "m3": (_F(1000), ("cubic metre", "cubic meter")),
        "gal": (_F("3.785411784"), ("gallon", "us gallon")),
        "imperial gallon": (_F("4.54609"), ("uk gallon", "imp gal")),
        "qt": (_F("0.946352946"), ("quart",)),
        "pt": (_F("0.473176473"), ("pint",)),
        "cup": (_F("0.2365882365"), ()),
        "fl oz": (_F("0.0295735295625"), ("fluid ounce",)),
        "tbsp": (_F("0.01478676478125"), ("tablespoon",)),
        "tsp": (_F("0.00492892159375"), ("teaspoon",)),
    },
    "area": {
        # Also 'square metres', 'sq ft', 'm²': a length squared (see _lookup).
        "m2": (_F(1), ()),
        "km2": (_F(10**6), ()),
        "cm2": (_F(1, 10**4), ()),
        "ha": (_F(10**4), ("hectare",)),
        "acre": (_F("4046.8564224"), ("ac",)),
        "ft2": (_F("0.09290304"), ()),
        "in2": (_F("0.00064516"), ()),
        "mi2": (_F("2589988.110336"), ()),
    },
    "speed": {
        "m/s": (_F(1), ("metre/second", "meter/second", "mps")),
        "km/h": (_F(1000, 3600), ("kmh", "kph", "kilometre/hour", "kilometer/hour")),
        "mph": (_F("1609.344") / 3600, ("mi/h", "mile/hour")),
        "kn": (_F(1852, 3600), ("knot", "kt")),
        "ft/s": (_F("0.3048"), ("fps", "foot/second", "feet/second")),
    },
    "energy": {
        "j": (_F(1), ("joule",)),
        "kj": (_F(1000), ("kilojoule",)),
        "cal": (_F("4.184"), ("calorie",)),
        "kcal": (_F(4184), ("kilocalorie",)),
        "wh": (_F(3600), ("watt hour", "watt-hour")),
        "kwh": (_F(3600000), ("kilowatt hour", "kilowatt-hour")),
    },
}

# Temperatures are not proportional: each is said as (scale, offset) with
# kelvin = (value + offset) * scale.
_TEMPERATURES: dict[str, tuple[Fraction, Fraction, tuple[str, ...]]] = {
    "C": (_F(1), _F("273.15"), ("celsius", "centigrade")),
    "F": (_F(5, 9), _F("459.67"), ("fahrenheit",)),
    "K": (_F(1), _F(0), ("kelvin",)),
}


def _names() -> dict[str, tuple[str, str]]:
    """Every accepted (normalised) name -> (dimension, canonical name)."""
    said = [
        (name, dimension, unit)
        for dimension, units in _UNITS.items()
        for unit, (_, others) in units.items()
        for name in (unit, *others)
    ]
    said += [
        (name, "temperature", unit)
        for unit, (_, _, others) in _TEMPERATURES.items()
        for name in (unit.lower(), *others)
    ]
    names = {name: (dimension, unit) for name, dimension, unit in said}
    if len(names) != len(said):  # one name for two units: a table error, found at import
        raise AssertionError("a unit name is given twice in prime_kernel.kernel.units")
    return names


_NAMES = _names()


def _normal(unit: str) -> str:
    text = unit.strip().lower().replace("²", "2").replace("³", "3")
    text = re.sub(r"^(?:degrees?|deg)\s*|[°º]\s*", "", text)
    text = re.sub(r"\s+per\s+", "/", text)
    text = re.sub(r"\s*/\s*", "/", text)
    text = re.sub(r"\s+", " ", text)
    # 'sq ft' and 'sq. m' say a length squared, as 'square feet' does.
    return re.sub(r"^(?:sq\.?|square) ?([a-z]+)$", r"square \1", text)


def _lookup(unit: object) -> tuple[str, str]:
    if not isinstance(unit, str):
        raise TypeError(f"a unit is a str such as 'km' or 'lb', not {type(unit).__name__}")
    name = _normal(unit)
    candidates = [name]
    # Plurals: 'metres', 'inches', 'hrs', 'square miles', 'kilometres/hour'.
    for suffix in ("es", "s"):
        head, _, tail = name.partition("/")
        if len(head) > 2 and head.endswith(suffix):
            candidates.append(head[: -len(suffix)] + (f"/{tail}" if tail else ""))
    for candidate in candidates:
        if candidate in _NAMES:
            return _NAMES[candidate]
        side = candidate.removeprefix("square ")
        if side != candidate and _NAMES.get(side, ("", ""))[0] == "length":
            area = f"{_NAMES[side][1]}2"
            if area in _UNITS["area"]:
                return "area", area
    known = "; ".join(f"{dimension}: {', '.join(units)}" for dimension, units in _UNITS.items())
    raise ValueError(
        f"unknown unit {unit!r}. Known units ({known}; temperature: C, F, K). "
        "Years and months vary in length: count them with datetime or calendar."
    )


def _exact(value: object) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (Real, Decimal)):
        raise TypeError(f"convert() needs a number to convert, not {type(value).__name__}")
    if isinstance(value, Integral):
        return Fraction(int(value))
    if isinstance(value, Fraction):
        return value
    if not math.isfinite(value):
        raise ValueError(f"convert() needs a finite number, not {value!r}")
    # A float's decimal digits, as the person wrote them: 0.1 is 1/10, not the nearest binary.
    return Fraction(str(value))


_NUMBER = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+"
# A number that starts a part of a quantity: at the start or after a space, comma or letter
# ('6ft2in'), and followed by its unit (so the 2 of 'km2' is not one).
_PART = re.compile(rf"(?:^|(?<=[\s,a-zA-Z]))({_NUMBER})\s*(?=[^\d\s.,])")


def _quantity(text: str) -> list[tuple[Fraction, str]]:
    """'6 ft 2 in' as [(6, 'ft'), (2, 'in')]; 'a day' as [(1, 'day')]; '5' as [(5, '')]."""
    text = text.strip()
    if re.fullmatch(_NUMBER, text):
        return [(Fraction(text.replace(",", "")), "")]
    starts = list(_PART.finditer(text))
    if not starts:
        return [(Fraction(1), re.sub(r"^(?:an?|one)\s+", "", text, flags=re.IGNORECASE))]
    if text[: starts[0].start()].strip():
        raise ValueError(f"cannot read {text!r} as a quantity such as '6 ft 2 in' or '5 kg'")
    parts = []
    ends = [m.start() for m in starts[1:]] + [len(text)]
    for m, end in zip(starts, ends, strict=True):
        unit = re.sub(r"(?:[\s,]+and)?[\s,]*$", "", text[m.end() : end])
        parts.append((Fraction(m[1].replace(",", "")), unit))
    return parts


def convert(value: float | str, unit: str, to_unit: str | None = None) -> float:
    """A quantity in another unit, with exact factors: `convert('6 ft 2 in', 'cm')` (the
    quantity as text, its parts added up), `convert(5, 'kg', 'lb')` (a number and its unit).

    The result is an int when the quantity's numbers are whole and so is the result
    (`convert('3 weeks', 'h')` is 504), else a float. Units of another kind (kg to m), a unit it
    does not know, or a quantity without its unit is an error that says what it wants.
    """
    if to_unit is None:
        target = unit
        if not isinstance(value, str):
            raise TypeError(
                f"convert({value!r}, {unit!r}) does not say what {value!r} is in: write "
                f"convert({value!r}, 'kg', {unit!r}), or the quantity as text: "
                f"convert('{value} kg', {unit!r})"
            )
        parts = _quantity(value)
        if not all(name for _, name in parts):
            raise ValueError(f"{value!r} has no unit: write it as '{value} kg', say")
        whole = "." not in value
    else:
        target = to_unit
        if isinstance(value, str):
            parts = _quantity(value)
            if len(parts) > 1 or parts[0][1]:
                raise TypeError(f"{value!r} names its own unit: convert({value!r}, {to_unit!r})")
            parts = [(parts[0][0], unit)]
            whole = "." not in value
        else:
            parts = [(_exact(value), unit)]
            whole = isinstance(value, (Integral, Fraction))
    if len(parts) > 1 and _lookup(target)[0] == "temperature":
        raise ValueError(f"a temperature is one value, not {value!r}")
    result = sum((_one(amount, name, target) for amount, name in parts), Fraction(0))
    if whole and result.denominator == 1:
        return int(result)
    return float(result)


def _one(amount: Fraction, from_unit: str, to_unit: str) -> Fraction:
    (from_dim, source), (to_dim, target) = _lookup(from_unit), _lookup(to_unit)
    # A bare 'm' beside a time can only be minutes, as in '1 h 30 m' (the model wrote
    # convert('1 day', 'm') for minutes, and again after being told 'm' is metres).
    if {from_dim, to_dim} == {"time", "length"}:
        if from_dim == "length" and _normal(from_unit) == "m":
            from_dim, source = "time", "min"
        elif to_dim == "length" and _normal(to_unit) == "m":
            to_dim, target = "time", "min"
    if from_dim != to_dim:
        raise ValueError(
            f"cannot convert {from_unit!r} ({from_dim}) to {to_unit!r} ({to_dim}): "
            "they measure different things"
        )
    if from_dim == "temperature":
        scale, offset, _ = _TEMPERATURES[source]
        to_scale, to_offset, _ = _TEMPERATURES[target]
        return (amount + offset) * scale / to_scale - to_offset
    units = _UNITS[from_dim]
    return amount * units[source][0] / units[target][0]
