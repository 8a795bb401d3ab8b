"""Our Fetch codec against kafka-python's FetchRequest/FetchResponse, the reference, for v4-v18."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.frame import KafkaBytes

from txnproducer._internal.protocol.fetch_request import FetchPartitionData, FetchRequestData, ForgottenTopic
from txnproducer._internal.protocol.fetch_response import decode_fetch_response, fetch_response_type
from txnproducer.testing.api_messages import build

VERSIONS = range(4, 19)
TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def _topic(version: int) -> str | uuid.UUID:
    return TOPIC_ID if version >= 13 else "orders"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("session", [(0, -1), (0, 0), (77, 5)])
def test_request_bytes_are_kafka_pythons(version: int, session: tuple[int, int]) -> None:
    topic = _topic(version)
    parts = [
        FetchPartitionData(0, 10, 1 << 20, current_leader_epoch=3),
        FetchPartitionData(5, 2**40, 4096, current_leader_epoch=-1),
    ]
    ours = FetchRequestData(
        version=version,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=50 << 20,
        isolation_level=1,
        session_id=session[0],
        session_epoch=session[1],
        topics=[(topic, parts)],
        forgotten=[ForgottenTopic(topic, [7, 8])],
        rack_id="r1",
    )
    t = FetchRequest.FetchTopic
    theirs = FetchRequest[version](
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=50 << 20,
        isolation_level=1,
        session_id=session[0],
        session_epoch=session[1],
        topics=[
            t(
                topic=topic if version < 13 else None,
                topic_id=topic if version >= 13 else None,
                partitions=[
                    t.FetchPartition(
                        partition=p.partition,
                        current_leader_epoch=p.current_leader_epoch,
                        fetch_offset=p.fetch_offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=p.partition_max_bytes,
                    )
                    for p in parts
                ],
            )
        ],
        forgotten_topics_data=[
            FetchRequest.ForgottenTopic(
                topic=topic if version < 13 else None,
                topic_id=topic if version >= 13 else None,
                partitions=[7, 8],
            )
        ],
        rack_id="r1",
    )
    ours.with_header(correlation_id=9, client_id="c")
    theirs.with_header(correlation_id=9, client_id="c")
    assert ours.encode(framed=True, header=True) == bytes(theirs.encode(framed=True, header=True))


def _partition(
    version: int,
    index: int,
    records: bytes | None,
    aborted: list[tuple[int, int]] | None,
    leader: tuple[int, int] | None = None,
) -> dict[str, object]:
    p: dict[str, object] = {
        "partition_index": index,
        "error_code": 6 if leader else 0,
        "high_watermark": 100,
        "last_stable_offset": 90,
        "log_start_offset": 3,
        "aborted_transactions": None
        if aborted is None
        else [{"producer_id": pid, "first_offset": first} for pid, first in aborted],
        "preferred_read_replica": -1,
        "records": records,
    }
    if leader and version >= 12:
        p["current_leader"] = {"leader_id": leader[0], "leader_epoch": leader[1]}
    return p


@pytest.mark.parametrize("version", VERSIONS)
def test_response_decodes_as_kafka_pythons(version: int) -> None:
    topic = _topic(version)
    values: dict[str, object] = {
        "throttle_time_ms": 7,
        "error_code": 0,
        "session_id": 42,
        "responses": [
            {
                "topic": topic if version < 13 else None,
                "topic_id": topic if version >= 13 else None,
                "partitions": [
                    _partition(version, 0, b"\x01" * 70, [(5, 10), (6, 12)]),
                    _partition(version, 1, None, None, leader=(2, 9)),
                    _partition(version, 2, b"", []),
                ],
            }
        ],
    }
    if version >= 16:
        values["node_endpoints"] = [{"node_id": 2, "host": "h", "port": 9, "rack": None}]
    response = build(FetchResponse, version, values)
    body = bytes(response.encode())
    decoded = decode_fetch_response(body, version)
    assert decoded.throttle_time_ms == 7
    if version >= 7:
        assert decoded.session_id == 42
    [t] = decoded.responses
    assert (t.topic_id if version >= 13 else t.name) == topic
    p0, p1, p2 = t.partitions
    assert (p0.partition, p0.error_code, p0.high_watermark, p0.last_stable_offset) == (0, 0, 100, 90)
    assert p0.log_start_offset == (3 if version >= 5 else -1)
    assert p0.aborted == [(5, 10), (6, 12)]
    assert p0.records is not None and bytes(p0.records) == b"\x01" * 70
    assert p1.records is None and p1.aborted is None and p1.error_code == 6
    assert p1.current_leader == ((2, 9) if version >= 12 else None)
    assert p2.aborted == [] and p2.records is not None and p2.records.nbytes == 0
    if version >= 16:
        assert [(e.node_id, e.host, e.port) for e in decoded.node_endpoints] == [(2, "h", 9)]


@pytest.mark.parametrize("version", [11, 12, 18])
def test_response_type_reads_a_kafka_bytes_frame_in_place(version: int) -> None:
    response = build(
        FetchResponse,
        version,
        {
            "throttle_time_ms": 0,
            "error_code": 0,
            "session_id": 0,
            "responses": [
                {
                    "topic": "orders" if version < 13 else None,
                    "topic_id": TOPIC_ID if version >= 13 else None,
                    "partitions": [_partition(version, 0, b"abc", [])],
                }
            ],
        },
    )
    response.with_header(correlation_id=5)
    framed = bytes(response.encode(framed=True, header=True))
    frame = KafkaBytes(len(framed) - 4)
    frame[:] = framed[4:]
    rtype = fetch_response_type(version)
    assert rtype.parse_header(frame).correlation_id == 5
    decoded = rtype.decode(frame)
    assert bytes(decoded.responses[0].partitions[0].records or b"") == b"abc"


def test_truncated_response_is_a_value_error() -> None:
    body = bytes(
        build(
            FetchResponse,
            12,
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "session_id": 0,
                "responses": [{"topic": "orders", "partitions": [_partition(12, 0, b"abcdef", [])]}],
            },
        ).encode()
    )
    with pytest.raises(ValueError):
        decode_fetch_response(body[:-6], 12)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_partition_with_only_an_error_decodes(version: int) -> None:
    # the smallest partition entry there is (found by the consumer's out-of-range test: a minimum
    # entry size above it refused the answer as malformed)
    body = bytes(
        build(
            FetchResponse,
            version,
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "session_id": 0,
                "responses": [
                    {
                        "topic": _topic(version) if version < 13 else None,
                        "topic_id": _topic(version) if version >= 13 else None,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "error_code": 1,
                                "high_watermark": -1,
                                "last_stable_offset": -1,
                                "log_start_offset": -1,
                                "aborted_transactions": None,
                                "records": None,
                            }
                        ],
                    }
                ],
            },
        ).encode()
    )
    [part] = decode_fetch_response(body, version).responses[0].partitions
    assert (part.error_code, part.records, part.aborted) == (1, None, None)
