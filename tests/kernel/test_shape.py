"""What the small models' profile is told about a task's input: type, size, a sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from prime_kernel.kernel.shape import describe, overview


def test_a_short_value_is_shown_whole() -> None:
    assert describe([3, 5, 10]) == "context = [3, 5, 10] (a list of 3 ints)"
    assert describe({"a": 1}) == "context = {'a': 1} (a dict with 1 key)"


def test_a_long_value_is_sized_sampled_and_said_to_be_for_code() -> None:
    text = "alpha beta\n" * 100_000
    line = describe(text)
    assert line.startswith("context is a str of 1,100,000 characters in 100,000 lines, starting")
    assert line.endswith("(too long to print: compute over it with code)")
    numbers = describe(list(range(50_000)))
    assert numbers.startswith("context is a list of 50,000 ints, like 0, 1, 2, 3, 4, 5, 6, 7, …")
    # The sample is worded as an example, never as an expression the model would copy.
    assert "context[" not in numbers


def test_csv_rows_say_their_values_are_text() -> None:
    rows = [{"name": f"n{i}", "salary": str(1000 + i)} for i in range(40)]
    line = describe(rows)
    assert line.startswith("context is a list of 40 dicts like {'name': 'n0', 'salary': '1000'}")
    assert "every value is a str" in line and "float()" in line
    nested = describe({"orders": [{"id": i, "total": 1.5} for i in range(30)]})
    assert "context['orders'] is a list of 30 dicts like {'id': 0, 'total': 1.5}" in nested


def test_overview_names_context_and_the_files_that_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("numbers.txt").write_text("75;51;7\n")
    Path("sales.csv").write_text("id,price\n1,2.5\n2,3.0\n")
    text = overview(None, ["numbers.txt", "sales.csv", "missing.csv"], has_context=False)
    first, second = text.splitlines()
    assert first == "numbers.txt is a file of 8 bytes in 1 line, starting '75;51;7\\n'"
    assert second.startswith("sales.csv is a file of 21 bytes in 3 lines, starting 'id,price")
    assert second.endswith("(read with csv.DictReader: every value is a str)")
    assert overview([1, 2], [], has_context=True) == "context = [1, 2] (a list of 2 ints)"
    assert overview(None, [], has_context=False) == ""
