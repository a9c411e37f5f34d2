"""Redactor on large values: searched a window at a time, and nothing missed at the windows'
boundaries (a secret across one is found, in a pickle's bytes and as its text)."""

from __future__ import annotations

import pickle

import pytest

from prime_kernel.util.redact import SEARCH_WINDOW, Redactor

SECRET = "sk-planted-0123456789abcdef"


@pytest.mark.parametrize("offset", [0, 1, len(SECRET) - 1, len(SECRET), SEARCH_WINDOW // 2])
def test_a_secret_across_a_window_boundary_is_found_and_masked(offset: int) -> None:
    raw = SECRET.encode()
    data = bytearray(b"x" * (3 * SEARCH_WINDOW))
    at = 2 * SEARCH_WINDOW - offset
    data[at : at + len(raw)] = raw
    redactor = Redactor([SECRET])
    assert redactor.found_in(bytes(data))
    assert raw not in redactor.pickle(pickle.dumps(bytes(data)))


def test_a_large_value_without_a_secret_is_kept_as_it_came() -> None:
    data = pickle.dumps(b"x" * (3 * SEARCH_WINDOW) + SECRET[:-1].encode())
    redactor = Redactor([SECRET])
    assert not redactor.found_in(data)
    assert redactor.pickle(data) is data
    assert redactor.found_in(SECRET.encode()) and not Redactor([SECRET]).found_in(b"")


def test_texts_shorter_than_every_secret_are_left_and_the_rest_searched() -> None:
    short, long = "k" * 8, "s" * 40
    redactor = Redactor([long, short])
    assert redactor.text("k" * 7) == "k" * 7  # shorter than the shortest: nothing to find
    assert redactor.text(short) == "[REDACTED]"  # as long as one: searched
    assert redactor.text(f"a {short} and {long}") == "a [REDACTED] and [REDACTED]"
    assert redactor.value({"key": ["ok", short]}) == {"key": ["ok", "[REDACTED]"]}
    assert Redactor([]).text("anything") == "anything"
