"""Consumer offsets and group metadata as ``send_offsets_to_transaction`` receives them.

Why validate here, in the application thread: a bad value must raise where it was passed, not
later inside the Sender thread where the caller cannot see it. ``group_fields`` reads the four
KIP-447 fields from a consumer's ``group_metadata()`` (or a bare group id string).

Why so many shapes: a consume-transform-produce loop hands over what its consumer gives it, and
users arrive with kafka-python, confluent-kafka, aiokafka or our own consumer.
:func:`offsets_from` takes ``{TopicPartition: offset}`` (kafka-python's and the Java client's
shape; any key with ``topic`` and ``partition``) or a list of confluent-kafka ``TopicPartition``
with offsets set (what ``consumer.position(consumer.assignment())`` returns; as confluent-kafka
does, its logical offsets - ``OFFSET_INVALID`` -1001 and the like - are skipped).
:func:`resolve_group_metadata` takes kafka-python's ``ConsumerGroupMetadata``, any object with
``group_id``, ``generation_id``, ``member_id`` and ``group_instance_id`` (our consumer's group
member), a consumer whose ``group_metadata()`` returns one (kafka-python's ``KafkaConsumer``),
confluent-kafka's ``consumer.consumer_group_metadata()`` - librdkafka's serialized ``CGMDv2``
bytes, parsed by :func:`parse_librdkafka_group_metadata` - or the confluent ``Consumer`` itself.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TypeGuard

from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

from txnproducer import errors

__all__ = [
    "group_fields",
    "normalize_offsets",
    "offsets_from",
    "parse_librdkafka_group_metadata",
    "resolve_group_metadata",
]

# librdkafka's rd_kafka_consumer_group_metadata_write() (src/rdkafka_cgrp.c), which confluent-kafka's
# consumer_group_metadata() returns as bytes: "CGMDv2:" <generation id: int32, the writer's byte
# order> <group id> NUL <member id> NUL <instance id is null: int8> [<group instance id> NUL].
# librdkafka 1.4 wrote "CGMDv1:" <group id> NUL (no membership: no fencing).
_CGMD_V2 = b"CGMDv2:"
_CGMD_V1 = b"CGMDv1:"

_SHAPES = ("a consumer's group_metadata() (kafka-python's ConsumerGroupMetadata, or any object with "
           "group_id, generation_id, member_id and group_instance_id), the consumer itself (kafka-python's "
           "KafkaConsumer, confluent-kafka's Consumer), confluent-kafka's "
           "consumer.consumer_group_metadata(), or a bare group id string (no zombie fencing)")


def group_fields(group_metadata: Any) -> tuple[str, int, str, str | None]:
    """(group_id, generation_id, member_id, group_instance_id) from ConsumerGroupMetadata or a str."""
    if isinstance(group_metadata, str):
        return group_metadata, -1, "", None
    group_id = getattr(group_metadata, "group_id", None)
    if not isinstance(group_id, str) or not group_id:
        raise TypeError(
            "group_metadata must be a consumer's group_metadata() (ConsumerGroupMetadata) or a group id"
            f" string, got {group_metadata!r}"
        )
    generation = getattr(group_metadata, "generation_id", -1)
    member = getattr(group_metadata, "member_id", "") or ""
    instance = getattr(group_metadata, "group_instance_id", None)
    return group_id, -1 if generation is None else int(generation), str(member), instance


def normalize_offsets(offsets: Mapping[Any, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
    """Validate ``{TopicPartition: OffsetAndMetadata | int}`` up front, in the application thread,
    so that a bad value raises where it was passed instead of inside the Sender."""
    if not isinstance(offsets, Mapping):
        raise TypeError(f"offsets must be a mapping of TopicPartition to OffsetAndMetadata, got {offsets!r}")
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, om in offsets.items():
        topic, partition = getattr(tp, "topic", None), getattr(tp, "partition", None)
        if not isinstance(topic, str) or not isinstance(partition, int):
            raise TypeError(f"offsets keys must be TopicPartition(topic, partition), got {tp!r}")
        if isinstance(om, int):
            om = OffsetAndMetadata(om, "", -1)
        offset = getattr(om, "offset", None)
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset for {topic}-{partition} must be an int >= 0, got {om!r}")
        metadata = getattr(om, "metadata", "")
        leader_epoch = getattr(om, "leader_epoch", -1)
        if metadata is not None and not isinstance(metadata, str):
            raise TypeError(f"metadata for {topic}-{partition} must be a str or None, got {metadata!r}")
        if leader_epoch is not None and not isinstance(leader_epoch, int):
            raise TypeError(
                f"leader_epoch for {topic}-{partition} must be an int or None, got {leader_epoch!r}"
            )
        out[TopicPartition(topic, partition)] = OffsetAndMetadata(
            offset, metadata, -1 if leader_epoch is None else leader_epoch
        )
    return out


# --- what the application passes --------------------------------------------------------------------


def offsets_from(offsets: Any) -> dict[TopicPartition, OffsetAndMetadata]:
    """``send_offsets_to_transaction``'s ``offsets`` in any accepted shape (module docstring), checked
    and converted; ConfigError naming the entry otherwise. Offsets are the *next* offsets to read."""
    if isinstance(offsets, Mapping):
        return _from_mapping(offsets)
    if isinstance(offsets, (str, bytes)) or not hasattr(offsets, "__iter__"):
        raise errors.ConfigError(
            "offsets must be {TopicPartition: offset} (the next offset to read of each partition) or a list "
            f"of confluent-kafka TopicPartition with offsets set, got {type(offsets).__name__}")
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for item in offsets:
        topic, partition, offset = (getattr(item, name, None) for name in ("topic", "partition", "offset"))
        if isinstance(item, tuple) and offset is None and isinstance(topic, str):
            raise errors.ConfigError(
                f"{item!r} carries no offset (kafka-python's TopicPartition is only a topic and a "
                "partition): pass {TopicPartition(topic, partition): offset}, the next offset to read")
        if not isinstance(topic, str) or not _is_int(partition) or not _is_int(offset):
            raise errors.ConfigError(
                "a list of offsets must hold TopicPartition objects with topic, partition and offset set "
                f"(confluent-kafka's TopicPartition(topic, partition, offset)), got {item!r}")
        if getattr(item, "error", None) is not None:
            raise errors.ConfigError(f"{item!r} carries an error: its offset cannot be committed")
        if offset < 0:  # a logical offset (OFFSET_INVALID, ...): confluent-kafka skips it too
            continue
        metadata = getattr(item, "metadata", None)
        epoch = getattr(item, "leader_epoch", None)
        if metadata is not None and not isinstance(metadata, str):
            raise errors.ConfigError(f"metadata of {item!r} must be a str or None, got {metadata!r}")
        out[TopicPartition(topic, partition)] = OffsetAndMetadata(
            offset, metadata or "", epoch if _is_int(epoch) else -1)
    return out


def _from_mapping(offsets: Mapping[Any, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, offset in offsets.items():
        topic, partition = getattr(tp, "topic", None), getattr(tp, "partition", None)
        if topic is None and isinstance(tp, tuple) and len(tp) == 2:  # a plain (topic, partition)
            topic, partition = tp
        if not isinstance(topic, str) or not _is_int(partition):
            raise errors.ConfigError(f"offsets keys must be TopicPartition(topic, partition), got {tp!r}")
        if _is_int(offset):
            offset = OffsetAndMetadata(offset, "", -1)
        if not isinstance(offset, OffsetAndMetadata) or not _is_int(offset.offset) or offset.offset < 0:
            raise errors.ConfigError(
                f"offsets values must be OffsetAndMetadata or int >= 0, got {offset!r} for {tp!r}")
        out[TopicPartition(topic, partition)] = offset
    return out


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def resolve_group_metadata(value: Any) -> ConsumerGroupMetadata | str:
    """``send_offsets_to_transaction``'s ``group_metadata`` in any accepted shape (module docstring):
    the KIP-447 membership, or a ``str`` when only the group id is known (a bare group id, or
    librdkafka 1.4's metadata), which commits without zombie fencing. ConfigError otherwise."""
    if isinstance(value, str):
        if not value:
            raise errors.ConfigError(f"group_metadata must be {_SHAPES}; got an empty group id")
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return parse_librdkafka_group_metadata(bytes(value))
    if isinstance(value, ConsumerGroupMetadata):
        return _membership(value)
    for method in ("group_metadata", "consumer_group_metadata"):  # a consumer passed itself
        read = getattr(value, method, None)
        if callable(read):
            inner = read()
            if inner is None or callable(getattr(inner, method, None)):
                break
            return resolve_group_metadata(inner)
    if hasattr(value, "group_id") and hasattr(value, "generation_id") and hasattr(value, "member_id"):
        return _membership(value)
    raise errors.ConfigError(f"group_metadata must be {_SHAPES}; got {value!r}")


def _membership(value: Any) -> ConsumerGroupMetadata:
    """ConsumerGroupMetadata from an object with the four KIP-447 attributes, checked."""
    group_id = value.group_id
    if not isinstance(group_id, str) or not group_id:
        raise errors.ConfigError(
            f"group_metadata has no group id ({value!r}): the consumer is not in a consumer group "
            "(created without group_id). Offsets are committed for a group: give the consumer a group_id")
    generation = getattr(value, "generation_id", -1)
    member_id = getattr(value, "member_id", "")
    instance = getattr(value, "group_instance_id", None)
    if not _is_int(generation) or not isinstance(member_id, (str, type(None))) \
            or not isinstance(instance, (str, type(None))):
        raise errors.ConfigError(
            "group_metadata needs an int generation_id, a str member_id and a str or None "
            f"group_instance_id, got {value!r}")
    if isinstance(value, ConsumerGroupMetadata):
        return value
    return ConsumerGroupMetadata(group_id, generation, member_id or "", instance)


def parse_librdkafka_group_metadata(data: bytes) -> ConsumerGroupMetadata | str:
    """confluent-kafka's ``consumer.consumer_group_metadata()`` (librdkafka's serialized form, see
    the layout above) as ConsumerGroupMetadata; librdkafka 1.4's ``CGMDv1`` holds only the group id
    (returned as a ``str``). ConfigError for anything else, naming what was expected."""
    if data.startswith(_CGMD_V1):
        group_id, sep, rest = data[len(_CGMD_V1):].partition(b"\0")
        if sep and not rest and group_id:
            return _text(group_id, data)
        raise _not_cgmd(data)
    if not data.startswith(_CGMD_V2) or len(data) < len(_CGMD_V2) + 4 + 3:
        raise _not_cgmd(data)
    at = len(_CGMD_V2)
    generation = int.from_bytes(data[at:at + 4], sys.byteorder, signed=True)
    group_id, sep1, rest = data[at + 4:].partition(b"\0")
    member_id, sep2, rest = rest.partition(b"\0")
    if not (sep1 and sep2 and rest and group_id):
        raise _not_cgmd(data)
    instance: bytes | None = None
    if rest[0] == 0:  # not null: the static member's instance id follows
        instance, sep3, rest = rest[1:].partition(b"\0")
        if not sep3:
            raise _not_cgmd(data)
    else:
        rest = rest[1:]
    if rest:
        raise _not_cgmd(data)
    return ConsumerGroupMetadata(_text(group_id, data), generation, _text(member_id, data),
                                 None if instance is None else _text(instance, data))


def _text(raw: bytes, data: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _not_cgmd(data) from None


def _not_cgmd(data: bytes) -> errors.ConfigError:
    return errors.ConfigError(
        f"group_metadata given as {len(data)} bytes that are not confluent-kafka's "
        "consumer.consumer_group_metadata() (librdkafka's 'CGMDv2:' serialized form): pass that value "
        f"unchanged, or {_SHAPES}")
