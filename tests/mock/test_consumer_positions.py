"""TransactionalConsumer's positions against MockCluster when answers and hand-outs race with what the
application does: stale reset and validation answers, and fetched records that a KIP-320 truncation
made stale while part of them were handed out (``_internal/fetch/offsets.py``, ``completed_fetch.py``,
``fetcher.py``).

Each test orders the race through the cluster itself - a held answer (``delay_responses``) is answered
before later requests on the same connection, one Fetch answer is handed out over several polls - and
checks from the request log that the race it stages did happen. The file runs on both hot paths.
"""

from __future__ import annotations

from typing import Any

from kafka.structs import OffsetAndMetadata

from txnproducer import TopicPartition, TransactionalConsumer, TransactionalProducer
from txnproducer.testing import MockCluster

TOPIC = "in"


def _write(cluster: MockCluster, txn_id: str, values: list[bytes], partition: int = 0) -> None:
    """One transaction per value: each record is followed by its COMMIT marker."""
    with TransactionalProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        transactional_id=txn_id,
        max_block_ms=10_000,
        request_timeout_ms=5_000,
        linger_ms=0,
    ) as producer:
        producer.init_transactions()
        for value in values:
            with producer.transaction():
                producer.send(TOPIC, value, partition=partition)


def _leader_epoch(cluster: MockCluster, tp: TopicPartition) -> int:
    with cluster.state.lock:
        log = cluster.state.partition_log(tp.topic, tp.partition)
        assert log is not None
        return log.leader_epoch


def _log_end(cluster: MockCluster, tp: TopicPartition) -> int:
    with cluster.state.lock:
        log = cluster.state.partition_log(tp.topic, tp.partition)
        assert log is not None
        return log.high_watermark


def _read(consumer: TransactionalConsumer, count: int, polls: int = 100) -> list[tuple[int, int, bytes]]:
    got: list[tuple[int, int, bytes]] = []
    for _ in range(polls):
        if len(got) >= count:
            break
        got.extend((r.partition, r.offset, r.value) for r in consumer.poll(0.2))
    return got


def test_a_truncation_found_while_a_fetch_is_part_handed_out_drops_the_rest_of_it(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    """A fetched chunk whose records were partly handed out must not be handed out further once the
    position moved elsewhere: here a leader change over a truncated log (KIP-320) moved it back to the
    divergent offset. Handing the rest out returned records that no longer exist, put the position past
    the log end, and the reset that followed read the log again from the start (a duplicate)."""
    mock_cluster.create_topic(TOPIC, 2)
    p, q = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    a = mock_cluster.leader_of(TOPIC, 0)
    b = next(x for x in mock_cluster.broker_ids if x != a)
    mock_cluster.move_leader(TOPIC, 1, a)  # q on p's broker, so that its later move is news too
    _write(mock_cluster, "old", [b"old-%d" % i for i in range(4)])  # offsets 0, 2, 4, 6 (markers between)
    consumer = consumers()
    consumer.assign([p])
    consumer.seek(p, 0)
    first = [(r.offset, r.value) for r in consumer.poll(5.0, max_records=2)]
    assert first == [(0, b"old-0"), (2, b"old-1")], "one fetch; old-2 and old-3 stay buffered"

    mock_cluster.truncate_log(TOPIC, 0, 2, new_leader=b)  # unclean election: offsets 2.. are gone
    mock_cluster.move_leader(TOPIC, 1, b)
    _write(mock_cluster, "new", [b"new-1", b"new-2"])  # the new log: offsets 2, 4 (markers 3, 5)
    since = mock_cluster.requests.next_seq()
    # position(q) polls the network until q's own validation is answered: the stale metadata sends it to
    # broker a, which refuses; the refreshed metadata shows both partitions' new epochs, and the new
    # leader answers both validations at once - p's finds the truncation while old-2 and old-3 are
    # still buffered
    consumer.assign([p, q])
    consumer.seek(q, OffsetAndMetadata(0, "", _leader_epoch(mock_cluster, q)))
    assert consumer.position(q) == 0
    validations = [e for e in mock_cluster.request_log[since:] if e.api == "OffsetForLeaderEpoch"]
    assert any((TOPIC, 0) in e.fields["partitions"] and not e.error_codes for e in validations), (
        "the truncation was found while p's chunk was part handed out"
    )

    got = _read(consumer, 2)
    got += [(r.partition, r.offset, r.value) for r in consumer.poll(0.3)]
    assert [(offset, value) for part, offset, value in got if part == 0] == [(2, b"new-1"), (4, b"new-2")], (
        "the records of the new log from the divergent offset, nothing of the old one, no duplicate"
    )
    assert consumer.position(p) == _log_end(mock_cluster, p) == 6


def test_a_validation_answer_for_an_earlier_position_is_not_applied_to_a_later_one(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    """seek() to a committed offset (what an exactly-once loop does after an abort) while the validation
    of another committed offset is still out: the old answer must not judge the new position. Applied,
    it reported a truncation that never happened and re-read records from 4 (duplicates of processed
    input); the other way round a real truncation could go unnoticed."""
    mock_cluster.create_topic(TOPIC, 1)
    tp = TopicPartition(TOPIC, 0)
    _write(mock_cluster, "e0", [b"e0-a", b"e0-b"])  # offsets 0-3, leader epoch e0
    e0 = _leader_epoch(mock_cluster, tp)
    old = mock_cluster.leader_of(TOPIC, 0)
    mock_cluster.move_leader(TOPIC, 0, next(b for b in mock_cluster.broker_ids if b != old))
    _write(mock_cluster, "e1", [b"e1-a", b"e1-b"])  # offsets 4-7, leader epoch e1
    e1 = _leader_epoch(mock_cluster, tp)
    consumer = consumers()
    consumer.assign([tp])
    assert consumer.position(tp) == 0  # connected, metadata known
    since = mock_cluster.requests.next_seq()
    mock_cluster.delay_responses("OffsetForLeaderEpoch", 500)
    consumer.seek(tp, OffsetAndMetadata(2, "", e0))
    # the validation of (2, e0) goes out; its answer (epoch e0 ends at 4) is held
    assert consumer.poll(0.05) == []
    consumer.seek(tp, OffsetAndMetadata(6, "", e1))
    got = _read(consumer, 1)
    assert [(offset, value) for _, offset, value in got] == [(6, b"e1-b")]
    assert consumer.poll(0.3) == []
    asked = [
        e.fields["leader_epochs"] for e in mock_cluster.request_log[since:] if e.api == "OffsetForLeaderEpoch"
    ]
    assert asked == [[(TOPIC, 0, e0)], [(TOPIC, 0, e1)]], "the held answer came first, and was dropped"


def test_a_reset_answer_for_an_earlier_strategy_does_not_override_a_later_reset(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    """seek_to_beginning() then seek_to_end() before the first lookup was answered: the position is the
    end. Applied, the earliest offset won and the consumer read the whole partition again."""
    mock_cluster.create_topic(TOPIC, 1)
    tp = TopicPartition(TOPIC, 0)
    _write(mock_cluster, "r", [b"a", b"b", b"c"])
    consumer = consumers()
    consumer.assign([tp])
    assert consumer.position(tp) == 0  # connected, metadata known
    since = mock_cluster.requests.next_seq()
    mock_cluster.delay_responses("ListOffsets", 500)
    consumer.seek_to_beginning([tp])
    assert consumer.poll(0.05) == []  # sends ListOffsets(earliest); its answer is held
    consumer.seek_to_end([tp])
    assert consumer.position(tp) == _log_end(mock_cluster, tp) == 6
    assert consumer.poll(0.3) == []
    asked = [e.fields["timestamps"] for e in mock_cluster.request_log[since:] if e.api == "ListOffsets"]
    assert asked == [[(TOPIC, 0, -2)], [(TOPIC, 0, -1)]], "the held answer came first, and was dropped"
