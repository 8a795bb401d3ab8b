"""Fetch (key 1) request encoder, v4-v18, with the fetch-session fields (KIP-227).

Why our own: a consumer sends a Fetch for every few thousand records, and kafka-python's generic
``FetchRequest`` encode (a ``DataContainer`` per topic and partition, built and walked by its
schema machinery) costs tens of microseconds where a handful of ``struct`` calls do; with
incremental fetch sessions most requests name no partition at all. kafka-python's ``FetchRequest``
stays the reference: ``tests/unit/test_fetch_codec.py`` checks the bytes are identical for every
version.

The object is duck-typed like :class:`~.produce_request.ProduceRequestData` to what kafka-python's
connection reads from a request (``API_KEY``, ``API_VERSION``, ``expect_response()``,
``with_header()``, ``encode(framed=True, header=True)``, ``header``), so it goes over our own
plaintext connection and over kafka-python's (TLS, SASL) alike; its header answers
``get_response_class()`` with our decoder (:mod:`.fetch_response`).

Wire format (Kafka's ``FetchRequest.json``): v4-v11 request header v1, int16 strings, int32
arrays; v7 adds session id and epoch and the forgotten topics; v9 the partition's current leader
epoch (KIP-320); v11 the rack id; v12+ flexible (compact types, tagged fields, header v2) with the
partition's last fetched epoch; v13+ topics by id (KIP-516); v15+ drops ``replica_id`` (a consumer
sends none: it moved to a tagged field only followers set). Tagged fields a consumer leaves at
their default (cluster id, replica state and directory, the follower's high watermark) are not
written, as Kafka's and kafka-python's encoders do.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import NamedTuple, TypeAlias

from .fetch_response import FETCH_API_KEY, FetchResponseType, fetch_response_type
from .primitives import I32 as _I32
from .primitives import compact_string, string16, uvarint

__all__ = [
    "FETCH_API_KEY",
    "FETCH_MAX_VERSION",
    "FETCH_MAX_VERSION_BY_NAME",
    "FETCH_MIN_VERSION",
    "FetchPartitionData",
    "FetchRequestData",
    "ForgottenTopic",
    "TopicRef",
]

FETCH_MIN_VERSION = 4  # the first with the isolation level (read_committed)
FETCH_MAX_VERSION = 18
FETCH_MAX_VERSION_BY_NAME = 12  # v13+ names topics by id
_FIRST_SESSION = 7
_FIRST_LEADER_EPOCH = 9
_FIRST_RACK = 11
_FIRST_FLEXIBLE = 12
_FIRST_TOPIC_ID = 13
_FIRST_NO_REPLICA_ID = 15

#: A topic named by name (v4-v12) or by id (v13+).
TopicRef: TypeAlias = str | uuid.UUID

_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id
_PART_V4 = struct.Struct(">iqi")  # partition, fetch offset, partition max bytes
_PART_V5 = struct.Struct(">iqqi")  # + log start offset
_PART_V9 = struct.Struct(">iiqqi")  # + current leader epoch
_PART_V12 = struct.Struct(">iiqiqi")  # + last fetched epoch


class FetchPartitionData(NamedTuple):
    """One partition of a Fetch request: where to read and what the consumer believes."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1  # KIP-320: the broker refuses an older or newer epoch (v9+)
    last_fetched_epoch: int = -1  # KIP-595 divergence check; consumers send -1 as the Java client
    log_start_offset: int = -1  # a follower's; -1 from consumers


class ForgottenTopic(NamedTuple):
    """Partitions an incremental fetch removes from the session (v7+)."""

    topic: TopicRef
    partitions: Sequence[int]


class FetchRequestHeader:
    """What kafka-python's parser keeps per in-flight request (its ``RequestHeader``'s role)."""

    __slots__ = ("client_id", "correlation_id", "request_api_key", "request_api_version")

    def __init__(self, api_version: int, correlation_id: int, client_id: str | None) -> None:
        self.request_api_key = FETCH_API_KEY
        self.request_api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id

    @property
    def api_key(self) -> int:
        return self.request_api_key

    @property
    def api_version(self) -> int:
        return self.request_api_version

    def get_response_class(self) -> FetchResponseType:
        return fetch_response_type(self.request_api_version)


def _check_version(version: int) -> None:
    if not FETCH_MIN_VERSION <= version <= FETCH_MAX_VERSION:
        raise ValueError(
            f"Fetch version {version} is not supported (v{FETCH_MIN_VERSION}-v{FETCH_MAX_VERSION})"
        )


class FetchRequestData:
    """A Fetch request from a consumer (``replica_id`` -1), see the module docstring.

    ``topics``: ``[(topic, [FetchPartitionData, ...]), ...]`` - the topic is its name for v4-v12
    and its ``uuid.UUID`` id for v13+. ``forgotten``: the partitions an incremental fetch drops.
    ``session_id`` 0 / ``session_epoch`` -1 is a fetch without a session; 0 / 0 asks for a new
    session; (id, epoch >= 1) is an incremental fetch of session ``id``.
    """

    __slots__ = (
        "_header",
        "_version",
        "forgotten",
        "isolation_level",
        "max_bytes",
        "max_wait_ms",
        "min_bytes",
        "rack_id",
        "session_epoch",
        "session_id",
        "topics",
    )

    API_KEY = FETCH_API_KEY

    def __init__(
        self,
        *,
        version: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation_level: int,
        session_id: int = 0,
        session_epoch: int = -1,
        topics: Sequence[tuple[TopicRef, Sequence[FetchPartitionData]]] = (),
        forgotten: Sequence[ForgottenTopic] = (),
        rack_id: str = "",
    ) -> None:
        _check_version(version)
        self._version = version
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.isolation_level = isolation_level
        self.session_id = session_id
        self.session_epoch = session_epoch
        self.topics = topics
        self.forgotten = forgotten
        self.rack_id = rack_id
        self._header: FetchRequestHeader | None = None

    @property
    def API_VERSION(self) -> int:
        return self._version

    @API_VERSION.setter
    def API_VERSION(self, version: int) -> None:
        _check_version(version)
        self._version = version
        if self._header is not None:
            self._header.request_api_version = version

    @property
    def header(self) -> FetchRequestHeader | None:
        return self._header

    def expect_response(self) -> bool:
        return True

    def with_header(self, correlation_id: int = 0, client_id: str | None = "kafka-python") -> None:
        self._header = FetchRequestHeader(self._version, correlation_id, client_id)

    def encode(self, framed: bool = False, header: bool = False) -> bytes:
        """The request bytes: [int32 size] [request header] body, as kafka-python encodes them."""
        v = self._version
        flexible = v >= _FIRST_FLEXIBLE
        out = bytearray(4) if framed else bytearray()
        if header:
            h = self._header
            if h is None:
                raise ValueError("No header found")
            out += _HEADER.pack(FETCH_API_KEY, h.request_api_version, h.correlation_id)
            out += string16(h.client_id, "client_id")  # an int16 string in header v2 too
            if flexible:
                out += b"\x00"
        if v < _FIRST_NO_REPLICA_ID:
            out += b"\xff\xff\xff\xff"  # replica_id -1: a consumer
        out += struct.pack(">iiib", self.max_wait_ms, self.min_bytes, self.max_bytes, self.isolation_level)
        if v >= _FIRST_SESSION:
            out += struct.pack(">ii", self.session_id, self.session_epoch)
        by_id = v >= _FIRST_TOPIC_ID
        self._count(out, len(self.topics), flexible)
        for topic, partitions in self.topics:
            self._topic(out, topic, by_id, flexible)
            self._count(out, len(partitions), flexible)
            for p in partitions:
                if v >= _FIRST_FLEXIBLE:
                    out += _PART_V12.pack(
                        p.partition,
                        p.current_leader_epoch,
                        p.fetch_offset,
                        p.last_fetched_epoch,
                        p.log_start_offset,
                        p.partition_max_bytes,
                    )
                    out += b"\x00"  # the partition's tagged fields
                elif v >= _FIRST_LEADER_EPOCH:
                    out += _PART_V9.pack(
                        p.partition,
                        p.current_leader_epoch,
                        p.fetch_offset,
                        p.log_start_offset,
                        p.partition_max_bytes,
                    )
                elif v >= 5:
                    out += _PART_V5.pack(
                        p.partition, p.fetch_offset, p.log_start_offset, p.partition_max_bytes
                    )
                else:
                    out += _PART_V4.pack(p.partition, p.fetch_offset, p.partition_max_bytes)
            if flexible:
                out += b"\x00"  # the topic's tagged fields
        if v >= _FIRST_SESSION:
            self._count(out, len(self.forgotten), flexible)
            for forgotten in self.forgotten:
                self._topic(out, forgotten.topic, by_id, flexible)
                self._count(out, len(forgotten.partitions), flexible)
                for index in forgotten.partitions:
                    out += _I32.pack(index)
                if flexible:
                    out += b"\x00"
        if v >= _FIRST_RACK:
            out += compact_string(self.rack_id) if flexible else string16(self.rack_id, "rack_id")
        if flexible:
            out += b"\x00"  # the request's tagged fields
        if framed:
            _I32.pack_into(out, 0, len(out) - 4)
        return bytes(out)

    @staticmethod
    def _count(out: bytearray, n: int, flexible: bool) -> None:
        out += uvarint(n + 1) if flexible else _I32.pack(n)

    def _topic(self, out: bytearray, topic: TopicRef, by_id: bool, flexible: bool) -> None:
        if by_id:
            if not isinstance(topic, uuid.UUID):
                raise TypeError(f"Fetch v{self._version} names topics by uuid.UUID id, got {topic!r}")
            out += topic.bytes
        elif not isinstance(topic, str):
            raise TypeError(f"Fetch v{self._version} names topics by name, got {topic!r}")
        else:
            out += compact_string(topic) if flexible else string16(topic, "topic")

    def __repr__(self) -> str:
        partitions = sum(len(parts) for _, parts in self.topics)
        return (
            f"FetchRequest[v{self._version}](session_id={self.session_id}, "
            f"session_epoch={self.session_epoch}, partitions={partitions}, "
            f"forgotten={sum(len(f.partitions) for f in self.forgotten)}, "
            f"isolation_level={self.isolation_level})"
        )
