"""The "consumer" protocol's embedded payloads: a member's subscription and its assignment.

Why our own codec: JoinGroup and SyncGroup carry these as opaque bytes, and every client of a group
must read what the others wrote - Java (which writes subscription v3 and assignment v3), librdkafka
and kafka-python - or a mixed group falls apart. Kafka defines them in
``ConsumerProtocolSubscription.json`` / ``ConsumerProtocolAssignment.json``: a non-flexible schema
(no tagged fields) behind an int16 version, where each newer version only *appends* fields. A reader
therefore takes the fields it knows and ignores what follows, as the Java client does when it reads a
version newer than its own. We write version 0 of both (the fields an eager assignor needs), which
every client reads.

Subscription: version, topics ``[string]``, user data ``nullable bytes``; v1+ owned partitions
``[topic, [int32]]``; v2+ generation id ``int32``; v3+ rack id ``nullable string``.
Assignment: version, assigned partitions ``[topic, [int32]]``, user data ``nullable bytes``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import attrs

from .primitives import I16, I32, check_count, string16, string_at

__all__ = [
    "PROTOCOL_TYPE",
    "Assignment",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

PROTOCOL_TYPE = "consumer"


@attrs.frozen
class Subscription:
    """What a member asked for: topics (and, from others' newer versions, what it owned)."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, int], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = 0


@attrs.frozen
class Assignment:
    """What the leader gave a member: (topic, partition) pairs, in the leader's order."""

    partitions: tuple[tuple[str, int], ...]
    user_data: bytes | None = None
    version: int = 0


def encode_subscription(topics: Iterable[str], user_data: bytes | None = None) -> bytes:
    """Subscription v0 of ``topics`` (sorted: the same subscription always encodes the same)."""
    names = sorted(set(topics))
    parts = [I16.pack(0), I32.pack(len(names))]
    parts.extend(string16(name, "topic name") for name in names)
    parts.append(_nullable_bytes(user_data))
    return b"".join(parts)


def encode_assignment(partitions: Iterable[tuple[str, int]], user_data: bytes | None = None, *,
                      version: int = 0) -> bytes:
    """An assignment (v0 unless ``version`` says otherwise: v1-v3 carry the same fields, and a KIP-848 group
    coordinator answers a classic member in the version of its subscription): the partitions grouped by
    topic (topics sorted, partitions ascending)."""
    if not 0 <= version <= 3:
        raise ValueError(f"consumer assignment version {version} (0-3 exist)")
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return b"".join([I16.pack(version), _topic_partitions(by_topic), _nullable_bytes(user_data)])


def decode_subscription(data: bytes | bytearray | memoryview) -> Subscription:
    """A subscription of any version (fields past the ones we know are ignored); ValueError if the
    bytes are not one."""
    buf = bytes(data)
    end = len(buf)
    try:
        version, pos = _int16(buf, 0)
        if version < 0:
            raise ValueError(f"subscription version {version}")
        count, pos = _int32(buf, pos)
        check_count(count, pos, end, 2)
        topics = []
        for _ in range(count):
            topic, pos = _string(buf, pos, end)
            topics.append(topic)
        user_data, pos = _read_nullable_bytes(buf, pos, end)
        owned: tuple[tuple[str, int], ...] = ()
        generation = -1
        rack: str | None = None
        if version >= 1:
            owned, pos = _read_topic_partitions(buf, pos, end)
        if version >= 2:
            generation, pos = _int32(buf, pos)
        if version >= 3:
            length, pos = _int16(buf, pos)
            if length >= 0:
                rack, pos = string_at(buf, pos, end, length)
    except (IndexError, struct.error) as exc:
        raise ValueError(f"truncated consumer subscription ({end} bytes)") from exc
    return Subscription(tuple(topics), user_data, owned, generation, rack, version)


def decode_assignment(data: bytes | bytearray | memoryview) -> Assignment:
    """An assignment of any version; empty bytes (a member the leader gave nothing, as some clients
    send it) is the empty assignment. ValueError if the bytes are not one."""
    buf = bytes(data)
    if not buf:
        return Assignment(())
    end = len(buf)
    try:
        version, pos = _int16(buf, 0)
        if version < 0:
            raise ValueError(f"assignment version {version}")
        partitions, pos = _read_topic_partitions(buf, pos, end)
        user_data, pos = _read_nullable_bytes(buf, pos, end)
    except (IndexError, struct.error) as exc:
        raise ValueError(f"truncated consumer assignment ({end} bytes)") from exc
    return Assignment(partitions, user_data, version)


# -- helpers ------------------------------------------------------------------------------------


def _nullable_bytes(value: bytes | None) -> bytes:
    if value is None:
        return I32.pack(-1)
    return I32.pack(len(value)) + value


def _topic_partitions(by_topic: dict[str, list[int]]) -> bytes:
    parts = [I32.pack(len(by_topic))]
    for topic in sorted(by_topic):
        ids = sorted(by_topic[topic])
        parts.append(string16(topic, "topic name"))
        parts.append(I32.pack(len(ids)))
        parts.append(struct.pack(f">{len(ids)}i", *ids))
    return b"".join(parts)


def _int16(buf: bytes, pos: int) -> tuple[int, int]:
    return int(I16.unpack_from(buf, pos)[0]), pos + 2


def _int32(buf: bytes, pos: int) -> tuple[int, int]:
    return int(I32.unpack_from(buf, pos)[0]), pos + 4


def _string(buf: bytes, pos: int, end: int) -> tuple[str, int]:
    length, pos = _int16(buf, pos)
    if length < 0:
        raise ValueError(f"null topic name at offset {pos - 2}")
    return string_at(buf, pos, end, length)


def _read_nullable_bytes(buf: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = _int32(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > end:
        raise ValueError(f"user data of {length} bytes runs past the end at offset {pos}")
    return buf[pos:pos + length], pos + length


def _read_topic_partitions(buf: bytes, pos: int, end: int) -> tuple[tuple[tuple[str, int], ...], int]:
    count, pos = _int32(buf, pos)
    check_count(count, pos, end, 6)
    out: list[tuple[str, int]] = []
    for _ in range(count):
        topic, pos = _string(buf, pos, end)
        n, pos = _int32(buf, pos)
        check_count(n, pos, end, 4)
        ids: Any = struct.unpack_from(f">{n}i", buf, pos)
        pos += 4 * n
        out.extend((topic, int(p)) for p in ids)
    return tuple(out), pos
