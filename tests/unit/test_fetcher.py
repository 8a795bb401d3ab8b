"""The fetcher (``_internal/fetch/fetcher.py``) against a scripted network: which Fetch requests it sends,
what it does with each answer, and what it hands out - the rules a broker cannot be made to exercise on
demand (a top-level FETCH_SESSION_TOPIC_ID_ERROR), and the hand-out rules on their own (stale chunks,
deserialization). The MockCluster tiers (``tests/mock/test_consumer*.py``) cover the same paths end to
end.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.future import Future
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.structs import TopicPartition

from txnproducer import RecordDeserializationError
from txnproducer._internal.fetch.completed_fetch import Deserializers
from txnproducer._internal.fetch.fetcher import Fetcher
from txnproducer._internal.fetch.positions import Assignment
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.fetch_response import FetchedPartition, FetchedTopic, FetchResponseData
from txnproducer.consumer_config import ConsumerConfig

TOPIC = "t"
P0, P1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
NODE = 1


class ScriptedNet:
    """The parts of ``NetworkClient`` the fetcher uses; every request waits for the test to answer it."""

    def __init__(self, leaders: dict[TopicPartition, int]) -> None:
        self.leaders = leaders
        self.sent: list[tuple[int, Any, Future]] = []
        self.metadata_updates = 0

    @property
    def cluster(self) -> ScriptedNet:
        return self

    def leader_epoch_for_partition(self, tp: TopicPartition) -> int:
        return 0

    def leader_for(self, tp: TopicPartition) -> int | None:
        return self.leaders.get(tp)

    def request_metadata_update(self) -> None:
        self.metadata_updates += 1

    def max_version(self, node: int, api_key: int) -> int:
        return 12

    def is_ready(self, node: int) -> bool:
        return True

    def ensure_connecting(self, node: int) -> None:
        pass

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return None

    def send(self, node: int, request: Any) -> Future:
        future = Future()
        self.sent.append((node, request, future))
        return future

    def answer(self, response: FetchResponseData) -> None:
        """Answer the oldest unanswered request."""
        future = next(f for _, _, f in self.sent if not f.is_done)
        future.success(response)


def _batch(base_offset: int, values: list[bytes]) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 2**31 - 1)
    for i, value in enumerate(values):
        builder.append(i, 1_700_000_000_000, None, value, [])
    data = bytearray(builder.build())
    data[0:8] = base_offset.to_bytes(8, "big")
    return bytes(data)


def _answer(
    parts: dict[TopicPartition, bytes], error_code: int = ec.NONE, session_id: int = 7
) -> FetchResponseData:
    partitions = [
        FetchedPartition(tp.partition, ec.NONE, 100, 100, 0, [], -1, memoryview(data) if data else None)
        for tp, data in parts.items()
    ]
    topics = [FetchedTopic(TOPIC, None, partitions)] if parts else []
    return FetchResponseData(12, 0, error_code, session_id, topics)


def _fetcher(*partitions: TopicPartition) -> tuple[Fetcher, ScriptedNet, Assignment]:
    net = ScriptedNet({tp: NODE for tp in partitions})
    assignment = Assignment()
    assignment.assign(partitions)
    for tp in partitions:
        state = assignment.get(tp)
        assert state is not None
        state.seek(0)
    config = ConsumerConfig(bootstrap_servers=["127.0.0.1:9"])
    return Fetcher(config, net, assignment), net, assignment  # type: ignore[arg-type]


def test_a_part_handed_out_chunk_is_dropped_once_the_position_moved_elsewhere() -> None:
    """The Java FetchCollector's check on every collect: the chunk continues from where its last hand-out
    left the position; a position moved by anything else (here what offsets.py does on a truncation it
    found: ``state.seek``, which knows nothing of buffered records) makes the rest stale."""
    fetcher, net, assignment = _fetcher(P0)
    assert fetcher.send_fetches() == 1
    net.answer(_answer({P0: _batch(0, [b"a", b"b", b"c", b"d"])}))
    assert [r.value for r in fetcher.collect(2, columns=False)] == [b"a", b"b"]
    state = assignment.get(P0)
    assert state is not None and state.position == 2
    state.seek(1, 0)  # a truncation below the position, found by validation
    assert fetcher.collect(10, columns=False) == [], "c and d belong to the log before the truncation"
    assert state.position == 1
    assert not fetcher.has_buffered()


def test_deserializers_stop_at_the_record_they_cannot_read_and_try_it_again() -> None:
    """The hand-out side of RecordDeserializationError (the Java CompletedFetch.fetchRecords): the records
    before the bad one are handed out, the position stays before it, and every later collect tries it
    again - raising while it fails, handing it out once it no longer does."""
    fetcher, net, assignment = _fetcher(P0)
    fetcher.send_fetches()
    net.answer(_answer({P0: _batch(0, [b"1", b"2", b"x", b"4"])}))
    recovered = False

    def as_int(value: bytes) -> int:
        if value == b"x" and not recovered:
            raise ValueError("not a number")
        return 3 if value == b"x" else int(value)

    deserializers = Deserializers(None, as_int)
    assert [r.value for r in fetcher.collect(10, columns=False, deserializers=deserializers)] == [1, 2]
    state = assignment.get(P0)
    assert state is not None and state.position == 2
    for _ in range(2):
        with pytest.raises(RecordDeserializationError) as caught:
            fetcher.collect(10, columns=False, deserializers=deserializers)
        error = caught.value
        assert (error.topic, error.partition, error.offset, error.origin) == (TOPIC, 0, 2, "value")
        assert isinstance(error.__cause__, ValueError) and "t-0" in str(error)
        assert state.position == 2, "nothing skipped"
    recovered = True
    assert [r.value for r in fetcher.collect(10, columns=False, deserializers=deserializers)] == [3, 4]
    assert state.position == 4


def test_a_key_deserializer_failure_names_the_key() -> None:
    fetcher, net, _ = _fetcher(P0)
    fetcher.send_fetches()
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 2**31 - 1)
    builder.append(0, 1_700_000_000_000, b"k", b"v", [])
    net.answer(_answer({P0: bytes(builder.build())}))

    def refuse(_: bytes) -> Any:
        raise KeyError("unknown schema")

    with pytest.raises(RecordDeserializationError) as caught:
        fetcher.collect(10, columns=False, deserializers=Deserializers(refuse, None))
    assert caught.value.origin == "key" and caught.value.offset == 0


def test_a_fetch_session_topic_id_error_refreshes_metadata() -> None:
    """FETCH_SESSION_TOPIC_ID_ERROR (106): the session named a topic by an id the broker no longer
    knows; the Java client asks for new metadata (it may hold a new id) besides starting a new session."""
    fetcher, net, _ = _fetcher(P0)
    fetcher.send_fetches()
    before = net.metadata_updates
    net.answer(_answer({}, error_code=ec.FETCH_SESSION_TOPIC_ID_ERROR, session_id=0))
    assert net.metadata_updates == before + 1
    assert fetcher.in_flight() == 0


def test_a_broker_with_buffered_partitions_is_not_fetched_from() -> None:
    """KAFKA-17182: while a broker's partition has records buffered, a fetch for its other partitions
    would forget the buffered one from the session (and add it back a round later)."""
    fetcher, net, _ = _fetcher(P0, P1)
    fetcher.send_fetches()
    net.answer(_answer({P0: _batch(0, [b"a", b"b"]), P1: b""}))
    assert [r.value for r in fetcher.collect(1, columns=False)] == [b"a"]
    assert len(net.sent) == 1, "P1 is fetchable, but its broker still has P0's records buffered"
    assert [r.value for r in fetcher.collect(1, columns=False)] == [b"b"]
    assert len(net.sent) == 2, "P0 emptied: the next fetch goes out before the records are returned"
    forgotten = net.sent[1][1].forgotten
    assert forgotten == [], "both partitions stay in the session"
