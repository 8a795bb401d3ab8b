"""The Sender's connections under faults, on both I/O paths.

PLAINTEXT producers send their Sender's requests over their own connections
(``txnproducer._internal.network.connection``); TLS and SASL producers over kafka-python's. Either way a
user relies on the same things: a request that gets no answer within ``request_timeout_ms`` is
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
def make_producer(mock_cluster: MockCluster, io_path: str) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, f"tx-conn-{io_path}", retry_backoff_ms=20)
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
def test_kafka_pythons_event_loop_runs_only_when_it_has_work(
        mock_cluster: MockCluster, make_producer: Any, io_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Sender waits on the selector itself (network/lean_poll.py) and runs kafka-python's loop
    for its sockets, timers and tasks only: on the PLAINTEXT path, where the Sender's requests
    use its own connections, that is a few polls in a run, not one per Sender iteration; on
    kafka-python's path, whose sockets carry the requests, the loop runs for each answer."""
    from kafka.net.selector import NetworkSelector

    from txnproducer._internal.sender import Sender

    counts = {"loop": 0, "sender": 0}
    loop_poll_once, sender_run_once = NetworkSelector._poll_once, Sender.run_once

    def counted_poll_once(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["loop"] += 1
        return loop_poll_once(self, *args, **kwargs)

    def counted_run_once(self: Any) -> None:
        counts["sender"] += 1
        sender_run_once(self)

    mock_cluster.create_topic("lean", partitions=3)
    producer = make_producer()
    producer.init_transactions()
    monkeypatch.setattr(NetworkSelector, "_poll_once", counted_poll_once)
    monkeypatch.setattr(Sender, "run_once", counted_run_once)
    for _ in range(30):
        with producer.transaction():
            for p in range(3):
                producer.send("lean", b"v", partition=p)
    monkeypatch.undo()
    for p in range(3):
        assert committed_values(mock_cluster, "lean", p) == [b"v"] * 30
    assert counts["sender"] >= 60  # at least the Produce and the EndTxn answer of each
    if io_path == "direct":
        assert counts["loop"] <= counts["sender"] // 10, counts
    else:
        assert counts["loop"] >= 60, counts  # their sockets: every answer goes through the loop
