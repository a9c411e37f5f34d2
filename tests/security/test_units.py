"""The pieces without a server: the restricted unpickler, the secrets and the scrubber (the
sandbox's detection and command line: tests/daemon/test_sandbox.py)."""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
import os
import pickle
import uuid

import pytest

from prime_kernel.kernel import safe_pickle
from prime_kernel.kernel.safe_pickle import UnpicklingRefused
from prime_kernel.util.redact import (
    REDACTED,
    Scrubber,
    is_secret_name,
    scrub,
    secrets_of,
)

# -- the restricted unpickler --------------------------------------------------------------
PLAIN = [
    None,
    True,
    3,
    2.5,
    complex(1, 2),
    "text",
    b"bytes",
    bytearray(b"ba"),
    [1, [2]],
    (1, 2),
    {"a": {1, 2}},
    frozenset({3}),
    range(3),
    slice(1, 2),
    datetime.datetime(2026, 1, 2, 3, 4, tzinfo=datetime.timezone.utc),
    datetime.date(2026, 1, 2),
    datetime.timedelta(3),
    decimal.Decimal("1.10"),
    fractions.Fraction(1, 3),
    uuid.UUID(int=7),
    collections.OrderedDict(a=1),
    collections.defaultdict(list, a=[1]),
    collections.deque([1]),
    collections.Counter("aab"),
    ValueError("bad"),
]


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_plain_data_round_trips(protocol):
    for value in PLAIN:
        assert safe_pickle.loads(pickle.dumps(value, protocol=protocol)) == value or isinstance(
            value, ValueError
        )


def test_numpy_arrays_and_scalars():
    np = pytest.importorskip("numpy")
    value = {
        "a": np.arange(6).reshape(2, 3),
        "s": np.float64(1.5),
        "o": np.array([1, "x"], dtype=object),
    }
    out = safe_pickle.loads(pickle.dumps(value, protocol=5))
    assert (out["a"] == value["a"]).all() and out["s"] == 1.5 and list(out["o"]) == [1, "x"]


def test_pandas_frames_series_and_indexes():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(
        {
            "a": [1, 2],
            "b": ["x", "y"],
            "c": [1.5, None],
            "d": pd.to_datetime(["2020-01-01", "2021-01-01"]).tz_localize("UTC"),
            "e": pd.Categorical(["u", "v"]),
            "g": pd.array([1, None], dtype="Int64"),
            "h": pd.to_timedelta([1, 2], unit="s"),
        }
    ).set_index(["b", "a"])
    for value in (df, df["c"], pd.Timestamp("2020-01-01", tz="UTC"), pd.RangeIndex(3)):
        out = safe_pickle.loads(pickle.dumps(value, protocol=5))
        assert out.equals(value) if hasattr(value, "equals") else out == value


class Bomb:
    def __reduce__(self):
        return (os.system, ("echo should-not-run > /dev/null",))


class Custom:
    pass


def test_a_bomb_is_refused_and_says_how_to_allow():
    with pytest.raises(UnpicklingRefused) as info:
        safe_pickle.loads(pickle.dumps(Bomb()), what="the answer", hint="Call it with care")
    message = str(info.value)
    assert "posix.system" in message and "Nothing of it was run" in message
    assert "Call it with care" in message and "safe_pickle.allow('posix.system')" in message


def test_getattr_only_for_known_pairs():
    evil = b"cbuiltins\ngetattr\n(cbuiltins\nstr\nVjoin\ntR."  # getattr(str, 'join')
    with pytest.raises(UnpicklingRefused):
        safe_pickle.loads(evil)
    zoneinfo = pytest.importorskip("zoneinfo")
    tz = zoneinfo.ZoneInfo("UTC")
    assert safe_pickle.loads(pickle.dumps(tz)) is tz


def test_allow_and_trusted():
    data = pickle.dumps(Custom())
    with pytest.raises(UnpicklingRefused):
        safe_pickle.loads(data)
    assert isinstance(safe_pickle.loads(data, trusted=True), Custom)
    safe_pickle.allow(f"{Custom.__module__}.Custom")
    assert isinstance(safe_pickle.loads(data), Custom)
    with pytest.raises(ValueError):
        safe_pickle.allow("NoModule")


def test_a_30_byte_bomb_is_refused_before_it_allocates():
    # bytearray(2**30): 30 bytes of pickle, a GiB of memory (red team a982054, finding 3).
    bomb = b"\x80\x04cbuiltins\nbytearray\nJ\x00\x00\x00\x40\x85R."
    assert len(bomb) == 30
    with pytest.raises(UnpicklingRefused) as info:
        safe_pickle.loads(bomb, what="the answer")
    assert "more than 268435456 bytes" in str(info.value)
    assert "c.Admission.max_blob_bytes" in str(info.value)


@pytest.mark.parametrize(
    "bomb",
    [
        b"\x80\x04cbuiltins\nbytes\nJ\x00\x00\x00\x40\x85\x81.",  # NEWOBJ: bytes.__new__(n)
        b"\x80\x04cbuiltins\nlist\ncbuiltins\nrange\nJ\x00\x00\x00\x40\x85R\x85R.",  # list(range)
        b"\x80\x02ccopyreg\n_reconstructor\ncbuiltins\nbytearray\ncbuiltins\nbytearray\n"
        b"J\x00\x00\x00\x40\x87R.",  # _reconstructor(bytearray, bytearray, n)
    ],
)
def test_size_bombs_by_other_routes(bomb):
    with pytest.raises(UnpicklingRefused):
        safe_pickle.loads(bomb)


def test_references_depth_and_limits():
    big = "x" * 1_000_000
    # A thousand references to one MB: nothing to build, everything to print or export.
    with pytest.raises(UnpicklingRefused, match="more than 1000000 bytes"):
        safe_pickle.loads(pickle.dumps([big] * 1000), max_bytes=1_000_000)
    assert safe_pickle.loads(pickle.dumps([big] * 3)) == [big] * 3
    deep: list = []
    for _ in range(300):
        deep = [deep]
    with pytest.raises(UnpicklingRefused, match="nested more than 200 levels"):
        safe_pickle.loads(pickle.dumps(deep))
    assert safe_pickle.loads(pickle.dumps(deep), max_depth=400) == deep
    # Built top-down through the memo (each new list appended to the last one): the same.
    ops = bytearray(b"\x80\x02]q\x00")
    for i in range(1, 250):
        ops += b"h" + bytes([(i - 1) % 256]) + b"]q" + bytes([i % 256]) + b"a0"
    with pytest.raises(UnpicklingRefused, match="nested"):
        safe_pickle.loads(bytes(ops + b"h\x00."))


def test_a_pickle_cannot_change_a_class():
    # BUILD with slot state on an allowed class: setattr(collections.OrderedDict, ...).
    evil = b"\x80\x02ccollections\nOrderedDict\nN}X\x07\x00\x00\x00__len__K\x01s\x86b."
    with pytest.raises(UnpicklingRefused, match="sets attributes"):
        safe_pickle.loads(evil)
    assert len(collections.OrderedDict(a=1)) == 1


def test_load_reads_a_file(tmp_path):
    path = tmp_path / "v.pkl"
    path.write_bytes(pickle.dumps({"a": [1, 2]}))
    with path.open("rb") as f:
        assert safe_pickle.load(f) == {"a": [1, 2]}
    path.write_bytes(pickle.dumps(Bomb()))
    with path.open("rb") as f, pytest.raises(UnpicklingRefused):
        safe_pickle.load(f)


# -- secrets -------------------------------------------------------------------------------
def test_secret_names_follow_litellm():
    for name in (
        "OPENAI_API_KEY",
        "WATSONX_APIKEY",
        "WATSONX_ZENAPIKEY",
        "AIMLAPI_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AZURE_CLIENT_SECRET",
        "REDIS_PASSWORD",
        "VERTEXAI_CREDENTIALS",
        "CLARIFAI_PAT",
        "AWS_BEARER_TOKEN_BEDROCK",
        "JUPYTER_TOKEN",
    ):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "TOKENIZERS_PARALLELISM", "AZURE_FEDERATED_TOKEN_FILE", "MONKEY"):
        assert not is_secret_name(name), name


def test_secrets_of_collects_every_source():
    found = secrets_of(
        {"ANTHROPIC_API_KEY": "sk-ant-0123456789", "SHORT_TOKEN": "abc", "LANG": "C.UTF-8"},
        {"Daemon": {"model_kwargs": {"api_key": "cfg-0123456789"}}},
        "server-token-0123",
        ["live-token-0123456789"],
    )
    assert found == {
        "sk-ant-0123456789",
        "cfg-0123456789",
        "server-token-0123",
        "live-token-0123456789",
    }


def test_scrub_walks_nested_json():
    value = {"k-secret-123": ["x k-secret-123 y", ("a", 3), {"n": None}], "ok": 1.5}
    out = scrub(value, ["k-secret-123", None])
    assert out == {REDACTED: [f"x {REDACTED} y", ["a", 3], {"n": None}], "ok": 1.5}


def test_scrubber_follows_live_tokens_and_the_environment():
    env = {"OPENAI_API_KEY": "sk-env-0123456789"}
    scrubber = Scrubber(environ=env, config={"token": "cfg-token-0123"})
    scrubber.add("server-token-0123")
    text = "sk-env-0123456789 cfg-token-0123 server-token-0123 live-0123456789"
    assert scrubber.scrub(text, ["live-0123456789"]) == " ".join([REDACTED] * 4)
    assert "live-0123456789" in scrubber.scrub(text, [])  # revoked: no longer a secret
    env["NEW_TOKEN"] = "new-0123456789"
    assert scrubber.scrub("new-0123456789", []) == REDACTED


def test_scrubber_follows_the_process_environment(monkeypatch):
    # os.environ is read again only when it changed (see Scrubber.redactor): every change
    # counts, a new credential, a changed value and a removed one.
    scrubber = Scrubber()
    assert scrubber.scrub("late-secret-0123", []) == "late-secret-0123"
    monkeypatch.setenv("LATE_API_KEY", "late-secret-0123")
    assert scrubber.scrub("late-secret-0123", []) == REDACTED
    monkeypatch.setenv("LATE_API_KEY", "other-secret-0123")
    assert (
        scrubber.scrub("late-secret-0123 other-secret-0123", []) == f"late-secret-0123 {REDACTED}"
    )
    monkeypatch.delenv("LATE_API_KEY")
    assert scrubber.scrub("other-secret-0123", []) == "other-secret-0123"
