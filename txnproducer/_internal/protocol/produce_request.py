"""Hand-written ProduceRequest encoder (Produce v3-v13).

Why: the Sender sends one Produce request per ~120 records, and under the GIL its CPU is lost
throughput. kafka-python's generic protocol machinery (``kafka/protocol/api_message.py``) builds a
``ProduceRequest`` data object and encodes it with header and frame, copying the record batches
twice; here it is a handful of ``struct`` calls and one ``b"".join`` into the final frame (the
record batches are not copied before that join). The measurements that decided it are in
``benchmarks/README.md``.

The request frames itself: :class:`ProduceRequestData` has what our connection's framer
(:mod:`.framing`) asks of a request that is not a kafka-python message (``API_KEY``, ``API_VERSION``,
``expect_response()``, ``with_header()``, ``encode(framed=True, header=True)``, ``header``); its
:class:`ProduceRequestHeader` answers ``get_response_class()`` with the
:class:`~.produce_response.ProduceResponseType` of its version.

kafka-python's ``ProduceRequest`` remains the reference: ``tests/unit/test_produce_codec.py``
checks that our request bytes are identical to its, for every version 3-13.

Wire format (Kafka's ``ProduceRequest.json``): v3-v8 use request header v1, int16-length
strings, int32-length arrays and bytes; v9+ are flexible: request header v2 (v1 + empty tagged
fields; its client_id stays an int16 string), compact strings/arrays/bytes (unsigned varint
length + 1, 0 = null) and a tagged-field section after every struct. v13 names topics by 16-byte
topic id instead of name.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import TypeAlias

from txnproducer._internal.accel import PRODUCE as _PRODUCE

from .primitives import COMPACT_CACHE as _COMPACT
from .primitives import I32 as _I32
from .primitives import STRING16_CACHE as _STRING16
from .primitives import UVARINT_1 as _UVARINT_1
from .primitives import cached_compact_string as _cache_compact
from .primitives import cached_string16 as _cache_string16
from .primitives import uvarint as _uvarint
from .produce_response import ProduceResponseType, response_type
from .produce_versions import FIRST_FLEXIBLE as _FIRST_FLEXIBLE
from .produce_versions import FIRST_TOPIC_ID as _FIRST_TOPIC_ID
from .produce_versions import PRODUCE_API_KEY
from .produce_versions import check_version as _check_version

__all__ = ["ProduceRequestData", "ProduceRequestHeader", "Records", "TopicData"]

#: An encoded record batch (or several), as handed to the request; never copied before the join.
Records: TypeAlias = bytes | bytearray | memoryview
#: One topic of a request: its name (v3-v12) or topic id (v13), and (partition, records) pairs.
TopicData: TypeAlias = tuple[str | uuid.UUID, Sequence[tuple[int, Records | None]]]

_REQUEST_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id
_FRAME_HEADER = struct.Struct(">ihhi")  # size, api key, api version, correlation id
_ACKS_TIMEOUT = struct.Struct(">hi")
_ACKS_TIMEOUT_COUNT = struct.Struct(">hii")
_INDEX_SIZE = struct.Struct(">ii")
_I32_VARINT1 = struct.Struct(">iB")  # a partition index and a one-byte unsigned varint
_I32_VARINT2 = struct.Struct(">iBB")  # ... and a two-byte one (values 0x80-0x3FFF)


def _nbytes(records: Records) -> int:
    return records.nbytes if type(records) is memoryview else len(records)



class ProduceRequestHeader:
    """What kafka-python's parser keeps per in-flight request (its ``RequestHeader``'s role)."""

    __slots__ = ("client_id", "correlation_id", "request_api_key", "request_api_version")

    def __init__(self, api_version: int, correlation_id: int, client_id: str | None) -> None:
        self.request_api_key = PRODUCE_API_KEY
        self.request_api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id

    # kafka-python's parser logs ``header.api_key`` / ``header.api_version`` (names its own
    # RequestHeader does not have) when it finds no response class; answer them anyway.
    @property
    def api_key(self) -> int:
        return self.request_api_key

    @property
    def api_version(self) -> int:
        return self.request_api_version

    def get_response_class(self) -> ProduceResponseType:
        return response_type(self.request_api_version)

    def __repr__(self) -> str:
        return (f"ProduceRequestHeader(api_version={self.request_api_version}, "
                f"correlation_id={self.correlation_id}, client_id={self.client_id!r})")


class ProduceRequestData:
    """A Produce request, framed by itself in place of kafka-python's ``ProduceRequest``.

    ``topic_data`` is a sequence of ``(topic, [(partition, records), ...])``: ``topic`` is the
    name for v3-v12 and the ``uuid.UUID`` topic id for v13; ``records`` is the encoded record
    batch (bytes, bytearray or memoryview; None encodes null).
    """

    __slots__ = ("_header", "_version", "acks", "timeout_ms", "topic_data", "transactional_id")

    API_KEY = PRODUCE_API_KEY

    def __init__(self, *, version: int, transactional_id: str | None, acks: int, timeout_ms: int,
                 topic_data: Sequence[TopicData]) -> None:
        _check_version(version)
        self._version = version
        self.transactional_id = transactional_id
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.topic_data = topic_data
        self._header: ProduceRequestHeader | None = None

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
    def header(self) -> ProduceRequestHeader | None:
        return self._header

    def expect_response(self) -> bool:
        return self.acks != 0

    def with_header(self, correlation_id: int = 0, client_id: str | None = "kafka-python") -> None:
        self._header = ProduceRequestHeader(self._version, correlation_id, client_id)

    def encode(self, framed: bool = False, header: bool = False) -> bytes:
        """The request bytes: [int32 size] [request header] body, as kafka-python encodes them."""
        version = self._version
        head = bytearray(4) if framed else bytearray()
        if header:
            h = self._header
            if h is None:
                raise ValueError("No header found")
            head += _REQUEST_HEADER.pack(PRODUCE_API_KEY, h.request_api_version, h.correlation_id)
            # the header's client_id is an int16 string even in flexible versions (header v2)
            head += _STRING16.get(h.client_id) or _cache_string16(h.client_id)
            if version >= _FIRST_FLEXIBLE:
                head += b"\x00"  # the header's empty tagged fields
        return self._encode_after(head, framed)

    def encode_frame(self, correlation_id: int, header_tail: bytes) -> bytes:
        """The framed request with its header, for our connection's framer (no header object made):
        ``header_tail`` is what follows the correlation id in the request header, the client id as
        an int16 string and, for flexible versions, the empty tagged fields (the framer keeps both).
        The compiled codec (``accel/_produce.c``) builds it when built and this is a flexible version
        it takes; otherwise the same bytes come from here."""
        if _PRODUCE is not None:
            frame: bytes | None = _PRODUCE.encode_frame(self._version, correlation_id, header_tail,
                                                        self.transactional_id, self.acks, self.timeout_ms,
                                                        self.topic_data)
            if frame is not None:
                return frame
        head = bytearray(_FRAME_HEADER.pack(0, PRODUCE_API_KEY, self._version, correlation_id))
        head += header_tail
        return self._encode_after(head, True)

    def _encode_after(self, head: bytearray, framed: bool) -> bytes:
        """The body after ``head`` (the frame's size, when ``framed``, is written into its first 4 bytes)."""
        version = self._version
        flexible = version >= _FIRST_FLEXIBLE
        topics = self.topic_data
        n_topics = len(topics)
        if flexible:
            txn = self.transactional_id
            head += _COMPACT.get(txn) or _cache_compact(txn)
            head += _ACKS_TIMEOUT.pack(self.acks, self.timeout_ms)
            head += _UVARINT_1[n_topics + 1] if n_topics < 0x7F else _uvarint(n_topics + 1)
        else:
            txn = self.transactional_id
            head += _STRING16.get(txn) or _cache_string16(txn)
            head += _ACKS_TIMEOUT_COUNT.pack(self.acks, self.timeout_ms, n_topics)
        parts: list[Records] = [head]
        # ``cur`` gathers the small fields between two record batches: one join part each.
        cur = head
        total = 0
        by_id = version >= _FIRST_TOPIC_ID
        for topic, partitions in topics:
            if by_id:
                if not isinstance(topic, uuid.UUID):
                    raise TypeError(f"Produce v{version} names topics by uuid.UUID id, got {topic!r}")
                cur += topic.bytes
            elif type(topic) is not str:
                raise TypeError(f"Produce v{version} names topics by name, got {topic!r}")
            elif flexible:
                cur += _COMPACT.get(topic) or _cache_compact(topic)
            else:
                cur += _STRING16.get(topic) or _cache_string16(topic)
            n_parts = len(partitions)
            if flexible:
                cur += _UVARINT_1[n_parts + 1] if n_parts < 0x7F else _uvarint(n_parts + 1)
                for index, records in partitions:
                    if records is None:
                        cur += _I32.pack(index)
                        cur += b"\x00\x00"  # null records, empty tagged fields
                        continue
                    size = records.nbytes if type(records) is memoryview else len(records)
                    n = size + 1  # the compact length: one struct call for the index and a 1-2 byte varint
                    if n < 0x80:
                        cur += _I32_VARINT1.pack(index, n)
                    elif n < 0x4000:
                        cur += _I32_VARINT2.pack(index, (n & 0x7F) | 0x80, n >> 7)
                    else:
                        cur += _I32.pack(index)
                        cur += _uvarint(n)
                    total += len(cur) + size
                    parts.append(records)
                    cur = bytearray(b"\x00")  # the partition's empty tagged fields
                    parts.append(cur)
                cur += b"\x00"  # the topic's empty tagged fields
            else:
                cur += _I32.pack(n_parts)
                for index, records in partitions:
                    if records is None:
                        cur += _INDEX_SIZE.pack(index, -1)
                        continue
                    size = records.nbytes if type(records) is memoryview else len(records)
                    cur += _INDEX_SIZE.pack(index, size)
                    total += len(cur) + size
                    parts.append(records)
                    cur = bytearray()
                    parts.append(cur)
        if flexible:
            cur += b"\x00"  # the body's empty tagged fields
        total += len(cur)
        if framed:
            _I32.pack_into(head, 0, total - 4)
        if len(parts) == 1:
            return bytes(head)
        return b"".join(parts)

    def __repr__(self) -> str:
        partitions = 0
        size = 0
        for _, parts in self.topic_data:
            partitions += len(parts)
            size += sum(_nbytes(r) for _, r in parts if r is not None)
        return (f"ProduceRequest[v{self._version}](transactional_id={self.transactional_id!r}, "
                f"acks={self.acks}, timeout_ms={self.timeout_ms}, topics={len(self.topic_data)}, "
                f"partitions={partitions}, record_bytes={size})")
