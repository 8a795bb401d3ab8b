"""Our EndTxn codec writes the bytes kafka-python writes and reads what it reads, every version.

kafka-python's ``EndTxnRequest`` / ``EndTxnResponse`` are the reference: a byte off and the
coordinator misreads the end of every transaction (or, for the answer, the producer would adopt a
wrong epoch under TV2).
"""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.frame import KafkaBytes
from kafka.protocol.producer.transaction import EndTxnRequest, EndTxnResponse

from txnproducer._internal.protocol.end_txn import EndTxnRequestData, EndTxnResponseData
from txnproducer._internal.protocol.framing import RequestFramer, read_response_header

VERSIONS = range(EndTxnRequest.min_version, EndTxnRequest.max_version + 1)
IDS = ["txn-a", "ünïcode-tx", "x" * 300]


def test_the_codec_covers_kafka_pythons_versions() -> None:
    assert (EndTxnRequestData.min_version, EndTxnRequestData.max_version) == (0, 5)
    assert (EndTxnRequest.min_version, EndTxnRequest.max_version) == (0, 5)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("transactional_id", IDS)
@pytest.mark.parametrize("committed", [True, False])
def test_request_frames_are_byte_identical_to_kafka_pythons(version: int, transactional_id: str,
                                                            committed: bool) -> None:
    fields = {"transactional_id": transactional_id, "producer_id": 2**40 + 7, "producer_epoch": 32766,
              "committed": committed}
    ours = EndTxnRequestData(version=version, **fields)
    framer = RequestFramer("txnproducer-client-1")
    data, response_type, flexible = framer.frame(ours, 0x7FFFFFFF)
    theirs = EndTxnRequest(version=version, **fields)
    theirs.with_header(correlation_id=0x7FFFFFFF, client_id="txnproducer-client-1")
    assert bytes(data) == bytes(theirs.encode(framed=True, header=True))
    assert ours.to_dict() == theirs.to_dict()
    assert flexible is (version >= 3)
    assert version == response_type.API_VERSION


def _answer_frame(version: int, fields: dict[str, int], correlation_id: int) -> KafkaBytes:
    response = EndTxnResponse(version=version, **fields)
    response.with_header(correlation_id=correlation_id)
    body = bytes(response.encode(framed=True, header=True))[4:]
    frame = KafkaBytes(len(body))
    frame[:] = body
    return frame


@pytest.mark.parametrize("version", VERSIONS)
def test_answers_decode_to_kafka_pythons_values(version: int) -> None:
    fields = {"throttle_time_ms": 12, "error_code": 47}
    if version >= 5:
        fields.update(producer_id=2**40 + 8, producer_epoch=0)
    frame = _answer_frame(version, fields, 41)
    request = EndTxnRequestData(version=version, transactional_id="t", producer_id=1, producer_epoch=2,
                                committed=True)
    _data, response_type, flexible = RequestFramer("c").frame(request, 41)
    assert flexible is not None
    assert read_response_header(frame, flexible) == 41
    answer = response_type.decode(frame)
    assert isinstance(answer, EndTxnResponseData)
    assert (answer.throttle_time_ms, answer.error_code) == (12, 47)
    # before v5 the answer has no producer: -1, as kafka-python's defaults
    expected = (2**40 + 8, 0) if version >= 5 else (-1, -1)
    assert (answer.producer_id, answer.producer_epoch) == expected
    assert frame.tell() == len(frame)  # the tagged-field section is consumed with the body


def test_a_truncated_answer_raises_before_anything_is_read() -> None:
    frame = _answer_frame(5, {"throttle_time_ms": 0, "error_code": 0, "producer_id": 9,
                              "producer_epoch": 1}, 3)
    short = KafkaBytes(len(frame) - 4)
    short[:] = bytes(frame)[:-4]
    read_response_header(short, True)
    with pytest.raises(struct.error):
        EndTxnRequestData(version=5, transactional_id="t", producer_id=1, producer_epoch=1,
                          committed=True).response_type.decode(short)


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="EndTxn v6"):
        EndTxnRequestData(version=6, transactional_id="t", producer_id=1, producer_epoch=1, committed=True)


def test_a_transactional_id_too_long_for_an_old_version_is_refused_before_sending() -> None:
    request = EndTxnRequestData(version=2, transactional_id="x" * 40_000, producer_id=1, producer_epoch=1,
                                committed=True)
    with pytest.raises(ValueError, match="longer than an int16 string"):
        RequestFramer("c").frame(request, 1)
