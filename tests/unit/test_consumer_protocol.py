"""The consumer protocol's subscription and assignment payloads, as every client of a mixed group
writes them: what we write, others read; what they write (any version), we read."""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from txnproducer._internal.protocol.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def _str(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def java_subscription_v3() -> bytes:
    """Subscription v3 as the Java 4.x client writes it: topics, user data, owned partitions,
    generation, rack - hand-assembled from ConsumerProtocolSubscription.json."""
    return b"".join([
        struct.pack(">h", 3),
        struct.pack(">i", 2), _str("a"), _str("b"),
        struct.pack(">i", 3), b"\x01\x02\x03",  # user data
        struct.pack(">i", 1), _str("a"), struct.pack(">ii", 1, 0),  # owned: a-0
        struct.pack(">i", 7),  # generation
        _str("rack-1"),
    ])


def test_we_read_what_java_writes_at_version_3() -> None:
    sub = decode_subscription(java_subscription_v3())
    assert sub == Subscription(topics=("a", "b"), user_data=b"\x01\x02\x03", owned_partitions=(("a", 0),),
                               generation_id=7, rack_id="rack-1", version=3)


def test_fields_of_a_version_newer_than_ours_are_ignored() -> None:
    newer = struct.pack(">h", 9) + java_subscription_v3()[2:] + b"\x00\x00\x00\x05future"
    assert decode_subscription(newer).topics == ("a", "b")


def test_kafka_python_reads_our_subscription_and_we_read_its() -> None:
    ours = encode_subscription(["b", "a", "a"])
    theirs = ConsumerProtocolSubscription.decode(ours)
    assert sorted(theirs.topics) == ["a", "b"] and theirs.version == 0
    written = ConsumerProtocolSubscription(version=1, topics=["x"], user_data=None,
                                           owned_partitions=[]).encode(version=1)
    assert decode_subscription(written) == Subscription(topics=("x",), version=1)


def test_assignments_round_trip_with_kafka_python() -> None:
    ours = encode_assignment([("t", 2), ("s", 0), ("t", 0)])
    assert decode_assignment(ours) == Assignment(partitions=(("s", 0), ("t", 0), ("t", 2)))
    decoded = ConsumerProtocolAssignment.decode(ours)
    assert sorted(decoded.partitions()) == [("s", 0), ("t", 0), ("t", 2)]
    theirs = ConsumerProtocolAssignment(version=3, assigned_partitions=[("t", [1, 4])], user_data=b"u")
    assert decode_assignment(theirs.encode(version=3)) == Assignment((("t", 1), ("t", 4)), b"u", 3)


def test_the_same_subscription_always_encodes_the_same() -> None:
    """A static member's restart must send what it sent before (no order, no duplicates)."""
    assert encode_subscription(["b", "a"]) == encode_subscription(["a", "b", "a"])


def test_an_empty_assignment_is_no_partitions() -> None:
    assert decode_assignment(b"") == Assignment(())


@pytest.mark.parametrize("data", [b"\x00", b"\x00\x00\x00\x00\x00\x05ab", struct.pack(">hi", 0, 99999)])
def test_bytes_that_are_no_subscription_raise_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_subscription(data)


NOT_ASSIGNMENTS = [b"\x00\x00\x00", struct.pack(">hi", 0, 1) + _str("t") + struct.pack(">i", 50)]


@pytest.mark.parametrize("data", NOT_ASSIGNMENTS)
def test_bytes_that_are_no_assignment_raise_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_assignment(data)
