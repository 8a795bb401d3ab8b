"""The Sender connection's own request headers and response-header reads match kafka-python's.

kafka-python's ``encode(framed=True, header=True)`` and its parser's ``parse_header`` + ``decode``
are the reference: a byte off in a header and the broker rejects or misreads every request, so
every version of every request the Sender sends is compared, flexible and not.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.frame import KafkaBytes

from txnproducer._internal.protocol.framing import RequestFramer, read_response_header
from txnproducer.testing import api_messages as _proto

# api key -> field values (left-out fields take their defaults; fields a version lacks are dropped)
_REQUESTS: dict[int, dict[str, Any]] = {
    3: {"topics": [{"name": "orders", "topic_id": None}], "allow_auto_topic_creation": False},
    10: {"key": "txn-a", "key_type": 1, "coordinator_keys": ["txn-a"]},
    18: {"client_software_name": "txnproducer", "client_software_version": "1.0"},
    22: {"transactional_id": "txn-a", "transaction_timeout_ms": 60_000, "producer_id": -1,
         "producer_epoch": -1},
    24: {"v3_and_below_transactional_id": "txn-a", "v3_and_below_producer_id": 7,
         "v3_and_below_producer_epoch": 3,
         "v3_and_below_topics": [{"name": "orders", "partitions": [0, 2]}]},
    25: {"transactional_id": "txn-a", "producer_id": 7, "producer_epoch": 3, "group_id": "g"},
    26: {"transactional_id": "txn-a", "producer_id": 7, "producer_epoch": 3, "committed": True},
    28: {"transactional_id": "txn-a", "group_id": "g", "producer_id": 7, "producer_epoch": 3,
         "generation_id": 4, "member_id": "m-1", "group_instance_id": None,
         "topics": [{"name": "orders", "partitions": [
             {"partition_index": 1, "committed_offset": 42, "committed_metadata": ""}]}]},
}

_RESPONSES: dict[int, dict[str, Any]] = {
    3: {"throttle_time_ms": 5, "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}],
        "cluster_id": "c", "controller_id": 1, "topics": []},
    10: {"throttle_time_ms": 0, "error_code": 0, "node_id": 2, "host": "h", "port": 9093,
         "coordinators": [{"key": "txn-a", "node_id": 2, "host": "h", "port": 9093, "error_code": 0}]},
    18: {"error_code": 0, "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 13}],
         "throttle_time_ms": 0},
    22: {"throttle_time_ms": 0, "error_code": 0, "producer_id": 7, "producer_epoch": 4},
    24: {"throttle_time_ms": 0, "error_code": 0},
    25: {"throttle_time_ms": 0, "error_code": 0},
    26: {"throttle_time_ms": 3, "error_code": 0, "producer_id": 7, "producer_epoch": 4},
    28: {"throttle_time_ms": 0, "topics": [{"name": "orders", "partitions": [
        {"partition_index": 1, "error_code": 0}]}]},
}

_CASES = [(key, version) for key in _REQUESTS for version in range(_proto.request_class(key).max_version + 1)]


@pytest.mark.parametrize(("api_key", "version"), _CASES)
def test_request_frames_are_byte_identical_to_kafka_pythons(api_key: int, version: int) -> None:
    cls = _proto.request_class(api_key)
    framer = RequestFramer("txnproducer-client-1")
    for correlation_id in (1, 0x7FFFFFFF):  # twice: the first call learns the class, the second uses it
        ours = _proto.build(cls, version, _REQUESTS[api_key])
        data, response_class, _flexible = framer.frame(ours, correlation_id)
        theirs = _proto.build(cls, version, _REQUESTS[api_key])
        theirs.with_header(correlation_id=correlation_id, client_id="txnproducer-client-1")
        assert bytes(data) == bytes(theirs.encode(framed=True, header=True))
        assert response_class is theirs.header.get_response_class()


@pytest.mark.parametrize(("api_key", "version"), _CASES)
def test_response_headers_are_read_as_kafka_python_reads_them(api_key: int, version: int) -> None:
    request = _proto.build(_proto.request_class(api_key), version, _REQUESTS[api_key])
    _data, response_class, flexible = RequestFramer("c").frame(request, 99)
    response = _proto.build(_proto.response_class(api_key), version, _RESPONSES[api_key])
    response.with_header(correlation_id=99)
    body = bytes(response.encode(framed=True, header=True))[4:]

    def frame() -> KafkaBytes:
        kb = KafkaBytes(len(body))
        kb[:] = body
        return kb

    ours = frame()
    if flexible is None:  # ApiVersions: its response class reads its own (always v0) header
        assert api_key == 18
        correlation_id = response_class.parse_header(ours).correlation_id
    else:
        correlation_id = read_response_header(ours, flexible)
    theirs = frame()
    assert correlation_id == response_class.parse_header(theirs).correlation_id == 99
    assert ours.tell() == theirs.tell()
    assert response_class.decode(ours) == response_class.decode(theirs)


def test_a_truncated_response_header_raises_value_error() -> None:
    kb = KafkaBytes(4)
    kb[:] = b"\x00\x00\x00\x07"  # correlation id, then the tagged-field count is missing
    with pytest.raises(ValueError, match="truncated"):
        read_response_header(kb, True)
