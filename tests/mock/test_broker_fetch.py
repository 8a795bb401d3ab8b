"""MockCluster Fetch and ListOffsets: isolation levels, LSO, aborted transactions, limits, long polls."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest

from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster
from txnproducer.testing.partition_log import PartitionLog, parse_batches
from txnproducer.testing.wire_client import WireClient, build_batch, decode_batches, record_values

Wire = Callable[[int], WireClient]
TOPIC = "fetch-topic"


def fetch_req(
    version: int,
    offset: int = 0,
    isolation: int = 0,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    topic: str = TOPIC,
    topic_id: Any = None,
    partitions: tuple[int, ...] = (0,),
) -> Any:
    t = FetchRequest.FetchTopic
    parts = [
        t.FetchPartition(
            partition=p,
            current_leader_epoch=-1,
            fetch_offset=offset,
            last_fetched_epoch=-1,
            log_start_offset=-1,
            partition_max_bytes=partition_max_bytes,
        )
        for p in partitions
    ]
    topics = [t(topic=topic, topic_id=topic_id, partitions=parts)]
    return FetchRequest[version](
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=topics,
        forgotten_topics_data=[],
        rack_id="",
    )


def append(log: PartitionLog, cluster: MockCluster, batch: bytes) -> int:
    with cluster.state.lock:
        result = log.append(parse_batches(batch), strict_first_sequence=False)
        cluster.state.notify_all()
    assert result.error_code == 0
    return result.base_offset


def txn_batch(pid: int, seq: int, value: bytes, epoch: int = 0) -> bytes:
    return build_batch(
        [(None, value)], producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True
    )


def test_read_committed_stops_at_lso_and_lists_aborted(mock_cluster: MockCluster, wire: Wire) -> None:
    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    client = wire(log.leader_id)
    append(log, mock_cluster, txn_batch(1, 0, b"committed"))  # offset 0
    append(log, mock_cluster, txn_batch(2, 0, b"aborted"))  # offset 1
    # while both are open: LSO = 0, nothing for read_committed, [] aborted list
    open_rc = client.send(fetch_req(12, isolation=1)).responses[0].partitions[0]
    assert (open_rc.high_watermark, open_rc.last_stable_offset) == (2, 0)
    assert decode_batches(open_rc.records) == [] and open_rc.aborted_transactions == []
    open_ru = client.send(fetch_req(12, isolation=0)).responses[0].partitions[0]
    assert record_values(decode_batches(open_ru.records)) == [b"committed", b"aborted"]
    assert open_ru.aborted_transactions is None
    with mock_cluster.state.lock:
        log.write_marker(1, 1, commit=True, coordinator_epoch=0)  # offset 2
        log.write_marker(2, 1, commit=False, coordinator_epoch=0)  # offset 3
    done = client.send(fetch_req(12, isolation=1)).responses[0].partitions[0]
    assert (done.high_watermark, done.last_stable_offset) == (4, 4)
    assert [(a.producer_id, a.first_offset) for a in done.aborted_transactions] == [(2, 1)]
    batches = decode_batches(done.records)
    assert [b.is_control_batch for b in batches] == [False, False, True, True]
    # Fetch v18 by topic id gives the same batches
    v18 = client.send(fetch_req(18, isolation=1, topic_id=mock_cluster.state.topics[TOPIC].topic_id))
    assert v18.responses[0].partitions[0].records == done.records


def test_partition_max_bytes_returns_at_least_one_batch(mock_cluster: MockCluster, wire: Wire) -> None:
    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    for i in range(3):
        append(
            log,
            mock_cluster,
            build_batch([(None, b"x" * 100)], producer_id=9, producer_epoch=0, base_sequence=i),
        )
    client = wire(log.leader_id)
    tiny = client.send(fetch_req(12, partition_max_bytes=10)).responses[0].partitions[0]
    assert len(decode_batches(tiny.records)) == 1
    from_middle = client.send(fetch_req(12, offset=1)).responses[0].partitions[0]
    assert [b.base_offset for b in decode_batches(from_middle.records)] == [1, 2]
    out_of_range = client.send(fetch_req(12, offset=10)).responses[0].partitions[0]
    assert out_of_range.error_code == 1


def test_long_poll_returns_when_data_arrives(mock_cluster: MockCluster, wire: Wire) -> None:
    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    client = wire(log.leader_id)
    result: list[Any] = []
    done = threading.Event()

    def poll() -> None:
        result.append(client.send(fetch_req(12, max_wait_ms=10_000, min_bytes=1)))
        done.set()

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    append(log, mock_cluster, build_batch([(None, b"late")]))
    assert done.wait(10)
    assert record_values(decode_batches(result[0].responses[0].partitions[0].records)) == [b"late"]


def test_long_poll_without_data_answers_empty(mock_cluster: MockCluster, wire: Wire) -> None:
    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    resp = wire(log.leader_id).send(fetch_req(12, max_wait_ms=100, min_bytes=1))
    part = resp.responses[0].partitions[0]
    assert part.error_code == 0 and not part.records


def test_fetch_from_follower_and_unknown_topic(mock_cluster: MockCluster, wire: Wire) -> None:
    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    other = next(b for b in mock_cluster.broker_ids if b != log.leader_id)
    part = wire(other).send(fetch_req(12)).responses[0].partitions[0]
    assert part.error_code == 6
    missing = wire(1).send(fetch_req(12, topic="missing")).responses[0].partitions[0]
    assert missing.error_code == 3


def test_list_offsets_earliest_latest_and_lso(mock_cluster: MockCluster, wire: Wire) -> None:
    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    append(log, mock_cluster, build_batch([(None, b"a"), (None, b"b")], timestamp=1000))
    append(log, mock_cluster, txn_batch(3, 0, b"open"))
    t = ListOffsetsRequest.ListOffsetsTopic

    def offset(ts: int, isolation: int) -> int:
        req = ListOffsetsRequest[7](
            replica_id=-1,
            isolation_level=isolation,
            topics=[
                t(
                    name=TOPIC,
                    partitions=[
                        t.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=ts)
                    ],
                )
            ],
        )
        part = wire(log.leader_id).send(req).topics[0].partitions[0]
        assert part.error_code == 0
        return int(part.offset)

    assert offset(-2, 0) == 0
    assert offset(-1, 0) == 3
    assert offset(-1, 1) == 2  # read_committed: the last stable offset
    assert offset(500, 0) == 0


def test_offset_for_leader_epoch_answers_from_the_epoch_cache(mock_cluster: MockCluster, wire: Wire) -> None:
    """Kafka's LeaderEpochFileCache.endOffsetFor: epoch 0 held offsets 0-1, epoch 1 holds 2 onwards."""
    from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest

    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    append(log, mock_cluster, build_batch([(None, b"a"), (None, b"b")]))
    first_leader = log.leader_id
    other = next(b for b in mock_cluster.broker_ids if b != first_leader)
    mock_cluster.move_leader(TOPIC, 0, other)
    append(log, mock_cluster, build_batch([(None, b"c")]))
    t = OffsetForLeaderEpochRequest.OffsetForLeaderTopic

    def ask(broker: int, epoch: int, current: int = -1) -> tuple[int, int, int]:
        req = OffsetForLeaderEpochRequest[4](replica_id=-1, topics=[t(topic=TOPIC, partitions=[
            t.OffsetForLeaderPartition(partition=0, current_leader_epoch=current, leader_epoch=epoch)])])
        part = wire(broker).send(req).topics[0].partitions[0]
        return part.error_code, part.leader_epoch, part.end_offset

    assert ask(other, 0) == (0, 0, 2)  # epoch 0 ended where epoch 1 began
    assert ask(other, 1) == (0, 1, 3)  # the current epoch ends at the log end
    assert ask(other, 7)[1:] == (-1, -1)
    assert ask(other, 1, current=0)[0] == ec.FENCED_LEADER_EPOCH  # the asker's metadata is old
    assert ask(other, 1, current=2)[0] == ec.UNKNOWN_LEADER_EPOCH  # the broker's is
    assert ask(first_leader, 1)[0] == ec.NOT_LEADER_OR_FOLLOWER


def test_a_kafka_python_consumer_keeps_fetching_after_the_leader_moves(mock_cluster: MockCluster) -> None:
    """kafka-python validates its position with OffsetForLeaderEpoch after a leader epoch change and
    stopped fetching the partition for good when the mock did not answer it (found by the chaos tier)."""
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    append(log, mock_cluster, build_batch([(None, b"before")]))
    consumer = KafkaConsumer(bootstrap_servers=mock_cluster.bootstrap_servers, enable_auto_commit=False,
                             auto_offset_reset="earliest", fetch_max_wait_ms=50)
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        seen: list[bytes] = []

        def read_until(value: bytes) -> None:
            for _ in range(200):  # bounded: each poll waits at most 50 ms
                seen.extend(r.value for r in consumer.poll(timeout_ms=50).get(tp, []))
                if value in seen:
                    return
            raise AssertionError(f"{value!r} not read; saw {seen}")

        read_until(b"before")
        for hop in range(3):
            other = next(b for b in mock_cluster.broker_ids if b != log.leader_id)
            mock_cluster.move_leader(TOPIC, 0, other)
            append(log, mock_cluster, build_batch([(None, b"after-%d" % hop)]))
            read_until(b"after-%d" % hop)
        assert any(e.api == "OffsetForLeaderEpoch" for e in mock_cluster.request_log)
    finally:
        consumer.close()


# -- where the mock differed from Kafka 4.1 (review D) ---------------------------------------------------


def _list_offset(client: WireClient, ts: int, current_leader_epoch: int = -1) -> tuple[int, int, int]:
    t = ListOffsetsRequest.ListOffsetsTopic
    req = ListOffsetsRequest[9](
        replica_id=-1,
        isolation_level=1,
        topics=[
            t(
                name=TOPIC,
                partitions=[
                    t.ListOffsetsPartition(
                        partition_index=0, current_leader_epoch=current_leader_epoch, timestamp=ts
                    )
                ],
            )
        ],
    )
    part = client.send(req).topics[0].partitions[0]
    return int(part.error_code), int(part.offset), int(part.leader_epoch)


def _epoch_end(client: WireClient, epoch: int, current_leader_epoch: int = -1) -> tuple[int, int, int]:
    from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest

    t = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    req = OffsetForLeaderEpochRequest[4](
        replica_id=-1,
        topics=[
            t(
                topic=TOPIC,
                partitions=[
                    t.OffsetForLeaderPartition(
                        partition=0, current_leader_epoch=current_leader_epoch, leader_epoch=epoch
                    )
                ],
            )
        ],
    )
    part = client.send(req).topics[0].partitions[0]
    return int(part.error_code), int(part.leader_epoch), int(part.end_offset)


def test_list_offsets_earliest_carries_the_earliest_cached_epoch(
    mock_cluster: MockCluster, wire: Wire
) -> None:
    """Kafka answers EARLIEST with the first epoch of its leader epoch cache
    (UnifiedLog.fetchOffsetByTimestamp), LATEST with the current one; the mock answered the current
    epoch for both."""
    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    append(log, mock_cluster, build_batch([(None, b"a"), (None, b"b")]))  # epoch 0: offsets 0-1
    other = next(b for b in mock_cluster.broker_ids if b != log.leader_id)
    mock_cluster.move_leader(TOPIC, 0, other)
    append(log, mock_cluster, build_batch([(None, b"c")]))  # epoch 1: offset 2
    client = wire(other)
    assert _list_offset(client, -2) == (0, 0, 0)
    assert _list_offset(client, -1) == (0, 3, 1)
    mock_cluster.delete_records(TOPIC, 0, 2)  # the cache is truncated from the start: epoch 1 from 2
    assert _list_offset(client, -2) == (0, 2, 1)
    assert _epoch_end(client, 0) == (0, 0, 2), "an epoch before the cache: the next epoch's start"


def test_a_leader_epoch_in_which_nothing_was_written_is_replaced_in_the_cache(
    mock_cluster: MockCluster, wire: Wire
) -> None:
    """LeaderEpochFileCache.assign drops entries starting at or after the new one: a leader that wrote
    nothing leaves no epoch behind (EARLIEST then answers the new leader's)."""
    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    other = next(b for b in mock_cluster.broker_ids if b != log.leader_id)
    mock_cluster.move_leader(TOPIC, 0, other)  # epoch 1 starts at 0, where epoch 0 started
    assert _list_offset(wire(other), -2) == (0, 0, 1)


def test_list_offsets_and_offset_for_leader_epoch_check_the_epoch_before_the_leader(
    mock_cluster: MockCluster, wire: Wire
) -> None:
    """Partition.getLocalLog on a replica that is not the leader: a stale current_leader_epoch is
    FENCED_LEADER_EPOCH (the asker's metadata is old), before NOT_LEADER_OR_FOLLOWER."""
    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    first = log.leader_id
    other = next(b for b in mock_cluster.broker_ids if b != first)
    mock_cluster.move_leader(TOPIC, 0, other)  # epoch 1
    follower = wire(first)
    assert _list_offset(follower, -1, current_leader_epoch=0)[0] == ec.FENCED_LEADER_EPOCH
    assert _list_offset(follower, -1, current_leader_epoch=5)[0] == ec.UNKNOWN_LEADER_EPOCH
    assert _list_offset(follower, -1, current_leader_epoch=1)[0] == ec.NOT_LEADER_OR_FOLLOWER
    assert _epoch_end(follower, 0, current_leader_epoch=0)[0] == ec.FENCED_LEADER_EPOCH
    assert _epoch_end(follower, 0, current_leader_epoch=5)[0] == ec.UNKNOWN_LEADER_EPOCH
    assert _epoch_end(follower, 0, current_leader_epoch=1)[0] == ec.NOT_LEADER_OR_FOLLOWER


def test_an_incremental_fetch_does_not_answer_a_partition_whose_last_stable_offset_alone_moved(
    mock_cluster: MockCluster, wire: Wire, monkeypatch: Any
) -> None:
    """CachedPartition.maybeUpdateResponseData answers records, errors, a moved high watermark or log
    start offset - not a moved last stable offset. The mock's single log moves the high watermark with
    every marker; a replicated broker's LSO can move alone (its high watermark trails the log end),
    which the test makes this log do."""
    log = mock_cluster.create_topic(TOPIC, 1).partitions[0]
    append(log, mock_cluster, build_batch([(None, b"a")]))
    client = wire(log.leader_id)

    def fetch(session_id: int, epoch: int, named: bool) -> Any:
        req = fetch_req(12, offset=1, isolation=1)
        req.session_id, req.session_epoch = session_id, epoch
        if not named:
            req.topics = []
        return client.send(req)

    opened = fetch(0, 0, named=True)
    assert opened.error_code == 0 and opened.session_id > 0
    assert fetch(opened.session_id, 1, named=False).responses == [], "nothing changed"
    monkeypatch.setattr(PartitionLog, "last_stable_offset", property(lambda _log: 0))
    assert fetch(opened.session_id, 2, named=False).responses == [], "the LSO alone moved"
    monkeypatch.undo()
    append(log, mock_cluster, build_batch([(None, b"b")]))
    moved = fetch(opened.session_id, 3, named=False)
    assert [p.high_watermark for t in moved.responses for p in t.partitions] == [2]
