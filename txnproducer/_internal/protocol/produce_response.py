"""Hand-written ProduceResponse decoder (Produce v3-v13).

Why: the Sender decodes one Produce answer per request on its own thread, and kafka-python's
generic struct decode of ``ProduceResponse`` costs as much again as encoding the request did (see
:mod:`.produce_request`; the measurements are in ``benchmarks/README.md``). kafka-python's parser
calls :meth:`ProduceResponseType.parse_header` and :meth:`ProduceResponseType.decode` on the
received ``KafkaBytes`` frame; our own connection calls :func:`decode_produce_response`.

kafka-python's ``ProduceResponse`` remains the reference: ``tests/unit/test_produce_codec.py``
checks that we decode its encoded responses to the same values, for every version 3-13.

Wire format (Kafka's ``ProduceResponse.json``): v3-v8 use response header v0, int16-length
strings and int32-length arrays; v9+ response header v1 (correlation id + tagged fields), compact
types and a tagged-field section after every struct; v13 names topics by id. Tagged fields
(``CurrentLeader``, ``NodeEndpoints``, KIP-951) are skipped by their length.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, NamedTuple

from kafka.protocol.frame import KafkaBytes

from txnproducer._internal.accel import PRODUCE as _PRODUCE

from .primitives import I16 as _I16
from .primitives import I32 as _I32
from .primitives import check_count as _check_count
from .primitives import compact_count as _compact_count
from .primitives import compact_string_at as _compact_string_at
from .primitives import read_uvarint, skip_tagged_fields
from .primitives import string_at as _string_at
from .produce_versions import FIRST_FLEXIBLE as _FIRST_FLEXIBLE
from .produce_versions import FIRST_TOPIC_ID as _FIRST_TOPIC_ID
from .produce_versions import MAX_VERSION, MIN_VERSION, PRODUCE_API_KEY
from .produce_versions import check_version as _check_version

__all__ = [
    "NodeEndpoint",
    "PartitionResponse",
    "ProduceResponseData",
    "ProduceResponseHeader",
    "ProduceResponseType",
    "RecordError",
    "TopicResponse",
    "decode_produce_response",
    "response_type",
]

# index, error_code, base_offset, log_append_time_ms
_PART_V3 = struct.Struct(">ihqq")
# index, error_code, base_offset, log_append_time_ms, log_start_offset
_PART_V5 = struct.Struct(">ihqqq")


class RecordError(NamedTuple):
    """One record that made the broker drop its batch (v8+)."""

    batch_index: int
    batch_index_error_message: str | None


class PartitionResponse:
    """One partition's answer (a slots class: a NamedTuple field may not be called ``index``)."""

    __slots__ = ("base_offset", "current_leader", "error_code", "error_message", "index",
                 "log_append_time_ms", "log_start_offset", "record_errors")

    def __init__(self, index: int, error_code: int, base_offset: int, log_append_time_ms: int,
                 log_start_offset: int, record_errors: tuple[RecordError, ...],
                 error_message: str | None, current_leader: tuple[int, int] | None = None) -> None:
        self.index = index
        self.error_code = error_code
        self.base_offset = base_offset
        self.log_append_time_ms = log_append_time_ms
        self.log_start_offset = log_start_offset  # -1 before v5
        self.record_errors = record_errors  # empty before v8
        self.error_message = error_message  # None before v8
        # KIP-951 (v10+, tag 0): (leader id, leader epoch) a NOT_LEADER_OR_FOLLOWER answer names
        self.current_leader = current_leader

    def __repr__(self) -> str:
        return (f"PartitionResponse(index={self.index}, error_code={self.error_code}, "
                f"base_offset={self.base_offset}, log_append_time_ms={self.log_append_time_ms}, "
                f"log_start_offset={self.log_start_offset}, record_errors={self.record_errors!r}, "
                f"error_message={self.error_message!r}, current_leader={self.current_leader!r})")


class NodeEndpoint(NamedTuple):
    """A broker a Produce answer names as a partition's current leader (KIP-951)."""

    node_id: int
    host: str
    port: int
    rack: str | None


class TopicResponse(NamedTuple):
    name: str | None  # None for v13
    topic_id: uuid.UUID | None  # None before v13
    partition_responses: list[PartitionResponse]


class ProduceResponseHeader(NamedTuple):
    correlation_id: int


class ProduceResponseData:
    """A decoded ProduceResponse (the attributes kafka-python's ProduceResponse has that we use)."""

    __slots__ = ("API_VERSION", "node_endpoints", "responses", "throttle_time_ms")

    API_KEY = PRODUCE_API_KEY

    def __init__(self, version: int, responses: list[TopicResponse], throttle_time_ms: int,
                 node_endpoints: tuple[NodeEndpoint, ...] = ()) -> None:
        self.API_VERSION = version
        self.responses = responses
        self.throttle_time_ms = throttle_time_ms
        # KIP-951 (v10+, tag 0): the brokers named as current leaders, so a client can reach them
        self.node_endpoints = node_endpoints

    def __repr__(self) -> str:
        errors = sum(1 for t in self.responses for p in t.partition_responses if p.error_code)
        return (f"ProduceResponse[v{self.API_VERSION}](topics={len(self.responses)}, "
                f"partitions={sum(len(t.partition_responses) for t in self.responses)}, "
                f"errors={errors}, throttle_time_ms={self.throttle_time_ms})")


_tuple_new = tuple.__new__  # builds a NamedTuple without its Python-level ``__new__``


def _buffer_and_pos(data: Any) -> tuple[Any, int, int]:
    """(bytes, where to start in them, their offset in ``data``): a ``KafkaBytes`` frame is read in
    place from its ``tell()``; another object with ``read()`` is read to its end."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        tell = getattr(data, "tell", None)
        return data, (tell() if tell is not None else 0), 0
    tell = getattr(data, "tell", None)
    base = tell() if tell is not None else 0
    return data.read(), 0, base


class ProduceResponseType:
    """kafka-python's "response class" for one Produce version: ``parse_header`` + ``decode``.

    The parser calls both on the received frame (a ``KafkaBytes`` positioned after the size
    prefix); malformed or truncated data raises ``ValueError`` or ``struct.error``, which the
    parser turns into ``KafkaProtocolError``.
    """

    __slots__ = ("API_VERSION", "flexible")

    API_KEY = PRODUCE_API_KEY

    def __init__(self, version: int) -> None:
        _check_version(version)
        self.API_VERSION = version
        self.flexible = version >= _FIRST_FLEXIBLE

    def parse_header(self, data: Any) -> ProduceResponseHeader:
        """Response header v0 (correlation id), v1 for flexible versions (+ tagged fields)."""
        if type(data) is KafkaBytes:  # the parser's frame: read in place
            buf: Any = data
            base = 0
            pos = data.tell()
        else:
            buf, pos, base = _buffer_and_pos(data)
        (correlation_id,) = _I32.unpack_from(buf, pos)
        pos += 4
        if self.flexible:
            try:
                pos = pos + 1 if buf[pos] == 0 else skip_tagged_fields(buf, pos, len(buf))
            except IndexError as exc:
                raise ValueError("truncated ProduceResponse header") from exc
        seek = getattr(data, "seek", None)
        if seek is not None:
            seek(base + pos)
        header: ProduceResponseHeader = _tuple_new(ProduceResponseHeader, (correlation_id,))
        return header

    def decode(self, data: Any) -> ProduceResponseData:
        if type(data) is KafkaBytes:  # the parser's frame: read in place
            end = len(data)
            response: ProduceResponseData | None = None
            if _PRODUCE is not None and self.flexible:  # the common shape, compiled (None: not that)
                response = _PRODUCE.decode_response(data, data.tell(), self.API_VERSION)
            if response is None:
                response = _decode(data, self.API_VERSION, data.tell(), end)
            data.seek(end)
            return response
        buf, pos, base = _buffer_and_pos(data)
        end = buf.nbytes if type(buf) is memoryview else len(buf)
        response = _decode(buf, self.API_VERSION, pos, end)
        seek = getattr(data, "seek", None)
        if seek is not None:
            seek(base + end)
        return response

    def __repr__(self) -> str:
        return f"ProduceResponse[v{self.API_VERSION}]"


_RESPONSE_TYPES = {v: ProduceResponseType(v) for v in range(MIN_VERSION, MAX_VERSION + 1)}


def response_type(version: int) -> ProduceResponseType:
    """The (shared) response type kafka-python's parser uses for Produce ``version``."""
    try:
        return _RESPONSE_TYPES[version]
    except KeyError:
        _check_version(version)
        raise


def decode_produce_response(data: bytes | bytearray | memoryview, version: int,
                            pos: int = 0) -> ProduceResponseData:
    """Decode a ProduceResponse body (after the response header) that must end where ``data`` does.

    Raises ValueError or struct.error for malformed, truncated or over-long data.
    """
    _check_version(version)
    return _decode(data, version, pos, data.nbytes if type(data) is memoryview else len(data))


def _decode(data: Any, version: int, pos: int, end: int) -> ProduceResponseData:
    try:
        if version >= _FIRST_FLEXIBLE:
            response, pos = _decode_flexible(data, pos, end, version)
        else:
            response, pos = _decode_classic(data, pos, end, version)
    except IndexError as exc:  # a varint, string length or tag read past the end
        raise ValueError("truncated ProduceResponse") from exc
    if pos != end:
        raise ValueError(f"ProduceResponse v{version}: {end - pos} unexpected trailing bytes")
    return response


# -- v3-v8: int32 array lengths, int16 string lengths ---------------------------------------------


def _decode_classic(data: Any, pos: int, end: int, version: int) -> tuple[ProduceResponseData, int]:
    i16 = _I16.unpack_from
    i32 = _I32.unpack_from
    with_log_start = version >= 5
    part_struct = _PART_V5 if with_log_start else _PART_V3
    part_unpack = part_struct.unpack_from
    part_size = part_struct.size
    with_errors = version >= 8
    (n_topics,) = i32(data, pos)
    pos += 4
    if n_topics == -1:  # a null array (Kafka never sends one): read as empty
        n_topics = 0
    _check_count(n_topics, pos, end, 6)
    topics: list[TopicResponse] = []
    for _ in range(n_topics):
        (length,) = i16(data, pos)
        pos += 2
        stop = pos + length
        if length < 0 or stop > end:
            raise ValueError(f"bad topic name length {length} at offset {pos - 2}")
        name = str(data[pos:stop], "utf-8")
        (n_parts,) = i32(data, stop)
        pos = stop + 4
        if n_parts == -1:
            n_parts = 0
        _check_count(n_parts, pos, end, part_size)
        parts: list[PartitionResponse] = []
        for _ in range(n_parts):
            if with_log_start:
                index, code, base_offset, append_time, log_start = part_unpack(data, pos)
            else:
                index, code, base_offset, append_time = part_unpack(data, pos)
                log_start = -1
            pos += part_size
            record_errors: tuple[RecordError, ...] = ()
            error_message = None
            if with_errors:
                (n_errors,) = i32(data, pos)
                pos += 4
                if n_errors > 0:
                    record_errors, pos = _classic_record_errors(data, pos, end, n_errors)
                elif n_errors < -1:
                    raise ValueError(f"bad array length {n_errors} at offset {pos - 4}")
                (length,) = i16(data, pos)
                pos += 2
                if length >= 0:
                    error_message, pos = _string_at(data, pos, end, length)
            parts.append(PartitionResponse(index, code, base_offset, append_time, log_start,
                                           record_errors, error_message))
        topics.append(_tuple_new(TopicResponse, (name, None, parts)))
    (throttle_time_ms,) = i32(data, pos)
    return ProduceResponseData(version, topics, throttle_time_ms), pos + 4


def _classic_record_errors(data: Any, pos: int, end: int, count: int) -> tuple[tuple[RecordError, ...], int]:
    _check_count(count, pos, end, 6)
    errors = []
    for _ in range(count):
        batch_index, length = _INDEX_LEN16.unpack_from(data, pos)
        pos += 6
        message = None
        if length >= 0:
            message, pos = _string_at(data, pos, end, length)
        errors.append(_tuple_new(RecordError, (batch_index, message)))
    return tuple(errors), pos


_INDEX_LEN16 = struct.Struct(">ih")


# -- v9+: compact (varint) lengths, tagged fields ----------------------------------------------------


def _flexible_record_errors(data: Any, pos: int, end: int) -> tuple[tuple[RecordError, ...], int]:
    count, pos = _compact_count(data, pos, end, 6)
    errors = []
    for _ in range(count):
        (batch_index,) = _I32.unpack_from(data, pos)
        message, pos = _compact_string_at(data, pos + 4, end)
        pos = skip_tagged_fields(data, pos, end)
        errors.append(_tuple_new(RecordError, (batch_index, message)))
    return tuple(errors), pos


# uuid.UUID(bytes=...) costs about 3 us; a producer writes to few topics, so the ids of the
# answers are cached by their bytes (bounded: a long-lived producer may see many topics)
_TOPIC_IDS: dict[bytes, uuid.UUID] = {}
_TOPIC_IDS_MAX = 4096


def _topic_id(raw: bytes) -> uuid.UUID:
    topic_id = uuid.UUID(bytes=raw)
    if len(_TOPIC_IDS) >= _TOPIC_IDS_MAX:
        _TOPIC_IDS.clear()
    _TOPIC_IDS[raw] = topic_id
    return topic_id


def _decode_flexible(data: Any, pos: int, end: int, version: int) -> tuple[ProduceResponseData, int]:
    # The common single-byte cases (short names, < 127 items, no tags, no errors) are inlined:
    # this runs once per Produce request on the Sender thread. A single-byte count needs no
    # bounds check before its loop: the loop fails on the data (IndexError/struct.error).
    part_unpack = _PART_V5.unpack_from
    by_id = version >= _FIRST_TOPIC_ID
    n_topics = data[pos] - 1
    if 0 <= n_topics < 0x7F:
        pos += 1
    else:
        n_topics, pos = _compact_count(data, pos, end, 18 if by_id else 3)
    topics: list[TopicResponse] = []
    for _ in range(n_topics):
        name: str | None = None
        topic_id: uuid.UUID | None = None
        if by_id:
            stop = pos + 16
            if stop > end:
                raise ValueError(f"truncated topic id at offset {pos}")
            raw = bytes(data[pos:stop])
            topic_id = _TOPIC_IDS.get(raw)
            if topic_id is None:
                topic_id = _topic_id(raw)
            pos = stop
        else:
            length = data[pos] - 1
            if 0 <= length < 0x7F:
                stop = pos + 1 + length
                if stop > end:
                    raise ValueError(f"string of {length} bytes runs past the end at offset {pos}")
                name = str(data[pos + 1:stop], "utf-8")
                pos = stop
            else:
                name, pos = _compact_string_at(data, pos, end)
                if name is None:
                    raise ValueError(f"null topic name at offset {pos - 1}")
        n_parts = data[pos] - 1
        if 0 <= n_parts < 0x7F:
            pos += 1
        else:
            n_parts, pos = _compact_count(data, pos, end, 33)
        parts: list[PartitionResponse] = []
        for _ in range(n_parts):
            index, code, base_offset, append_time, log_start = part_unpack(data, pos)
            pos += 30
            if data[pos] == 1:  # no record errors
                record_errors: tuple[RecordError, ...] = ()
                pos += 1
            else:
                record_errors, pos = _flexible_record_errors(data, pos, end)
            if data[pos] == 0:  # null error message
                error_message = None
                pos += 1
            else:
                error_message, pos = _compact_string_at(data, pos, end)
            current_leader = None
            if data[pos] == 0:
                pos += 1
            else:  # CurrentLeader (v10+, tag 0) or tags we do not know
                current_leader, pos = _partition_tags(data, pos, end)
            parts.append(PartitionResponse(index, code, base_offset, append_time, log_start,
                                           record_errors, error_message, current_leader))
        if data[pos] == 0:
            pos += 1
        else:
            pos = skip_tagged_fields(data, pos, end)
        topics.append(_tuple_new(TopicResponse, (name, topic_id, parts)))
    (throttle_time_ms,) = _I32.unpack_from(data, pos)
    pos += 4
    endpoints: tuple[NodeEndpoint, ...] = ()
    if data[pos] == 0:
        pos += 1
    else:  # NodeEndpoints (v10+, tag 0) or tags we do not know
        endpoints, pos = _response_tags(data, pos, end)
    return ProduceResponseData(version, topics, throttle_time_ms, endpoints), pos


_LEADER = struct.Struct(">ii")  # leader id, leader epoch


def _tagged_fields(data: Any, pos: int, end: int) -> tuple[dict[int, tuple[int, int]], int]:
    """A tagged-field section: {tag: (start, stop)} of each field's bytes, and the position after."""
    count, pos = read_uvarint(data, pos)
    fields: dict[int, tuple[int, int]] = {}
    for _ in range(count):
        tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        stop = pos + size
        if stop > end:
            raise ValueError(f"tagged field of {size} bytes runs past the end")
        fields[tag] = (pos, stop)
        pos = stop
    return fields, pos


def _partition_tags(data: Any, pos: int, end: int) -> tuple[tuple[int, int] | None, int]:
    """A partition's tagged fields: tag 0 is CurrentLeader (leader id, epoch, its own tags)."""
    fields, pos = _tagged_fields(data, pos, end)
    where = fields.get(0)
    if where is None:
        return None, pos
    leader_id, leader_epoch = _LEADER.unpack_from(data, where[0])
    return (leader_id, leader_epoch), pos


def _response_tags(data: Any, pos: int, end: int) -> tuple[tuple[NodeEndpoint, ...], int]:
    """The response's tagged fields: tag 0 is NodeEndpoints (id, host, port, rack, tags each)."""
    fields, pos = _tagged_fields(data, pos, end)
    where = fields.get(0)
    if where is None:
        return (), pos
    start, stop = where
    n, at = _compact_count(data, start, stop, 7)
    endpoints = []
    for _ in range(n):
        (node_id,) = _I32.unpack_from(data, at)
        host, at = _compact_string_at(data, at + 4, stop)
        (port,) = _I32.unpack_from(data, at)
        rack, at = _compact_string_at(data, at + 4, stop)
        at = skip_tagged_fields(data, at, stop)
        endpoints.append(_tuple_new(NodeEndpoint, (node_id, host or "", port, rack)))
    return tuple(endpoints), pos


def _configure_compiled() -> None:
    """Name the classes the compiled decoder builds, and share the topic id cache with it. Classes it
    cannot build (a slot renamed here and not there) leave the compiled decoder off: every answer is
    then this module's, and tests/unit/test_produce_codec_compiled.py fails."""
    global _PRODUCE
    if _PRODUCE is not None:
        try:
            _PRODUCE.configure(PartitionResponse, TopicResponse, ProduceResponseData, _TOPIC_IDS, _topic_id,
                               uuid.UUID)
        except TypeError:
            _PRODUCE = None


_configure_compiled()
