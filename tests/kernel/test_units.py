"""convert(): the unit conversions the small models' REPL offers, with exact factors."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest

from prime_kernel.kernel.units import convert


def test_defined_factors_give_exact_results() -> None:
    assert convert(1, "in", "cm") == 2.54
    assert convert(6, "ft", "cm") + convert(2, "in", "cm") == pytest.approx(74 * 2.54)
    assert convert(1, "mi", "m") == 1609.344
    assert convert(1, "lb", "kg") == 0.45359237
    assert convert(5, "kg", "lb") == pytest.approx(5 / 0.45359237, rel=1e-15)
    assert convert(1, "gal", "l") == 3.785411784
    assert convert(1, "acre", "ft2") == 43560
    assert convert(1, "mph", "km/h") == 1.609344


def test_a_whole_result_of_a_whole_number_stays_an_int() -> None:
    assert convert(1, "day", "min") == 1440 and type(convert(1, "day", "min")) is int
    assert convert(3, "week", "h") == 504 and type(convert(3, "week", "h")) is int
    assert type(convert(1.0, "day", "min")) is float
    assert type(convert(1, "m", "ft")) is float
    # A float is taken at its decimal digits: 0.1 m is 10 cm, not 10.000000000000002.
    assert convert(0.1, "m", "cm") == 10.0
    assert convert(Fraction(1, 2), "h", "min") == 30
    assert convert(Decimal("1.5"), "h", "min") == 90.0


def test_a_quantity_is_read_as_a_task_writes_it() -> None:
    assert convert("6 feet 2 inches", "cm") == pytest.approx(74 * 2.54)
    assert convert("6ft2in", "cm") == convert("6 ft, 2 in", "cm") == convert("6 ft 2 in", "cm")
    assert convert("5 feet and 3 inches", "in") == 63
    assert convert("1 hour 30 minutes", "min") == 90
    assert convert("25 °C", "F") == 77 and convert("98.6°F", "C") == pytest.approx(37.0)
    assert convert("30 degrees Celsius", "F") == 86
    assert convert("a day", "min") == convert("day", "minutes") == 1440
    assert convert("1,000 m", "km") == 1 and type(convert("1,000 m", "km")) is int
    assert convert("2.5 km", "m") == 2500.0 and type(convert("2.5 km", "m")) is float
    # The 2 of km2 is the unit's, not a part's.
    assert convert("5 km2", "m2") == 5_000_000
    # A bare number in text takes the unit given, as a number does.
    assert convert("5", "kg", "lb") == convert(5, "kg", "lb")


def test_a_bare_m_beside_a_time_is_minutes() -> None:
    assert convert("1 day", "m") == 1440
    assert convert("1 h 30 m", "min") == 90
    assert convert(90, "m", "h") == 1.5
    assert convert("5 m", "ft") == pytest.approx(16.4041995)
    # Spelt out, metres stay metres.
    with pytest.raises(ValueError, match="'day' \\(time\\) to 'metres' \\(length\\)"):
        convert("1 day", "metres")


def test_temperatures_convert_with_their_offsets() -> None:
    assert convert(25, "C", "F") == 77
    assert convert(98.6, "F", "C") == pytest.approx(37.0)
    assert convert(0, "K", "C") == -273.15
    assert convert(-40, "F", "C") == -40
    assert convert(1, "degrees Celsius", "kelvin") == pytest.approx(274.15)


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("feet", "ft"),
        ("Foot", "ft"),
        ("inches", "in"),
        ("metres", "m"),
        ("meters", "m"),
        ("Kilometres", "km"),
        ("hrs", "h"),
        ("minutes", "min"),
        ("lbs", "lb"),
        ("pounds", "lb"),
        ("ounces", "oz"),
        ("US gallons", "gal"),
        ("fluid ounces", "fl oz"),
        ("miles per hour", "mph"),
        ("kilometres per hour", "km/h"),
        ("km / h", "km/h"),
        ("square feet", "ft2"),
        ("sq ft", "ft2"),
        ("sq. m", "m2"),
        ("m²", "m2"),
        ("square miles", "mi2"),
        ("°F", "F"),
        ("ºC", "C"),
        ("deg C", "C"),
    ],
)
def test_units_are_named_as_people_write_them(written: str, canonical: str) -> None:
    assert convert(7, written, canonical) == 7


def test_every_name_means_one_unit_and_converts_to_itself() -> None:
    from prime_kernel.kernel import units

    # _names() refuses a name given twice; every one it knows round-trips.
    for name, (_, canonical) in units._NAMES.items():
        assert convert(3, name, canonical) == 3, name


def test_a_mistake_says_what_is_known() -> None:
    with pytest.raises(ValueError, match=r"'kg' \(mass\) to 'm' \(length\)"):
        convert(1, "kg", "m")
    with pytest.raises(ValueError, match=r"unknown unit 'year'.*datetime or calendar") as e:
        convert(1, "year", "day")
    assert "length: m, km, cm" in str(e.value) and "temperature: C, F, K" in str(e.value)
    with pytest.raises(TypeError, match="needs a number"):
        convert([3], "m", "cm")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs a number"):
        convert(True, "m", "cm")
    with pytest.raises(TypeError, match="a unit is a str"):
        convert(3, 5, "cm")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        convert(math.inf, "m", "cm")
    # A quantity without its unit, or with two, says how to write it.
    with pytest.raises(TypeError, match=r"convert\(5, 'kg', 'lb'\).*convert\('5 kg', 'lb'\)"):
        convert(5, "lb")
    with pytest.raises(ValueError, match="has no unit"):
        convert("5", "lb")
    with pytest.raises(TypeError, match=r"names its own unit: convert\('5 kg', 'lb'\)"):
        convert("5 kg", "kg", "lb")
    with pytest.raises(ValueError, match="cannot read 'about 5 kg'"):
        convert("about 5 kg", "lb")
    with pytest.raises(ValueError, match="a temperature is one value"):
        convert("20 C 5 F", "K")
    with pytest.raises(ValueError, match="different things"):
        convert("5 kg 2 m", "g")
