"""The Sender's connections under faults.

Every request goes over our own connections (``txnproducer._internal.network.connection``), whatever
the security protocol. A user relies on: a request that gets no answer within ``request_timeout_ms`` is
retried on a new connection without duplicating records, a connection lost after the broker acted
on EndTxn still ends in a committed transaction, and nothing churns connections when nothing fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.producers import ProducerFactory, committed_values
from txnproducer.testing import MockCluster


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-conn", retry_backoff_ms=20)
    yield factory
    mock_cluster.clear_faults()
    factory.close_all(5)


TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])


@TVS
def test_a_produce_answer_later_than_the_request_timeout_is_retried_once_on_a_new_connection(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("late", partitions=1)
    producer = make_producer(linger_ms=0, request_timeout_ms=400, delivery_timeout_ms=20_000)
    producer.init_transactions()
    since = mock_cluster.requests.next_seq()
    mock_cluster.delay_responses("Produce", 1_500)  # written at once, answered after the timeout
    with producer.transaction():
        future = producer.send("late", b"once", partition=0)
        assert future.get(10).offset == 0
    # the broker logs a request when it answers: the retry first, the delayed original 1.5 s in
    retry = mock_cluster.wait_for_request(lambda e: e.api == "Produce", timeout=5, since=since)
    original = mock_cluster.wait_for_request(
        lambda e: e.api == "Produce" and e.connection_id != retry.connection_id, timeout=5, since=since)
    assert original.seq > retry.seq, "the first answer should have been the retry's"
    assert len([e for e in mock_cluster.request_log[since:] if e.api == "Produce"]) == 2
    assert committed_values(mock_cluster, "late", 0) == [b"once"]


@TVS
def test_a_connection_lost_after_end_txn_was_handled_still_commits(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("endtxn-drop", partitions=2)
    producer = make_producer(linger_ms=0)
    producer.init_transactions()
    mock_cluster.drop_connection_after("EndTxn", when="after")
    with producer.transaction():
        producer.send("endtxn-drop", b"a", partition=0)
        producer.send("endtxn-drop", b"b", partition=1)
    with producer.transaction():  # the producer goes on normally
        producer.send("endtxn-drop", b"c", partition=0)
    assert next(e for e in mock_cluster.request_log if e.api == "EndTxn").dropped
    assert committed_values(mock_cluster, "endtxn-drop", 0) == [b"a", b"c"]
    assert committed_values(mock_cluster, "endtxn-drop", 1) == [b"b"]


def test_without_faults_each_broker_gets_the_senders_requests_on_one_connection(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("steady", partitions=3)
    producer = make_producer()
    producer.init_transactions()
    since = mock_cluster.requests.next_seq()
    for _ in range(20):
        with producer.transaction():
            for p in range(3):
                producer.send("steady", b"v", partition=p)
    sender_apis = {"Produce", "EndTxn", "AddPartitionsToTxn", "FindCoordinator"}
    connections: dict[int, set[int]] = {}
    for entry in mock_cluster.request_log[since:]:
        if entry.api in sender_apis:
            connections.setdefault(entry.broker_id, set()).add(entry.connection_id)
    assert connections and all(len(ids) == 1 for ids in connections.values()), connections
    for p in range(3):
        assert committed_values(mock_cluster, "steady", p) == [b"v"] * 20


@TVS
def test_no_kafka_python_connection_metadata_or_event_loop_is_made(
        mock_cluster: MockCluster, make_producer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python is the protocol's dictionary only: a producer's whole life (bootstrap, metadata,
    coordinator lookups, transactions, close) makes none of its network objects."""
    import kafka.cluster
    import kafka.net.manager
    import kafka.net.selector

    def refused(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("a kafka-python network object was made")

    for cls in (kafka.net.selector.NetworkSelector, kafka.net.manager.KafkaConnectionManager,
                kafka.cluster.ClusterMetadata):
        monkeypatch.setattr(cls, "__init__", refused)
    mock_cluster.create_topic("lean", partitions=3)
    producer = make_producer()
    producer.init_transactions()
    for _ in range(3):
        with producer.transaction():
            for p in range(3):
                producer.send("lean", b"v", partition=p)
    producer.close(5)
    for p in range(3):
        assert committed_values(mock_cluster, "lean", p) == [b"v"] * 3
