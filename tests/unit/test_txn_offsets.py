"""What ``send_offsets_to_transaction`` accepts (``_internal/txn/offsets.py``): every shape a consume
loop has at hand, checked where it is passed, with a ConfigError that says what to pass instead."""

from __future__ import annotations

import sys
from typing import Any

import attrs
import pytest
from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

from txnproducer._internal.txn.offsets import (
    offsets_from,
    parse_librdkafka_group_metadata,
    resolve_group_metadata,
)
from txnproducer.errors import ConfigError


def cgmd_v2(generation: int, group: str, member: str, instance: str | None) -> bytes:
    """librdkafka's rd_kafka_consumer_group_metadata_write() layout, written out by hand."""
    tail = b"\x01" if instance is None else b"\x00" + instance.encode() + b"\0"
    return (b"CGMDv2:" + generation.to_bytes(4, sys.byteorder, signed=True) + group.encode() + b"\0"
            + member.encode() + b"\0" + tail)


# --- confluent-kafka's serialized group metadata -------------------------------------------------------


def test_cgmd_v2_with_and_without_a_group_instance_id() -> None:
    static = parse_librdkafka_group_metadata(cgmd_v2(7, "orders", "rdkafka-1f", "pod-3"))
    assert static == ConsumerGroupMetadata("orders", 7, "rdkafka-1f", "pod-3")
    dynamic = parse_librdkafka_group_metadata(cgmd_v2(1, "g", "m", None))
    assert dynamic == ConsumerGroupMetadata("g", 1, "m", None)
    unjoined = parse_librdkafka_group_metadata(cgmd_v2(-1, "g", "", None))
    assert unjoined == ConsumerGroupMetadata("g", -1, "", None)


def test_cgmd_v1_carries_only_the_group_id() -> None:
    assert parse_librdkafka_group_metadata(b"CGMDv1:old-group\0") == "old-group"


@pytest.mark.parametrize("data", [
    b"", b"not metadata", b"CGMDv2:", cgmd_v2(1, "g", "m", None)[:-1], cgmd_v2(1, "g", "m", "i")[:-1],
    cgmd_v2(1, "g", "m", None) + b"x", cgmd_v2(1, "", "m", None), b"CGMDv1:g", b"CGMDv3:\0\0\0\0g\0m\0\x01",
])
def test_anything_else_is_refused_naming_what_was_expected(data: bytes) -> None:
    with pytest.raises(ConfigError, match=r"not confluent-kafka's consumer.consumer_group_metadata\(\)"):
        parse_librdkafka_group_metadata(data)


# --- group metadata shapes ----------------------------------------------------------------------------


@attrs.frozen
class MemberMetadata:  # the shape of our own consumer's group metadata (a value object)
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


class KafkaPythonLikeConsumer:
    def group_metadata(self) -> ConsumerGroupMetadata:
        return ConsumerGroupMetadata("kp", 4, "kp-member", None)


class ConfluentLikeConsumer:
    def consumer_group_metadata(self) -> bytes:
        return cgmd_v2(9, "ck", "ck-member", "ck-static")


@pytest.mark.parametrize(("value", "expected"), [
    (ConsumerGroupMetadata("g", 3, "m", "i"), ConsumerGroupMetadata("g", 3, "m", "i")),
    (MemberMetadata("g", 3, "m", None), ConsumerGroupMetadata("g", 3, "m", None)),
    (KafkaPythonLikeConsumer(), ConsumerGroupMetadata("kp", 4, "kp-member", None)),
    (ConfluentLikeConsumer(), ConsumerGroupMetadata("ck", 9, "ck-member", "ck-static")),
    (cgmd_v2(2, "g", "m", None), ConsumerGroupMetadata("g", 2, "m", None)),
    (bytearray(cgmd_v2(2, "g", "m", None)), ConsumerGroupMetadata("g", 2, "m", None)),
    ("bare-group", "bare-group"),
])
def test_every_consumer_shape_gives_its_membership(value: Any, expected: Any) -> None:
    assert resolve_group_metadata(value) == expected


@pytest.mark.parametrize(("value", "match"), [
    (ConsumerGroupMetadata(group_id=None), "not in a consumer group"),  # kafka-python, manual assignment
    (MemberMetadata("", 1, "m", None), "not in a consumer group"),
    (MemberMetadata("g", "1", "m", None), "an int generation_id"),  # type: ignore[arg-type]
    ("", "an empty group id"),
    (42, "group_metadata must be a consumer's group_metadata()"),
    (object(), "group_metadata must be a consumer's group_metadata()"),
])
def test_what_is_not_a_membership_is_refused(value: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        resolve_group_metadata(value)


# --- offsets shapes -----------------------------------------------------------------------------------


@attrs.define(eq=False)  # hashable, as confluent_kafka.TopicPartition is
class ConfluentTopicPartition:  # confluent_kafka.TopicPartition's attributes
    topic: str
    partition: int
    offset: int = -1001
    metadata: str | None = None
    leader_epoch: int | None = None
    error: Any = None


def test_a_mapping_takes_ints_offsets_and_metadata_and_any_topic_partition_key() -> None:
    offsets = offsets_from({TopicPartition("t", 0): 5, ("t", 1): OffsetAndMetadata(6, "m", 2),
                            ConfluentTopicPartition("t", 2): 7})
    assert offsets == {TopicPartition("t", 0): OffsetAndMetadata(5, "", -1),
                       TopicPartition("t", 1): OffsetAndMetadata(6, "m", 2),
                       TopicPartition("t", 2): OffsetAndMetadata(7, "", -1)}


def test_a_list_of_confluent_topic_partitions_skips_logical_offsets_as_confluent_does() -> None:
    offsets = offsets_from([ConfluentTopicPartition("t", 0, 10, "meta", 3),
                            ConfluentTopicPartition("t", 1),  # OFFSET_INVALID: no position yet
                            ConfluentTopicPartition("t", 2, 0)])
    assert offsets == {TopicPartition("t", 0): OffsetAndMetadata(10, "meta", 3),
                       TopicPartition("t", 2): OffsetAndMetadata(0, "", -1)}


@pytest.mark.parametrize(("offsets", "match"), [
    ([TopicPartition("t", 0)], "carries no offset.*pass \\{TopicPartition\\(topic, partition\\): offset\\}"),
    ([ConfluentTopicPartition("t", 0, 5, error="BROKER_NOT_AVAILABLE")], "carries an error"),
    ([("t", 0, 5)], "must hold TopicPartition objects"),
    ([ConfluentTopicPartition("t", 0, 5, metadata=b"x")], "metadata of"),  # type: ignore[arg-type]
    ({TopicPartition("t", 0): -1}, "int >= 0"),
    ({TopicPartition("t", 0): True}, "int >= 0"),
    ({"t": 1}, "keys must be TopicPartition"),
    ("t-0", "offsets must be"),
    (5, "offsets must be"),
])
def test_bad_offsets_are_refused_where_they_are_passed(offsets: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        offsets_from(offsets)
