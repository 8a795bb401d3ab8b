"""The compiled Produce codec (``accel/_produce.c``) against the pure-Python one, its reference.

The pure-Python codec is itself checked against kafka-python's ProduceRequest/ProduceResponse for every
version (test_produce_codec.py). Here: every frame the compiled encoder builds is byte for byte the
reference's; every answer it decodes decodes to the reference's values; and everything it does not take
(older versions, answers with errors, messages or tags, malformed data) it hands back (None), so that the
reference decides - the same values, or the reference's error.
"""

from __future__ import annotations

import random
import struct
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.frame import KafkaBytes
from kafka.protocol.producer import ProduceRequest

from tests._support.produce_codec import as_records as _as
from tests._support.produce_codec import normalized as _normalized_ours
from tests._support.produce_codec import reference_response as _reference_response
from txnproducer._internal import accel
from txnproducer._internal.protocol import produce_request, produce_response
from txnproducer._internal.protocol.framing import RequestFramer
from txnproducer._internal.protocol.primitives import string16
from txnproducer._internal.protocol.produce_request import ProduceRequestData
from txnproducer._internal.protocol.produce_response import (
    PartitionResponse,
    ProduceResponseData,
    TopicResponse,
    decode_produce_response,
    response_type,
)

pytestmark = pytest.mark.skipif(accel.PRODUCE is None, reason="the compiled Produce codec is not built here")

FLEXIBLE = list(range(9, 14))
_INT16 = st.integers(-(2**15), 2**15 - 1)
_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.integers(-(2**63), 2**63 - 1)
_name = st.one_of(st.text(max_size=20), st.text(alphabet="é漢🙂x", min_size=60, max_size=200))
_payload = st.one_of(st.binary(max_size=300), st.integers(126, 130).map(bytes),
                     st.integers(16_000, 20_000).map(lambda n: random.Random(n).randbytes(n)))
_records = st.one_of(st.none(), st.tuples(_payload, st.sampled_from(
    ["bytes", "bytearray", "memoryview", "memoryview-slice"])))
_topics = st.lists(st.tuples(_name, st.uuids(), st.lists(st.tuples(_INT32, _records), max_size=5)),
                   max_size=4)


def _request(version: int, transactional_id: str | None, acks: int, timeout_ms: int, topics: Any,
             ) -> ProduceRequestData:
    data = [(topic_id if version >= 13 else name,
             [(index, None if r is None else _as(r[1], r[0])) for index, r in parts])
            for name, topic_id, parts in topics]
    return ProduceRequestData(version=version, transactional_id=transactional_id, acks=acks,
                              timeout_ms=timeout_ms, topic_data=data)


def _pure_frame(monkeypatch: pytest.MonkeyPatch, request: ProduceRequestData, correlation_id: int,
                tail: bytes) -> bytes:
    with monkeypatch.context() as m:
        m.setattr(produce_request, "_PRODUCE", None)
        return request.encode_frame(correlation_id, tail)


@pytest.mark.parametrize("version", FLEXIBLE)
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(transactional_id=st.one_of(st.none(), st.just(""), _name), acks=st.sampled_from([-1, 0, 1]),
       timeout_ms=_INT32, correlation_id=_INT32, client_id=_name, topics=_topics)
def test_compiled_request_frame_is_the_references(monkeypatch: pytest.MonkeyPatch, version: int,
                                                   transactional_id: str | None, acks: int, timeout_ms: int,
                                                   correlation_id: int, client_id: str, topics: Any) -> None:
    request = _request(version, transactional_id, acks, timeout_ms, topics)
    tail = string16(client_id, "client_id") + b"\x00"
    compiled = accel.PRODUCE.encode_frame(version, correlation_id, tail, transactional_id, acks, timeout_ms,
                                          request.topic_data)
    assert compiled is not None
    assert compiled == _pure_frame(monkeypatch, request, correlation_id, tail)
    # and both are what the framed encode (checked against kafka-python's) gives
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    assert compiled == request.encode(framed=True, header=True)
    assert request.encode_frame(correlation_id, tail) == compiled


def test_compiled_encoder_hands_back_what_it_does_not_take(monkeypatch: pytest.MonkeyPatch) -> None:
    tail = string16("c", "client_id")
    for version in range(3, 9):  # the classic versions are the reference's alone
        request = _request(version, "t", -1, 1000, [("topic", uuid.UUID(int=1), [(0, (b"x", "bytes"))])])
        assert accel.PRODUCE.encode_frame(version, 7, tail, "t", -1, 1000, request.topic_data) is None
        assert request.encode_frame(7, tail) == _pure_frame(monkeypatch, request, 7, tail)
    odd = [
        [(uuid.UUID(int=1), [(0, b"x")])],  # v12 names topics by name
        [("topic", [(2**31, b"x")])],  # a partition index past int32
        [("topic", [(2**63, b"x")])],  # ... and past a C long
        [("topic", [(-(2**64), b"x")])],
        [("topic", [(0, "not bytes")])],  # records that are not a buffer
        [("topic", [(0, b"x", b"y")])],  # not a pair
    ]
    for topic_data in odd:
        assert accel.PRODUCE.encode_frame(12, 7, tail + b"\x00", None, -1, 1000, topic_data) is None
    assert accel.PRODUCE.encode_frame(13, 7, tail + b"\x00", None, -1, 1000, [("topic", [(0, b"x")])]) is None
    assert accel.PRODUCE.encode_frame(12, 7, tail + b"\x00", None, 40_000, 1000, []) is None  # acks > int16
    # handed back, the reference raises what it raises
    request = ProduceRequestData(version=12, transactional_id=None, acks=-1, timeout_ms=1,
                                 topic_data=[(uuid.UUID(int=1), [(0, b"x")])])
    with pytest.raises(TypeError, match="by name"):
        request.encode_frame(7, tail + b"\x00")
    request = ProduceRequestData(version=13, transactional_id=None, acks=-1, timeout_ms=1,
                                 topic_data=[("topic", [(0, b"x")])])
    with pytest.raises(TypeError, match="uuid"):
        request.encode_frame(7, tail + b"\x00")


# -- answers ------------------------------------------------------------------------------------------

_common_partitions = st.lists(st.fixed_dictionaries({
    "index": _INT32, "error_code": _INT16, "base_offset": _INT64, "log_append_time_ms": _INT64,
    "log_start_offset": _INT64, "record_errors": st.just([]), "error_message": st.none(),
    "current_leader": st.none()}), max_size=5)
_common_topics = st.lists(st.tuples(_name, st.uuids(), _common_partitions), max_size=4)


def _frame_of(body: bytes) -> KafkaBytes:
    """A received frame positioned at the body, as the connection hands it to the decoder."""
    frame = KafkaBytes(len(body) + 3)
    frame[:] = b"\x00\x00\x00" + body
    frame.seek(3)
    return frame


def _pure(monkeypatch: pytest.MonkeyPatch, body: bytes, version: int) -> ProduceResponseData:
    with monkeypatch.context() as m:
        m.setattr(produce_response, "_PRODUCE", None)
        return response_type(version).decode(_frame_of(body))


@pytest.mark.parametrize("version", FLEXIBLE)
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topics=_common_topics, throttle_time_ms=_INT32)
def test_compiled_decoder_reads_the_common_answer_as_the_reference(
        monkeypatch: pytest.MonkeyPatch, version: int, topics: Any, throttle_time_ms: int) -> None:
    body = bytes(_reference_response(version, topics, throttle_time_ms, None).encode())
    compiled = accel.PRODUCE.decode_response(_frame_of(body), 3, version)
    assert compiled is not None
    assert type(compiled) is ProduceResponseData and version == compiled.API_VERSION
    assert all(type(t) is TopicResponse and all(type(p) is PartitionResponse for p in t.partition_responses)
               for t in compiled.responses)
    assert _normalized_ours(compiled) == _normalized_ours(_pure(monkeypatch, body, version))
    assert repr(compiled) == repr(decode_produce_response(body, version))
    frame = _frame_of(body)
    assert _normalized_ours(response_type(version).decode(frame)) == _normalized_ours(compiled)
    assert frame.tell() == len(frame)  # positioned after the answer, as the reference leaves it


def _uncommon(version: int) -> list[tuple[str, bytes]]:
    base = {"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": -1, "log_start_offset": 0,
            "record_errors": [], "error_message": None, "current_leader": None}
    cases = [
        ("record errors", [dict(base, error_code=87, record_errors=[(0, "bad")])], None),
        ("an error message", [dict(base, error_code=6, error_message="not the leader")], None),
        ("an empty error message", [dict(base, error_message="")], None),
    ]
    if version >= 10:
        cases += [("a leader hint", [dict(base, error_code=6, current_leader=(2, 9))], None),
                  ("node endpoints", [base], [(2, "host", 9092, None)])]
    return [(what, bytes(_reference_response(version, [("topic", uuid.UUID(int=5), parts)], 0, endpoints)
                         .encode())) for what, parts, endpoints in cases]


@pytest.mark.parametrize("version", FLEXIBLE)
def test_compiled_decoder_hands_back_the_uncommon_answers(monkeypatch: pytest.MonkeyPatch,
                                                           version: int) -> None:
    for what, body in _uncommon(version):
        assert accel.PRODUCE.decode_response(_frame_of(body), 3, version) is None, what
        decoded = response_type(version).decode(_frame_of(body))
        assert _normalized_ours(decoded) == _normalized_ours(_pure(monkeypatch, body, version)), what
    assert accel.PRODUCE.decode_response(b"\x01" + bytes(4) + b"\x00", 0, 8) is None  # a classic version


@pytest.mark.parametrize("version", FLEXIBLE)
def test_compiled_decoder_never_answers_otherwise_than_the_reference(
        monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """Cut, padded and corrupted answers: the compiled decoder gives the reference's values or hands
    the answer back (and then the reference raises its error); it never decodes what the reference refuses."""
    topics = [(f"topic-{t}", uuid.UUID(int=t + 1), [
        {"index": i, "error_code": 0, "base_offset": 1000 * i + t, "log_append_time_ms": -1,
         "log_start_offset": i, "record_errors": [], "error_message": None, "current_leader": None}
        for i in range(3)]) for t in range(2)]
    body = bytes(_reference_response(version, topics, 3, None).encode())
    rng = random.Random(version)
    variants = [body[:cut] for cut in range(len(body))] + [body + b"\x00", body + b"\x01\x02"]
    for _ in range(400):
        data = bytearray(body)
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        variants.append(bytes(data))
    for data in variants:
        compiled = accel.PRODUCE.decode_response(_frame_of(data), 3, version)
        try:
            reference: Any = _normalized_ours(decode_produce_response(data, version))
        except (ValueError, struct.error):
            reference = None
            assert compiled is None, data
        if compiled is not None:
            assert _normalized_ours(compiled) == reference


def test_compiled_decoder_reads_from_any_position_of_any_buffer() -> None:
    part = {"index": 4, "error_code": 0, "base_offset": 77, "log_append_time_ms": 123, "log_start_offset": 1,
            "record_errors": [], "error_message": None, "current_leader": None}
    body = bytes(_reference_response(12, [("orders", uuid.UUID(int=1), [part])], 0, None).encode())
    for data in (b"junk" + body, bytearray(b"junk" + body), memoryview(b"junk" + body)):
        decoded = accel.PRODUCE.decode_response(data, 4, 12)
        assert decoded is not None
        (topic,) = decoded.responses
        (answer,) = topic.partition_responses
        assert (topic.name, answer.index, answer.base_offset, answer.log_append_time_ms) \
            == ("orders", 4, 77, 123)
    # a position past the end: handed back, the reference decides
    assert accel.PRODUCE.decode_response(body, len(body) + 1, 12) is None


def test_compiled_encoder_reads_its_input_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python code that runs while the encoder reads its input (here a topic id's ``int`` read through a
    property that clears the earlier topic's partitions) cannot change what it writes: it writes the
    input as it read it, as the reference does for the same data, and never reads freed memory."""
    first_parts: list[tuple[int, bytes | None]] = [(0, b"a" * 300), (1, None), (2, b"c")]

    class MeddlingId(uuid.UUID):
        __slots__ = ()

        @property  # type: ignore[override]
        def int(self) -> int:
            first_parts.clear()
            return 7

    meddling = uuid.UUID(int=7)
    object.__setattr__(meddling, "__class__", MeddlingId)  # UUID's __init__ would set its int
    topic_data = [(uuid.UUID(int=1), first_parts), (meddling, [(5, b"e")])]
    expected = ProduceRequestData(version=13, transactional_id="t", acks=-1, timeout_ms=9, topic_data=[
        (uuid.UUID(int=1), [(0, b"a" * 300), (1, None), (2, b"c")]), (uuid.UUID(int=7), [(5, b"e")])])
    compiled = accel.PRODUCE.encode_frame(13, 3, b"\x00\x01c\x00", "t", -1, 9, topic_data)
    assert compiled == _pure_frame(monkeypatch, expected, 3, b"\x00\x01c\x00")
    assert first_parts == []


@pytest.mark.parametrize("version", FLEXIBLE)
def test_many_topics_and_partitions_take_multi_byte_counts(monkeypatch: pytest.MonkeyPatch,
                                                           version: int) -> None:
    topics = [(f"t{t}", uuid.UUID(int=t + 1), [(p, None if p % 7 == 0 else (b"r%d" % p, "bytes"))
                                                for p in range(130 if t == 0 else 1)]) for t in range(130)]
    request = _request(version, "t", -1, 1000, topics)
    frame = accel.PRODUCE.encode_frame(version, 1, b"\x00\x01c\x00", "t", -1, 1000, request.topic_data)
    assert frame is not None and frame == _pure_frame(monkeypatch, request, 1, b"\x00\x01c\x00")
    answers = [(name, tid, [{"index": p, "error_code": 0, "base_offset": p, "log_append_time_ms": -1,
                             "log_start_offset": 0, "record_errors": [], "error_message": None,
                             "current_leader": None} for p, _ in parts]) for name, tid, parts in topics]
    body = bytes(_reference_response(version, answers, 0, None).encode())
    compiled = accel.PRODUCE.decode_response(body, 0, version)
    assert compiled is not None
    assert _normalized_ours(compiled) == _normalized_ours(_pure(monkeypatch, body, version))


@pytest.mark.parametrize("version", range(3, 14))
@pytest.mark.parametrize("compiled", [True, False])
def test_the_framer_frames_produce_as_kafka_python(monkeypatch: pytest.MonkeyPatch, version: int,
                                                   compiled: bool) -> None:
    if not compiled:
        monkeypatch.setattr(produce_request, "_PRODUCE", None)
    topic: str | uuid.UUID = uuid.UUID(int=9) if version >= 13 else "orders"
    ours = ProduceRequestData(version=version, transactional_id="txn", acks=-1, timeout_ms=30_000,
                              topic_data=[(topic, [(0, b"records"), (3, None)])])
    data, response_class, flexible = RequestFramer("client-é").frame(ours, 77)
    partitions = [ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=b"records"),
                  ProduceRequest.TopicProduceData.PartitionProduceData(index=3, records=None)]
    key = {"topic_id": topic} if version >= 13 else {"name": topic}
    reference = ProduceRequest(version=version, transactional_id="txn", acks=-1, timeout_ms=30_000,
                               topic_data=[ProduceRequest.TopicProduceData(partition_data=partitions, **key)])
    reference.with_header(correlation_id=77, client_id="client-é")
    assert data == bytes(reference.encode(framed=True, header=True))
    assert flexible is (version >= 9) and response_class is response_type(version)
