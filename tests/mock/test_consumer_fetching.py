"""TransactionalConsumer's Fetch requests against MockCluster: what each partition error of an answer
leads to, and what the fetch session sees (``_internal/fetch/fetcher.py``). The file runs on both hot
paths.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from txnproducer import (
    BrokerError,
    CorruptRecordError,
    TopicPartition,
    TransactionalConsumer,
    TransactionalProducer,
)
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster

TOPIC = "in"


def _write(cluster: MockCluster, values: list[bytes], partition: int = 0) -> None:
    with TransactionalProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        transactional_id=f"w{partition}",
        max_block_ms=10_000,
        request_timeout_ms=5_000,
    ) as producer:
        producer.init_transactions()
        with producer.transaction():
            for value in values:
                producer.send(TOPIC, value, partition=partition)


def _values(consumer: TransactionalConsumer, count: int, polls: int = 50) -> list[bytes | None]:
    got: list[bytes | None] = []
    for _ in range(polls):
        if len(got) >= count:
            break
        got.extend(r.value for r in consumer.poll(0.2))
    return got


@pytest.mark.parametrize(
    ("code", "error_class"),
    [(ec.CORRUPT_MESSAGE, CorruptRecordError), (ec.INVALID_REQUEST, BrokerError)],
    ids=["CORRUPT_MESSAGE", "an-unexpected-code"],
)
def test_fetch_errors_a_consumer_cannot_act_on_are_raised_until_the_application_seeks(
    mock_cluster: MockCluster, consumers: Any, code: int, error_class: type[Exception]
) -> None:
    """The Java client throws these (KafkaException, IllegalStateException); they were retried with a
    warning, for ever if the broker kept answering so, and poll() returned nothing without saying why."""
    mock_cluster.create_topic(TOPIC, 1)
    _write(mock_cluster, [b"a", b"b"])
    tp = TopicPartition(TOPIC, 0)
    consumer = consumers()
    consumer.assign([tp])
    consumer.seek(tp, 0)
    mock_cluster.inject_error("Fetch", code, count=1)
    for _ in range(2):  # kept: not fetched again, nothing skipped
        with pytest.raises(error_class) as caught:
            _values(consumer, 1)
        assert caught.value.error_code == code
        assert f"{TOPIC}-0" in str(caught.value) and "offset 0" in str(caught.value)
    if isinstance(caught.value, CorruptRecordError):
        assert (caught.value.topic, caught.value.partition, caught.value.offset) == (TOPIC, 0, 0)
    assert consumer.position(tp) == 0
    consumer.seek(tp, 0)  # the application decides: try again
    assert _values(consumer, 2) == [b"a", b"b"]


def test_an_unknown_server_error_is_retried_as_the_java_client_does(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    mock_cluster.create_topic(TOPIC, 1)
    _write(mock_cluster, [b"a"])
    tp = TopicPartition(TOPIC, 0)
    consumer = consumers()
    consumer.assign([tp])
    consumer.seek(tp, 0)
    since = mock_cluster.requests.next_seq()
    mock_cluster.inject_error("Fetch", ec.UNKNOWN_SERVER_ERROR, count=2)
    assert _values(consumer, 1) == [b"a"]
    refused = [e for e in mock_cluster.request_log[since:] if e.api == "Fetch" and e.injected]
    assert len(refused) == 2


def test_a_broker_is_not_fetched_from_while_one_of_its_partitions_has_records_buffered(
    mock_cluster: MockCluster, consumers: Any
) -> None:
    """KAFKA-17182: a fetch naming only the broker's other partitions forgot the buffered one from the
    fetch session, and the next fetch added it back - every round, for as long as records stayed
    buffered (sessions churned; a broker may evict such a session)."""
    mock_cluster.create_topic(TOPIC, 2)
    leader = mock_cluster.leader_of(TOPIC, 0)
    mock_cluster.move_leader(TOPIC, 1, leader)
    _write(mock_cluster, [b"%d" % i for i in range(5)])  # partition 1 stays empty
    p0, p1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    consumer = consumers()
    consumer.assign([p0, p1])
    consumer.seek(p0, 0)
    consumer.seek(p1, 0)
    since = mock_cluster.requests.next_seq()
    got = [r.value for r in consumer.poll(5.0, max_records=1)]  # one fetch answered p0's five records
    got += _values(consumer, 4)
    assert got == [b"0", b"1", b"2", b"3", b"4"]
    # the session's first incremental fetch (epoch 1) is the first fetch after the one that answered:
    # it must not forget p0
    incremental = mock_cluster.wait_for_request(
        lambda e: e.api == "Fetch" and e.broker_id == leader and e.fields.get("session_epoch", 0) >= 1,
        since=since,
    )
    assert "forgotten" not in incremental.fields, incremental.fields


@pytest.mark.parametrize("ending", ["abort", "commit-then-marker-alone"])
def test_poll_returns_at_once_when_the_position_moves_past_markers_only(
    mock_cluster: MockCluster, consumers: Any, ending: str
) -> None:
    """The Java consumer's ``Fetch.positionAdvanced``: a fetch answer holding only a transaction
    marker (or only aborted records and their marker) moves the position without a record, and
    poll() returns then, empty, instead of waiting out its timeout - a reader that stops once its
    position reaches an offset past a marker (the Spark source's ranges) would otherwise wait."""
    mock_cluster.create_topic(TOPIC, 1)
    tp = TopicPartition(TOPIC, 0)
    # one batch per fetch answer: the marker comes alone, after the records it commits
    consumer = consumers(max_partition_fetch_bytes=1, fetch_max_wait_ms=20_000)
    consumer.assign([tp])
    with TransactionalProducer(bootstrap_servers=mock_cluster.bootstrap_servers, transactional_id="w",
                               max_block_ms=10_000, request_timeout_ms=5_000) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for value in (b"a", b"b", b"c"):
            producer.send(TOPIC, value, partition=0)
        producer.flush()  # in the log before the transaction ends
        if ending == "abort":
            producer.abort_transaction()
        else:
            producer.commit_transaction()
    if ending != "abort":
        assert _values(consumer, 3) == [b"a", b"b", b"c"]
        assert consumer.position(tp) == 3
    started = time.monotonic()
    # aborted: the data batch, then its marker, each alone in an answer: two polls, both at once
    for _ in range(2 if ending == "abort" else 1):
        assert consumer.poll(30.0) == []
    waited = time.monotonic() - started
    assert consumer.position(tp) == 4, "the position moved past the marker"
    assert waited < 15.0, f"poll() waited {waited:.1f} s of its 30 s with the position already moved"
