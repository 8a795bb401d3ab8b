"""Fetch (key 1) response decoder, v4-v18: the partitions' metadata, their records left in place.

Why our own: kafka-python's generic decode builds a ``DataContainer`` per topic, partition and
aborted transaction, and copies each partition's records into a new ``bytes`` object - a copy of
up to ``max_partition_fetch_bytes`` (1 MiB) per partition per fetch that the record decoder then
reads once. Here the records are a ``memoryview`` of the received frame (nothing is copied: the
decoders read them in place) and the rest is a few ``struct`` reads. kafka-python's
``FetchResponse`` stays the reference: ``tests/unit/test_fetch_codec.py`` decodes its encoded
responses with both and compares them, for every version; the measured difference is in
``benchmarks/README.md``.

Wire format (Kafka's ``FetchResponse.json``): v4-v11 response header v0, int16 strings, int32
arrays; v7 adds the top-level error code and session id (KIP-227); v11 the preferred read replica;
v12+ flexible (header v1, compact types) with tagged fields per partition - 0 DivergingEpoch,
1 CurrentLeader (KIP-951), 2 SnapshotId - and for the response 0 NodeEndpoints (v16+, KIP-951);
v13+ names topics by id.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, NamedTuple

from kafka.protocol.frame import KafkaBytes

from .primitives import I16 as _I16
from .primitives import I32 as _I32
from .primitives import compact_count, compact_string_at, read_uvarint, skip_tagged_fields, string_at
from .produce_response import NodeEndpoint

__all__ = [
    "FETCH_API_KEY",
    "FetchResponseData",
    "FetchResponseType",
    "FetchedPartition",
    "FetchedTopic",
    "decode_fetch_response",
    "fetch_response_type",
]

FETCH_API_KEY = 1
_MIN_VERSION = 4
_MAX_VERSION = 18
_FIRST_SESSION = 7
_FIRST_READ_REPLICA = 11
_FIRST_FLEXIBLE = 12
_FIRST_TOPIC_ID = 13

_I64 = struct.Struct(">q")
_PART_V4 = struct.Struct(">ihqq")  # index, error, high watermark, last stable offset
_PART_V5 = struct.Struct(">ihqqq")  # + log start offset
_ABORTED = struct.Struct(">qq")  # producer id, first offset
_LEADER = struct.Struct(">ii")
_DIVERGING = struct.Struct(">iq")


class FetchedPartition:
    """One partition of a Fetch answer; ``records`` is a view of the received frame (or None)."""

    __slots__ = (
        "aborted",
        "current_leader",
        "diverging_epoch",
        "error_code",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "partition",
        "preferred_read_replica",
        "records",
    )

    def __init__(
        self,
        partition: int,
        error_code: int,
        high_watermark: int,
        last_stable_offset: int,
        log_start_offset: int,
        aborted: list[tuple[int, int]] | None,
        preferred_read_replica: int,
        records: memoryview | None,
        current_leader: tuple[int, int] | None = None,
        diverging_epoch: tuple[int, int] | None = None,
    ) -> None:
        self.partition = partition
        self.error_code = error_code
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset
        #: (producer id, first offset) of each aborted transaction; None: the broker sent null
        #: (read_uncommitted), [] none overlap the returned records
        self.aborted = aborted
        self.preferred_read_replica = preferred_read_replica
        self.records = records
        #: KIP-951 (v12+, tag 1): (leader id, leader epoch) with NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH
        self.current_leader = current_leader
        #: (epoch, end offset) when the broker found the fetch diverging (v12+, tag 0)
        self.diverging_epoch = diverging_epoch

    def __repr__(self) -> str:
        size = 0 if self.records is None else self.records.nbytes
        return (
            f"FetchedPartition(partition={self.partition}, error_code={self.error_code}, "
            f"high_watermark={self.high_watermark}, last_stable_offset={self.last_stable_offset}, "
            f"log_start_offset={self.log_start_offset}, aborted={self.aborted!r}, "
            f"record_bytes={size}, current_leader={self.current_leader!r})"
        )


class FetchedTopic(NamedTuple):
    name: str | None  # None for v13+
    topic_id: uuid.UUID | None  # None before v13
    partitions: list[FetchedPartition]


class FetchResponseData:
    """A decoded Fetch answer."""

    __slots__ = ("API_VERSION", "error_code", "node_endpoints", "responses", "session_id", "throttle_time_ms")

    API_KEY = FETCH_API_KEY

    def __init__(
        self,
        version: int,
        throttle_time_ms: int,
        error_code: int,
        session_id: int,
        responses: list[FetchedTopic],
        node_endpoints: tuple[NodeEndpoint, ...] = (),
    ) -> None:
        self.API_VERSION = version
        self.throttle_time_ms = throttle_time_ms
        self.error_code = error_code  # top level (v7+): a fetch-session error
        self.session_id = session_id
        self.responses = responses
        self.node_endpoints = node_endpoints

    def __repr__(self) -> str:
        parts = sum(len(t.partitions) for t in self.responses)
        return (
            f"FetchResponse[v{self.API_VERSION}](error_code={self.error_code}, "
            f"session_id={self.session_id}, "
            f"partitions={parts}, throttle_time_ms={self.throttle_time_ms})"
        )


class _Header(NamedTuple):
    correlation_id: int


class FetchResponseType:
    """kafka-python's "response class" for one Fetch version: ``parse_header`` + ``decode`` on the
    received ``KafkaBytes`` frame (positioned after the size prefix)."""

    __slots__ = ("API_VERSION", "flexible")

    API_KEY = FETCH_API_KEY

    def __init__(self, version: int) -> None:
        self.API_VERSION = version
        self.flexible = version >= _FIRST_FLEXIBLE

    def parse_header(self, data: Any) -> _Header:
        pos = data.tell()
        (correlation_id,) = _I32.unpack_from(data, pos)
        pos += 4
        if self.flexible:
            try:
                pos = skip_tagged_fields(data, pos, len(data))
            except IndexError as exc:
                raise ValueError("truncated FetchResponse header") from exc
        data.seek(pos)
        return _Header(correlation_id)

    def decode(self, data: Any) -> FetchResponseData:
        if isinstance(data, KafkaBytes):
            end = len(data)
            response = _decode(memoryview(data), self.API_VERSION, data.tell(), end)
            data.seek(end)
            return response
        view = memoryview(data)
        return _decode(view, self.API_VERSION, 0, view.nbytes)

    def __repr__(self) -> str:
        return f"FetchResponse[v{self.API_VERSION}]"


_TYPES = {v: FetchResponseType(v) for v in range(_MIN_VERSION, _MAX_VERSION + 1)}


def fetch_response_type(version: int) -> FetchResponseType:
    try:
        return _TYPES[version]
    except KeyError:
        raise ValueError(
            f"Fetch version {version} is not supported (v{_MIN_VERSION}-v{_MAX_VERSION})"
        ) from None


def decode_fetch_response(
    data: bytes | bytearray | memoryview, version: int, pos: int = 0
) -> FetchResponseData:
    """Decode a Fetch answer's body (after the response header) that ends where ``data`` does; the
    records are views of ``data``. ValueError or struct.error for malformed or truncated data."""
    view = memoryview(data)
    return _decode(view, fetch_response_type(version).API_VERSION, pos, view.nbytes)


def _decode(view: memoryview, version: int, pos: int, end: int) -> FetchResponseData:
    try:
        if version >= _FIRST_FLEXIBLE:
            response, pos = _decode_flexible(view, version, pos, end)
        else:
            response, pos = _decode_classic(view, version, pos, end)
    except IndexError as exc:
        raise ValueError("truncated FetchResponse") from exc
    if pos != end:
        raise ValueError(f"FetchResponse v{version}: {end - pos} unexpected trailing bytes")
    return response


def _decode_classic(view: memoryview, version: int, pos: int, end: int) -> tuple[FetchResponseData, int]:
    i32 = _I32.unpack_from
    (throttle,) = i32(view, pos)
    pos += 4
    error_code = 0
    session_id = 0
    if version >= _FIRST_SESSION:
        error_code, session_id = struct.unpack_from(">hi", view, pos)
        pos += 6
    part_struct = _PART_V5 if version >= 5 else _PART_V4
    (n_topics,) = i32(view, pos)
    pos += 4
    topics = []
    for _ in range(max(n_topics, 0)):
        (length,) = _I16.unpack_from(view, pos)
        name, pos = string_at(view, pos + 2, end, length)
        (n_parts,) = i32(view, pos)
        pos += 4
        parts = []
        for _ in range(max(n_parts, 0)):
            if version >= 5:
                index, code, hw, lso, log_start = part_struct.unpack_from(view, pos)
            else:
                index, code, hw, lso = part_struct.unpack_from(view, pos)
                log_start = -1
            pos += part_struct.size
            (n_aborted,) = i32(view, pos)
            pos += 4
            aborted: list[tuple[int, int]] | None = None
            if n_aborted >= 0:
                if pos + 16 * n_aborted > end:
                    raise ValueError(f"bad aborted transactions count {n_aborted}")
                aborted = [_ABORTED.unpack_from(view, pos + 16 * i) for i in range(n_aborted)]
                pos += 16 * n_aborted
            replica = -1
            if version >= _FIRST_READ_REPLICA:
                (replica,) = i32(view, pos)
                pos += 4
            (size,) = i32(view, pos)
            pos += 4
            records = None
            if size >= 0:
                if pos + size > end:
                    raise ValueError(f"records of {size} bytes run past the end")
                records = view[pos : pos + size]
                pos += size
            parts.append(FetchedPartition(index, code, hw, lso, log_start, aborted, replica, records))
        topics.append(FetchedTopic(name, None, parts))
    return FetchResponseData(version, throttle, error_code, session_id, topics), pos


def _decode_flexible(view: memoryview, version: int, pos: int, end: int) -> tuple[FetchResponseData, int]:
    throttle, error_code, session_id = struct.unpack_from(">ihi", view, pos)
    pos += 10
    by_id = version >= _FIRST_TOPIC_ID
    n_topics, pos = compact_count(view, pos, end, 2)
    topics = []
    unpack_part = _PART_V5.unpack_from
    for _ in range(n_topics):
        name: str | None = None
        topic_id: uuid.UUID | None = None
        if by_id:
            if pos + 16 > end:
                raise ValueError("truncated topic id")
            topic_id = uuid.UUID(bytes=bytes(view[pos : pos + 16]))
            pos += 16
        else:
            name, pos = compact_string_at(view, pos, end)
        n_parts, pos = compact_count(view, pos, end, 37)  # the smallest: an error, nothing else
        parts = []
        for _ in range(n_parts):
            index, code, hw, lso, log_start = unpack_part(view, pos)
            pos += 30
            n_aborted, pos = read_uvarint(view, pos)
            aborted: list[tuple[int, int]] | None = None
            if n_aborted:
                n_aborted -= 1
                if pos + 17 * n_aborted > end:
                    raise ValueError(f"bad aborted transactions count {n_aborted}")
                aborted = []
                for _ in range(n_aborted):
                    aborted.append(_ABORTED.unpack_from(view, pos))
                    pos = skip_tagged_fields(view, pos + 16, end)
            (replica,) = _I32.unpack_from(view, pos)
            size, pos = read_uvarint(view, pos + 4)
            records = None
            if size:
                size -= 1
                if pos + size > end:
                    raise ValueError(f"records of {size} bytes run past the end")
                records = view[pos : pos + size]
                pos += size
            current_leader = None
            diverging = None
            if view[pos] == 0:
                pos += 1
            else:
                count, pos = read_uvarint(view, pos)
                for _ in range(count):
                    tag, pos = read_uvarint(view, pos)
                    length, pos = read_uvarint(view, pos)
                    if pos + length > end:
                        raise ValueError(f"tagged field of {length} bytes runs past the end")
                    if tag == 0:
                        diverging = _DIVERGING.unpack_from(view, pos)
                    elif tag == 1:
                        current_leader = _LEADER.unpack_from(view, pos)
                    pos += length
            parts.append(
                FetchedPartition(
                    index, code, hw, lso, log_start, aborted, replica, records, current_leader, diverging
                )
            )
        pos = skip_tagged_fields(view, pos, end)
        topics.append(FetchedTopic(name, topic_id, parts))
    endpoints: tuple[NodeEndpoint, ...] = ()
    if view[pos] == 0:
        pos += 1
    else:
        count, pos = read_uvarint(view, pos)
        for _ in range(count):
            tag, pos = read_uvarint(view, pos)
            length, pos = read_uvarint(view, pos)
            stop = pos + length
            if stop > end:
                raise ValueError(f"tagged field of {length} bytes runs past the end")
            if tag == 0:
                endpoints = _node_endpoints(view, pos, stop)
            pos = stop
    return FetchResponseData(version, throttle, error_code, session_id, topics, endpoints), pos


def _node_endpoints(view: memoryview, pos: int, end: int) -> tuple[NodeEndpoint, ...]:
    n, pos = compact_count(view, pos, end, 7)
    out = []
    for _ in range(n):
        (node_id,) = _I32.unpack_from(view, pos)
        host, pos = compact_string_at(view, pos + 4, end)
        (port,) = _I32.unpack_from(view, pos)
        rack, pos = compact_string_at(view, pos + 4, end)
        pos = skip_tagged_fields(view, pos, end)
        out.append(NodeEndpoint(node_id, host or "", port, rack))
    return tuple(out)
