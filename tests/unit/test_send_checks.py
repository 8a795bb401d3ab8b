"""send()'s argument checks: what they let through is what the encoders can write, the rest is a
typed error that says what is wrong (the producer-level tests run these on both hot paths)."""

from __future__ import annotations

import array
import enum
from typing import Any

import pytest

from txnproducer import errors
from txnproducer._internal.send_checks import (
    check_headers,
    check_partition,
    check_timestamp,
    default_serialize,
    serialize,
)


def _bytes_of(data: Any) -> bytes:
    out = serialize(default_serialize, data, "value", "t")
    assert out is not None
    assert len(out) == len(bytes(out))  # len() counts bytes: what the encoders rely on
    return bytes(out)


def test_buffers_come_out_as_their_bytes() -> None:
    ints = array.array("i", [1, 2, 3])
    assert _bytes_of(memoryview(ints)) == ints.tobytes()
    assert _bytes_of(memoryview(bytes(range(24))).cast("B", (2, 3, 4))) == bytes(range(24))
    assert _bytes_of(memoryview(b"")) == b""
    assert _bytes_of("t\u00e9xt") == "t\u00e9xt".encode()
    raw = b"as is"
    assert serialize(default_serialize, raw, "value", "t") is raw
    mutable = bytearray(b"as is")
    assert serialize(default_serialize, mutable, "value", "t") is mutable


def test_a_serializer_output_that_is_not_bytes_is_a_serialization_error() -> None:
    with pytest.raises(errors.SerializationError, match="value serializer returned list for topic 't'"):
        serialize(lambda v: [v], b"x", "value", "t")
    with pytest.raises(errors.SerializationError, match="could not serialize key for topic 't': got int"):
        serialize(default_serialize, 5, "key", "t")
    with pytest.raises(errors.SerializationError,
                       match=r"could not serialize value for topic 't': .*surrogates"):
        serialize(default_serialize, "\ud800", "value", "t")
    with pytest.raises(errors.SerializationError, match="not C-contiguous"):
        serialize(lambda v: memoryview(v)[::2], b"abcd", "value", "t")
    assert serialize(lambda v: None, b"x", "value", "t") is None


def test_timestamps_are_plain_ints_in_kafkas_range() -> None:
    class Ms(enum.IntEnum):
        EPOCH = 0

    assert type(check_timestamp(Ms.EPOCH)) is int and check_timestamp(2**63 - 1) == 2**63 - 1
    for bad in (-1, 2**63, 2**70, True, 1.0, None, "0"):
        with pytest.raises(errors.InvalidRecordError,
                           match=r"timestamp_ms must be an int in 0\.\.9223372036854775807"):
            check_timestamp(bad)


def test_an_explicit_partition_is_a_plain_int_of_the_topic() -> None:
    class P(int):
        def __lt__(self, other: object) -> bool:  # a subclass may compare as it likes
            return True

    assert type(check_partition("t", [0, 1, 2], P(2))) is int
    for bad in (3, -1, 2**70, True, False, 1.0, "0", None):
        with pytest.raises(errors.InvalidRecordError,
                           match=r"does not exist in topic 't' \(partitions 0\.\.2\)"):
            check_partition("t", [0, 1, 2], bad)


def test_headers_are_str_names_with_bytes_values() -> None:
    ints = array.array("i", [5])
    out = check_headers([("a", b"1"), ("b", "\u00e9"), ("c", None), ("d", memoryview(ints))])
    assert [(k, None if v is None else bytes(v)) for k, v in out] == [
        ("a", b"1"), ("b", "\u00e9".encode()), ("c", None), ("d", ints.tobytes())]
    assert [len(v) for _, v in out if v is not None] == [1, 2, 4]
    assert check_headers({"m": b"v"}) == [("m", b"v")]
    assert check_headers(iter([("g", b"v")])) == [("g", b"v")]


@pytest.mark.parametrize(("headers", "message"), [
    (5, "headers must be a mapping or a sequence of (str, bytes) pairs, got int"),
    ("ab", "headers must be a mapping or a sequence of (str, bytes) pairs, got str"),
    (b"ab", "headers must be a mapping or a sequence of (str, bytes) pairs, got bytes"),
    (["ab"], "headers must be (str, bytes) pairs, got 'ab'"),
    ([("a",)], "headers must be (str, bytes) pairs, got ('a',)"),
    ([(7, b"v")], "header names must be str, got 7"),
    ([("\ud800", b"v")], "header name '\\ud800' cannot be encoded as UTF-8: surrogates not allowed"),
    ([("h", "\udfff")], "header 'h' value cannot be encoded as UTF-8: surrogates not allowed"),
    ([("h", 7)], "header 'h' value must be bytes, str or None, got 7"),
    ([("h", memoryview(b"abcd")[::2])],
     "header 'h' value cannot be read as bytes: its buffer is not C-contiguous"),
])
def test_headers_that_are_not_str_bytes_pairs_are_invalid_records(headers: Any, message: str) -> None:
    with pytest.raises(errors.InvalidRecordError) as refused:
        check_headers(headers)
    assert str(refused.value).startswith(message)
