"""The hand-written Produce codec must match kafka-python's ProduceRequest/ProduceResponse exactly.

kafka-python's generic classes stay the reference: every request must be byte-identical to
``ProduceRequest(...).with_header(...).encode(framed=True, header=True)`` and every response
that ``ProduceResponse(...).encode()`` produces must decode to the same values, for Produce
v3-v13. The last tests drive the codec through kafka-python's own ``KafkaProtocol`` parser, the
path the Sender's requests take on a real connection.
"""

from __future__ import annotations

import io
import random
import struct
import uuid
from types import SimpleNamespace
from typing import Any

import kafka.errors as kafka_errors
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.future import Future
from kafka.protocol.frame import KafkaBytes
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.structs import TopicPartition

from tests._support.produce_codec import as_records as _as
from tests._support.produce_codec import leader as _leader
from tests._support.produce_codec import normalized as _normalized_ours
from tests._support.produce_codec import reference_response as _reference_response
from txnproducer._internal.protocol.produce_request import ProduceRequestData, Records
from txnproducer._internal.protocol.produce_response import (
    ProduceResponseData,
    ProduceResponseType,
    decode_produce_response,
    response_type,
)
from txnproducer._internal.protocol.produce_versions import MAX_VERSION, MIN_VERSION
from txnproducer._internal.sender import Sender

VERSIONS = list(range(MIN_VERSION, MAX_VERSION + 1))
_T = ProduceRequest.TopicProduceData
_P = _T.PartitionProduceData
_RT = ProduceResponse.TopicProduceResponse
_RP = _RT.PartitionProduceResponse

# -- strategies -----------------------------------------------------------------------------------

_INT16 = st.integers(-(2**15), 2**15 - 1)
_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.integers(-(2**63), 2**63 - 1)
_text = st.one_of(
    st.text(max_size=30),
    st.text(alphabet="é漢🙂x-._", min_size=100, max_size=300),  # multi-byte lengths in compact strings
)
_nullable_text = st.one_of(st.none(), st.just(""), _text)
_payload = st.one_of(
    st.just(b""),
    st.binary(max_size=200),
    st.integers(min_value=126, max_value=130).map(lambda n: bytes(range(n))),  # the 1 -> 2 byte varint
    st.integers(min_value=16_000, max_value=70_000).map(lambda n: random.Random(n).randbytes(n)),
)
_container = st.sampled_from(["bytes", "bytearray", "memoryview", "memoryview-slice"])
_records = st.one_of(st.none(), st.tuples(_payload, _container))
_partitions = st.lists(st.tuples(_INT32, _records), max_size=4)
_topics = st.lists(st.tuples(_text, st.uuids(), _partitions), max_size=4)




def _requests(version: int, transactional_id: str | None, acks: int, timeout_ms: int,
              topics: list[tuple[str, uuid.UUID, list[tuple[int, tuple[bytes, str] | None]]]],
              ) -> tuple[Any, ProduceRequestData]:
    """The same request as kafka-python's ProduceRequest and as ours."""
    ref_topics = []
    our_topics: list[tuple[str | uuid.UUID, list[tuple[int, Records | None]]]] = []
    for name, topic_id, parts in topics:
        ref_parts = [_P(index=i, records=None if r is None else r[0]) for i, r in parts]
        our_parts = [(i, None if r is None else _as(r[1], r[0])) for i, r in parts]
        if version >= 13:
            ref_topics.append(_T(topic_id=topic_id, partition_data=ref_parts))
            our_topics.append((topic_id, our_parts))
        else:
            ref_topics.append(_T(name=name, partition_data=ref_parts))
            our_topics.append((name, our_parts))
    ref = ProduceRequest(version=version, transactional_id=transactional_id, acks=acks,
                         timeout_ms=timeout_ms, topic_data=ref_topics)
    ours = ProduceRequestData(version=version, transactional_id=transactional_id, acks=acks,
                              timeout_ms=timeout_ms, topic_data=our_topics)
    return ref, ours


# -- requests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(transactional_id=_nullable_text, acks=st.sampled_from([-1, 0, 1]), timeout_ms=_INT32,
       topics=_topics, correlation_id=st.integers(0, 2**31 - 1), client_id=_nullable_text)
def test_request_bytes_match_kafka_python(version: int, transactional_id: str | None, acks: int,
                                          timeout_ms: int, topics: Any, correlation_id: int,
                                          client_id: str | None) -> None:
    ref, ours = _requests(version, transactional_id, acks, timeout_ms, topics)
    ref.with_header(correlation_id=correlation_id, client_id=client_id)
    ours.with_header(correlation_id=correlation_id, client_id=client_id)
    expected = bytes(ref.encode(framed=True, header=True))
    got = ours.encode(framed=True, header=True)
    assert type(got) is bytes
    assert got == expected
    assert ours.encode() == bytes(ref.encode())  # the body alone
    assert ours.encode(header=True) == bytes(ref.encode(header=True))
    assert ours.expect_response() == ref.expect_response()


@pytest.mark.parametrize("version", VERSIONS)
def test_request_bytes_match_kafka_python_seeded(version: int) -> None:
    """Deterministic breadth: many topics/partitions (multi-byte compact array lengths)."""
    rng = random.Random(version)
    for _ in range(20):
        topics = []
        for _t in range(rng.choice([0, 1, 3, 130])):
            parts = []
            for _p in range(rng.choice([0, 1, 2, 5, 200]) if _t == 0 else rng.randint(0, 3)):
                payload = rng.randbytes(rng.choice([0, 1, 61, 126, 127, 128, 16_382, 16_383, 16_384]))
                parts.append((rng.randrange(2**31), rng.choice([None, (payload, rng.choice(
                    ["bytes", "bytearray", "memoryview", "memoryview-slice"]))])))
            name = "".join(rng.choice("abcé漢") for _ in range(rng.randint(1, 300)))
            topics.append((name, uuid.UUID(int=rng.getrandbits(128)), parts))
        txn = rng.choice([None, "", "txn-1", "é" * 3000])
        ref, ours = _requests(version, txn, -1, rng.randrange(2**31), topics)
        client_id = rng.choice([None, "", "txnproducer", "客户端"])
        ref.with_header(correlation_id=rng.randrange(2**31), client_id=client_id)
        ours.with_header(correlation_id=ref.header.correlation_id, client_id=client_id)
        assert ours.encode(framed=True, header=True) == bytes(ref.encode(framed=True, header=True))


def test_request_interface() -> None:
    req = ProduceRequestData(version=12, transactional_id="t", acks=-1, timeout_ms=1000,
                             topic_data=[("a", [(0, b"xy"), (1, b"z")]), ("b", [(3, b"")])])
    assert req.API_KEY == 0 and req.API_VERSION == 12
    assert req.header is None
    with pytest.raises(ValueError, match="No header"):
        req.encode(framed=True, header=True)
    req.with_header(correlation_id=5, client_id="c")
    assert req.header is not None
    assert (req.header.correlation_id, req.header.request_api_key, req.header.request_api_version,
            req.header.client_id) == (5, 0, 12, "c")
    assert (req.header.api_key, req.header.api_version) == (0, 12)
    assert req.header.get_response_class() is response_type(12)
    req.API_VERSION = 9  # what kafka-python does to a request without a version
    assert req.header.request_api_version == 9
    assert req.header.get_response_class().API_VERSION == 9
    text = repr(req)
    assert "v9" in text and "partitions=3" in text and "record_bytes=3" in text
    with pytest.raises(ValueError):
        req.API_VERSION = 2
    with pytest.raises(ValueError):
        ProduceRequestData(version=14, transactional_id=None, acks=1, timeout_ms=1, topic_data=[])
    with pytest.raises(TypeError, match="uuid"):
        ProduceRequestData(version=13, transactional_id=None, acks=1, timeout_ms=1,
                           topic_data=[("name", [(0, b"")])]).encode()
    with pytest.raises(TypeError, match="name"):
        ProduceRequestData(version=12, transactional_id=None, acks=1, timeout_ms=1,
                           topic_data=[(uuid.uuid4(), [(0, b"")])]).encode()
    assert not ProduceRequestData(version=3, transactional_id=None, acks=0, timeout_ms=1,
                                  topic_data=[]).expect_response()


# -- responses --------------------------------------------------------------------------------------

_record_errors = st.lists(st.tuples(_INT32, _nullable_text), max_size=3)
_partition_responses = st.lists(
    st.fixed_dictionaries({
        "index": _INT32, "error_code": _INT16, "base_offset": _INT64, "log_append_time_ms": _INT64,
        "log_start_offset": _INT64, "record_errors": _record_errors, "error_message": _nullable_text,
        "current_leader": st.one_of(st.none(), st.tuples(_INT32, _INT32)),
    }), max_size=4)
_topic_responses = st.lists(st.tuples(_text, st.uuids(), _partition_responses), max_size=3)
_node_endpoints = st.one_of(st.none(), st.lists(
    st.tuples(_INT32, _text, _INT32, _nullable_text), min_size=1, max_size=3))




def _normalized_reference(decoded: Any, version: int) -> list[Any]:
    """kafka-python's decoded response as plain tuples in our shape."""
    out = []
    for t in decoded.responses:
        parts = []
        for p in t.partition_responses:
            errs = tuple((e.batch_index, e.batch_index_error_message) for e in (p.record_errors or []))
            leader = getattr(p, "current_leader", None) if version >= 10 else None
            parts.append((p.index, p.error_code, p.base_offset, p.log_append_time_ms,
                          p.log_start_offset if version >= 5 else -1, errs,
                          p.error_message if version >= 8 else None,
                          _leader(None if leader is None else (leader.leader_id, leader.leader_epoch))))
        out.append((t.name if version < 13 else None, t.topic_id if version >= 13 else None, parts))
    endpoints = getattr(decoded, "node_endpoints", None) if version >= 10 else None
    return [out, decoded.throttle_time_ms,
            tuple((n.node_id, n.host, n.port, n.rack) for n in endpoints or ())]






def _has_tags(version: int, topics: Any, node_endpoints: Any) -> bool:
    return version >= 10 and (node_endpoints is not None or any(
        p["current_leader"] is not None for _, _, parts in topics for p in parts))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=60)
@given(topics=_topic_responses, throttle_time_ms=_INT32, node_endpoints=_node_endpoints,
       correlation_id=st.integers(0, 2**31 - 1))
def test_response_decodes_like_kafka_python(version: int, topics: Any, throttle_time_ms: int,
                                            node_endpoints: Any, correlation_id: int) -> None:
    ref = _reference_response(version, topics, throttle_time_ms, node_endpoints)
    body = bytes(ref.encode())
    expected = _normalized_reference(ProduceResponse.decode(body, version=version), version)
    ours = decode_produce_response(body, version)
    assert ours.API_KEY == 0
    assert version == ours.API_VERSION
    assert _normalized_ours(ours) == expected

    # the parser's path: header then body, read in place from a KafkaBytes frame
    ref.with_header(correlation_id=correlation_id)
    frame = bytes(ref.encode(header=True, framed=False))
    buf = KafkaBytes(len(frame))
    buf.write(frame)
    buf.seek(0)
    rtype = response_type(version)
    assert rtype.parse_header(buf).correlation_id == correlation_id
    assert _normalized_ours(rtype.decode(buf)) == expected
    assert buf.tell() == len(frame)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 10])
def test_tagged_fields_are_skipped(version: int) -> None:
    """current_leader (partition tag 0) and node_endpoints (top-level tag 0) on the wire."""
    topics = [("t", uuid.UUID(int=7), [{
        "index": 3, "error_code": 6, "base_offset": -1, "log_append_time_ms": -1, "log_start_offset": 12,
        "record_errors": [(1, "bad"), (2, None)], "error_message": "not leader",
        "current_leader": (4, 9)}])]
    endpoints = [(4, "broker-" + "x" * 200, 9092, "rack-a"), (5, "h", 1, None)]
    ref = _reference_response(version, topics, 250, endpoints)
    body = bytes(ref.encode())
    plain = bytes(_reference_response(version, [(n, i, [{**p[0], "current_leader": None}])
                                                for n, i, p in topics], 250, None).encode())
    assert len(body) > len(plain) + 200  # the tags really are on the wire
    ours = decode_produce_response(body, version)
    assert ours.throttle_time_ms == 250
    part = ours.responses[0].partition_responses[0]
    assert (part.index, part.error_code, part.log_start_offset) == (3, 6, 12)
    assert part.error_message == "not leader"
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
        (1, "bad"), (2, None)]
    if version >= 13:
        assert ours.responses[0].topic_id == uuid.UUID(int=7) and ours.responses[0].name is None
    else:
        assert ours.responses[0].name == "t" and ours.responses[0].topic_id is None
    # an unknown tag with a multi-byte size, and a multi-byte tag number, are skipped by length
    tagged = plain[:-1] + b"\x02" + b"\x05\x81\x01" + bytes(129) + b"\xc8\x01\x00"
    assert decode_produce_response(tagged, version).throttle_time_ms == 250


def test_old_versions_default_the_fields_they_lack() -> None:
    topics = [("t", uuid.UUID(int=1), [{
        "index": 0, "error_code": 0, "base_offset": 10, "log_append_time_ms": 99, "log_start_offset": 5,
        "record_errors": [(1, "x")], "error_message": "m", "current_leader": None}])]
    v3 = decode_produce_response(bytes(_reference_response(3, topics, 1, None).encode()), 3)
    p3 = v3.responses[0].partition_responses[0]
    assert (p3.base_offset, p3.log_append_time_ms, p3.log_start_offset, p3.record_errors,
            p3.error_message) == (10, 99, -1, (), None)
    v7 = decode_produce_response(bytes(_reference_response(7, topics, 1, None).encode()), 7)
    p7 = v7.responses[0].partition_responses[0]
    assert (p7.log_start_offset, p7.record_errors, p7.error_message) == (5, (), None)
    assert "PartitionResponse(index=0" in repr(p7) and "errors=0" in repr(v7)


@pytest.mark.parametrize("version", [3, 5, 8, 9, 10, 12, 13])
def test_null_arrays_read_as_empty(version: int) -> None:
    """kafka-python encodes a None array as null; Kafka never sends one, we read it as empty."""
    ref = ProduceResponse(version=version, responses=[_RT(
        name="t", topic_id=uuid.UUID(int=1),
        partition_responses=[_RP(index=0, error_code=0, base_offset=1, record_errors=None)])])
    ours = decode_produce_response(bytes(ref.encode()), version)
    assert ours.responses[0].partition_responses[0].record_errors == ()
    empty = decode_produce_response(bytes(ProduceResponse(version=version, responses=None).encode()), version)
    assert empty.responses == []


def _sample_body(version: int) -> bytes:
    topics = [("topic-é", uuid.UUID(int=3), [
        {"index": i, "error_code": i % 2, "base_offset": 100 * i, "log_append_time_ms": -1,
         "log_start_offset": 0, "record_errors": [(i, "why" if i else None)],
         "error_message": "oops" if i else None, "current_leader": (1, 2) if i else None}
        for i in range(3)])]
    return bytes(_reference_response(version, topics, 17, [(1, "h", 2, None)]).encode())


@pytest.mark.parametrize("version", VERSIONS)
def test_truncated_or_padded_response_raises(version: int) -> None:
    body = _sample_body(version)
    decode_produce_response(body, version)
    for cut in range(len(body)):
        with pytest.raises((ValueError, struct.error)):
            decode_produce_response(body[:cut], version)
        with pytest.raises((ValueError, struct.error)):
            decode_produce_response(bytearray(body[:cut]), version)
    with pytest.raises(ValueError, match="trailing"):
        decode_produce_response(body + b"\x00", version)
    rtype = response_type(version)
    for cut in range(4 + (version >= 9)):
        with pytest.raises((ValueError, struct.error)):
            rtype.parse_header(KafkaBytes(cut))


@pytest.mark.parametrize("version", VERSIONS)
def test_corrupted_response_raises_or_decodes(version: int) -> None:
    """Random byte flips never hang and only ever raise ValueError or struct.error."""
    body = _sample_body(version)
    rng = random.Random(version)
    for _ in range(500):
        data = bytearray(body)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            decoded = decode_produce_response(data, version)
        except (ValueError, struct.error):
            continue
        assert isinstance(decoded, ProduceResponseData)


def test_malformed_responses_raise() -> None:
    # compact array count of 2**32 - 1 (a varint longer than 5 bytes is refused too)
    with pytest.raises(ValueError):
        decode_produce_response(b"\xff\xff\xff\xff\x0f", 9)
    with pytest.raises(ValueError, match="varint"):
        decode_produce_response(b"\xff\xff\xff\xff\xff\x01", 9)
    # int32 array count larger than the data could hold
    with pytest.raises(ValueError, match="array length"):
        decode_produce_response(struct.pack(">i", 1000) + bytes(50), 3)
    with pytest.raises(ValueError, match="array length"):
        decode_produce_response(struct.pack(">i", -5) + bytes(50), 3)
    # a topic name that is not UTF-8
    with pytest.raises(ValueError):
        decode_produce_response(struct.pack(">ih", 1, 2) + b"\xff\xfe" + struct.pack(">ii", 0, 0), 3)
    # a null topic name (flexible)
    with pytest.raises(ValueError, match="null topic name"):
        decode_produce_response(b"\x02\x00\x01\x00" + bytes(4) + b"\x00", 9)
    with pytest.raises(struct.error):
        decode_produce_response(b"", 3)
    with pytest.raises(ValueError):
        response_type(2)
    with pytest.raises(ValueError):
        decode_produce_response(b"", 14)


# -- through kafka-python's parser ------------------------------------------------------------------


def _framed_response(version: int, correlation_id: int, topics: Any, throttle_time_ms: int = 0) -> bytes:
    ref = _reference_response(version, topics, throttle_time_ms, [(1, "h", 2, None)])
    ref.with_header(correlation_id=correlation_id)
    return bytes(ref.encode(header=True, framed=True))


@pytest.mark.parametrize("version", VERSIONS)
def test_kafka_protocol_round_trip(version: int) -> None:
    """send_request / send_bytes / receive_bytes of kafka-python's KafkaProtocol with our objects."""
    proto = KafkaProtocol(client_id="txnproducer-test")
    ref_proto = KafkaProtocol(client_id="txnproducer-test")
    tid = uuid.UUID(int=42)
    topic: str | uuid.UUID = tid if version >= 13 else "orders"
    batch = bytearray(random.Random(1).randbytes(16_384))
    ours = ProduceRequestData(version=version, transactional_id="txn", acks=-1, timeout_ms=30_000,
                              topic_data=[(topic, [(0, batch), (1, memoryview(batch)[:100])])])
    ref = ProduceRequest(version=version, transactional_id="txn", acks=-1, timeout_ms=30_000, topic_data=[
        _T(partition_data=[_P(index=0, records=bytes(batch)), _P(index=1, records=bytes(batch[:100]))],
           **({"topic_id": tid} if version >= 13 else {"name": "orders"}))])
    correlation_id = proto.send_request(ours)
    assert ref_proto.send_request(ref) == correlation_id
    assert bytes(proto.send_bytes()) == bytes(ref_proto.send_bytes())
    assert len(proto.in_flight_requests) == 1
    assert proto.in_flight_requests[0] is ours.header

    parts = [{"index": 0, "error_code": 0, "base_offset": 500, "log_append_time_ms": -1,
              "log_start_offset": 3, "record_errors": [], "error_message": None, "current_leader": None},
             {"index": 1, "error_code": 6, "base_offset": -1, "log_append_time_ms": -1,
              "log_start_offset": -1, "record_errors": [(0, "r")], "error_message": "not leader",
              "current_leader": (2, 5)}]
    frame = _framed_response(version, correlation_id, [("orders", tid, parts)], throttle_time_ms=30)
    responses: list[Any] = []
    for i in range(0, len(frame), 7):  # in pieces, as a socket delivers them
        responses.extend(proto.receive_bytes(frame[i:i + 7]))
    assert len(responses) == 1
    got_id, response = responses[0]
    assert got_id == correlation_id
    assert isinstance(response, ProduceResponseData)
    assert getattr(response, "throttle_time_ms", 0) == 30  # what connection._maybe_throttle reads
    (topic_response,) = response.responses
    if version >= 13:
        assert topic_response.topic_id == tid
    else:
        assert topic_response.name == "orders"
    p0, p1 = topic_response.partition_responses
    assert (p0.index, p0.error_code, p0.base_offset) == (0, 0, 500)
    assert (p1.index, p1.error_code) == (1, 6)
    if version >= 8:
        assert p1.error_message == "not leader"
        assert [(e.batch_index, e.batch_index_error_message) for e in p1.record_errors] == [(0, "r")]
    assert not proto.in_flight_requests


def test_kafka_protocol_errors() -> None:
    proto = KafkaProtocol(client_id="c")
    req = ProduceRequestData(version=9, transactional_id=None, acks=-1, timeout_ms=1,
                             topic_data=[("t", [(0, b"x")])])
    cid = proto.send_request(req)
    proto.send_bytes()
    # a body that does not decode: KafkaProtocolError (the parser catches ValueError/struct.error)
    bad = struct.pack(">i", cid) + b"\x00" + b"\x05\x01"
    with pytest.raises(kafka_errors.KafkaProtocolError):
        proto.receive_bytes(struct.pack(">i", len(bad)) + bad)
    # a correlation id that does not match
    proto = KafkaProtocol(client_id="c")
    cid = proto.send_request(req)
    with pytest.raises(kafka_errors.CorrelationIdError):
        proto.receive_bytes(_framed_response(9, cid + 1, []))
    # acks=0: nothing in flight
    proto = KafkaProtocol(client_id="c")
    proto.send_request(ProduceRequestData(version=9, transactional_id=None, acks=0, timeout_ms=1,
                                          topic_data=[]))
    assert not proto.in_flight_requests
    assert proto.send_bytes()


def test_response_type_reads_other_buffers() -> None:
    body = _sample_body(11)
    rtype = ProduceResponseType(11)
    assert repr(rtype) == "ProduceResponse[v11]"
    assert _normalized_ours(rtype.decode(body)) == _normalized_ours(rtype.decode(memoryview(body)))

    class Reader:
        def read(self) -> bytes:
            return body

    assert rtype.decode(Reader()).throttle_time_ms == 17

    # a seekable stream not at its start: header then body, each leaving it after what it read
    ref = ProduceResponse(version=11, responses=[], throttle_time_ms=9)
    ref.with_header(correlation_id=77)
    frame = bytes(ref.encode(header=True))
    stream = io.BytesIO(b"junk" + frame)
    stream.seek(4)
    assert rtype.parse_header(stream).correlation_id == 77
    assert stream.tell() == 4 + 5
    assert rtype.decode(stream).throttle_time_ms == 9
    assert stream.tell() == 4 + len(frame)


# -- the Sender's use of it -------------------------------------------------------------------------


class _FakeNet:
    """What ``Sender._send_produce`` needs from the NetworkClient: topic ids and ``send``."""

    def __init__(self, topic_ids: dict[str, uuid.UUID]) -> None:
        self.topic_ids = topic_ids
        self.sent: list[tuple[int, Any, Future]] = []

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.topic_ids.get(topic)

    def send(self, node: int, request: Any) -> Future:
        future = Future()
        self.sent.append((node, request, future))
        return future


def _sender(net: _FakeNet) -> tuple[Sender, list[tuple[str, Any]]]:
    config = SimpleNamespace(transactional_id="txn-é", retry_backoff_ms=100, request_timeout_ms=30_000,
                             linger_ms=5)
    sender = Sender(network=net, accumulator=None, transaction_manager=None,  # type: ignore[arg-type]
                    config=config)  # type: ignore[arg-type]
    outcomes: list[tuple[str, Any]] = []
    def complete_all(appended: list[tuple[Any, int, int | None]], before_futures: Any = None) -> None:
        outcomes.extend(("done", (batch.tp, base_offset, log_append_time))
                        for batch, base_offset, log_append_time in appended)

    def retry_or_fail(batch: Any, code: int, message: Any, record_errors: Any, log_start_offset: Any = None,
                      leader_moved: bool = False) -> None:
        outcomes.append(("error", (batch.tp, code, message, record_errors)))

    sender._outcomes.complete_all = complete_all  # type: ignore[method-assign]
    sender._outcomes.retry_or_fail = retry_or_fail  # type: ignore[method-assign]
    return sender, outcomes


def _batch(topic: str, partition: int, payload: bytes) -> Any:
    return SimpleNamespace(tp=TopicPartition(topic, partition), buffer=bytearray(payload), record_count=1,
                           size=len(payload), final_state=None)


@pytest.mark.parametrize(("version", "known_ids", "sent_version"), [
    (13, {"a", "b"}, 13),  # every topic id known: v13 by id
    (13, {"a"}, 12),       # one id unknown: the whole request falls back to v12 by name
    (13, set(), 12),
    (12, {"a", "b"}, 12),
    (11, {"a", "b"}, 11),  # TV1
])
def test_sender_builds_and_reads_produce(version: int, known_ids: set[str], sent_version: int) -> None:
    ids = {"a": uuid.UUID(int=0xA), "b": uuid.UUID(int=0xB)}
    net = _FakeNet({t: i for t, i in ids.items() if t in known_ids})
    sender, outcomes = _sender(net)
    batches = [_batch("a", 0, b"a0"), _batch("b", 2, b"b2"), _batch("a", 1, b"a1")]
    sender._send_produce(7, batches, version)
    ((node, request, future),) = net.sent
    assert node == 7 and isinstance(request, ProduceRequestData)
    assert sent_version == request.API_VERSION
    # what kafka-python's decoder reads from the bytes
    decoded = ProduceRequest.decode(request.encode(), version=sent_version)
    assert (decoded.transactional_id, decoded.acks, decoded.timeout_ms) == ("txn-é", -1, 30_000)
    key = "topic_id" if sent_version >= 13 else "name"
    sent = {getattr(t, key): [(p.index, bytes(p.records)) for p in t.partition_data]
            for t in decoded.topic_data}
    a, b = (ids["a"], ids["b"]) if sent_version >= 13 else ("a", "b")
    assert sent == {a: [(0, b"a0"), (1, b"a1")], b: [(2, b"b2")]}

    # the answer, as the broker would send it, through our decoder into the callback
    parts = {a: [{"index": 0, "error_code": 0, "base_offset": 40},
                 {"index": 1, "error_code": 0, "base_offset": 9}],
             b: [{"index": 2, "error_code": 6, "base_offset": -1}]}
    reference = ProduceResponse(version=sent_version, responses=[
        _RT(partition_responses=[
            _RP(record_errors=[], error_message="moved" if p["error_code"] else None, **p) for p in ps],
            **{key: k})
        for k, ps in parts.items()])
    future.success(decode_produce_response(bytes(reference.encode()), sent_version))
    assert sorted(outcomes, key=repr) == sorted([
        ("done", (TopicPartition("a", 0), 40, -1)),
        ("done", (TopicPartition("a", 1), 9, -1)),
        ("error", (TopicPartition("b", 2), 6, "moved", ())),
    ], key=repr)


def test_sender_missing_partition_is_retried() -> None:
    net = _FakeNet({})
    sender, outcomes = _sender(net)
    sender._send_produce(1, [_batch("a", 0, b"x")], 12)
    ((_, _, future),) = net.sent
    future.success(decode_produce_response(bytes(ProduceResponse(version=12, responses=[]).encode()), 12))
    assert outcomes == [("error", (TopicPartition("a", 0), 13, "partition missing from the Produce response",
                                   None))]
