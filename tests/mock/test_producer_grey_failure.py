"""Grey failures: a broker that keeps its connections open but stops answering (SIGSTOP, a hung disk).

The cluster fences such a broker (after broker.session.timeout.ms) and moves its partitions and
coordinators to others; until its request times out (request_timeout_ms, 30 s by default) a client
that only waits learns nothing. What a user relies on: once the cluster has moved on, so does the
producer - within a couple of seconds, not request_timeout_ms - and nothing is lost or written
twice, whether or not the frozen broker had appended what it never answered. Here a black hole
(nothing answered, nothing appended) or held answers (appended, answer held back) stand in for
the frozen broker, and ``move_leader`` / ``move_coordinator`` for the controller's decision.

A frozen coordinator also stalls a healthy leader: a Produce that adds a partition to the transaction
waits for the leader's check with the coordinator (KIP-890), and Kafka's leader keeps waiting on its
request to the frozen broker after the coordinator moved. MockCluster holds such a Produce while the
coordinator is black-holed, as seen on Kafka 4.1.0 (``benchmarks/failover.py``, coordinator SIGSTOP).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.structs import OffsetAndMetadata, TopicPartition

from tests._support.producers import ProducerFactory, committed_values
from txnproducer.testing import MockCluster

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])
# well below the default request_timeout_ms (30 s): recovery must not wait for it
RECOVERY_BOUND_S = 8.0


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-grey", request_timeout_ms=30_000,
                              delivery_timeout_ms=120_000, max_block_ms=30_000)
    yield factory
    mock_cluster.black_hole(None, enabled=False)
    mock_cluster.clear_faults()
    factory.close_all(1)


def _other(cluster: MockCluster, *not_these: int) -> int:
    return next(b for b in cluster.broker_ids if b not in not_these)


def _coordinated_apart(cluster: MockCluster, make_producer: Any, txn_id: str) -> tuple[Any, int, int]:
    """Topic "t" (one partition) and an initialized producer whose coordinator is not the leader:
    (producer, leader, coordinator)."""
    cluster.create_topic("t", partitions=1)
    leader = cluster.leader_of("t", 0)
    coordinator = _other(cluster, leader)
    cluster.move_coordinator(txn_id, coordinator)
    producer = make_producer(txn_id)
    producer.init_transactions()
    return producer, leader, coordinator


@TVS
@pytest.mark.parametrize("frozen", ["nothing_appended", "appended_not_answered"])
def test_a_frozen_leader_is_left_once_the_cluster_moves_its_partition(
        mock_cluster: MockCluster, make_producer: Any, frozen: str) -> None:
    txn_id = f"tx-grey-leader-{frozen}"
    mock_cluster.create_topic("t", partitions=1)
    leader = mock_cluster.leader_of("t", 0)
    mock_cluster.move_coordinator(txn_id, _other(mock_cluster, leader))
    producer = make_producer(txn_id)
    producer.init_transactions()
    with producer.transaction():
        producer.send("t", b"before", partition=0)
    producer.begin_transaction()
    if frozen == "nothing_appended":
        mock_cluster.black_hole(leader)
    else:
        mock_cluster.delay_responses("Produce", 60_000, broker_id=leader)
    futures = [producer.send("t", b"during-%d" % i, partition=0) for i in range(3)]
    new_leader = _other(mock_cluster, leader)
    mock_cluster.move_leader("t", 0, new_leader)  # the controller fenced the frozen broker
    started = time.monotonic()
    producer.commit_transaction(RECOVERY_BOUND_S)
    assert time.monotonic() - started < RECOVERY_BOUND_S
    assert [f.get(1).partition for f in futures] == [0, 0, 0]
    # exactly once: what the frozen broker appended was recognised as a duplicate, not rewritten
    assert committed_values(mock_cluster, "t", 0) == [b"before", b"during-0", b"during-1", b"during-2"]


@TVS
def test_a_frozen_coordinator_is_left_once_the_cluster_moves_the_transaction(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    txn_id = "tx-grey-coordinator"
    producer, _, coordinator = _coordinated_apart(mock_cluster, make_producer, txn_id)
    producer.begin_transaction()
    producer.send("t", b"x", partition=0).get(5)
    mock_cluster.black_hole(coordinator)
    mock_cluster.move_coordinator(txn_id, _other(mock_cluster, coordinator))
    started = time.monotonic()
    producer.commit_transaction(RECOVERY_BOUND_S)
    assert time.monotonic() - started < RECOVERY_BOUND_S
    assert committed_values(mock_cluster, "t", 0) == [b"x"]


@TVS
def test_a_produce_waiting_on_a_frozen_coordinator_is_sent_again_once_the_transaction_moves(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """The leader answers, but not before the frozen coordinator does: once the cluster names another
    coordinator, the producer sends the Produce again (the leader asks the new coordinator) and its
    EndTxn goes to the new coordinator - never to the frozen one, which on waking would answer from its
    stale state (a real broker answered PRODUCER_FENCED there)."""
    txn_id = "tx-grey-verification"
    producer, leader, coordinator = _coordinated_apart(mock_cluster, make_producer, txn_id)
    with producer.transaction():
        producer.send("t", b"before", partition=0)
    frozen_at = mock_cluster.requests.next_seq()
    mock_cluster.black_hole(coordinator)
    started = time.monotonic()
    producer.begin_transaction()
    futures = [producer.send("t", b"during-%d" % i, partition=0) for i in range(3)]
    # the Produce is held at the leader; the producer asks another broker who coordinates now ...
    mock_cluster.wait_for_request(lambda e: e.api == "FindCoordinator" and e.broker_id != coordinator,
                                  timeout=RECOVERY_BOUND_S, since=frozen_at)
    new_coordinator = _other(mock_cluster, coordinator, leader)
    mock_cluster.move_coordinator(txn_id, new_coordinator)  # ... until the controller fenced the frozen one
    producer.commit_transaction(RECOVERY_BOUND_S)
    assert time.monotonic() - started < RECOVERY_BOUND_S
    assert [f.get(1).offset for f in futures] == [2, 3, 4]  # after "before" and its commit marker
    after = [e for e in mock_cluster.request_log if e.seq >= frozen_at]
    assert {e.broker_id for e in after if e.api == "EndTxn"} == {new_coordinator}
    mock_cluster.black_hole(coordinator, enabled=False)  # the held Produce is answered now: no effect
    with producer.transaction():
        producer.send("t", b"after", partition=0)
    assert committed_values(mock_cluster, "t", 0) == [b"before", b"during-0", b"during-1", b"during-2",
                                                      b"after"]


def test_offsets_waiting_on_a_frozen_coordinator_are_sent_again_once_the_transaction_moves(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """The same for TxnOffsetCommit v5 (Transaction Version 2): the group coordinator adds the offsets
    partition to the transaction with the transaction coordinator first, and waits on a frozen one."""
    txn_id = "tx-grey-offsets"
    producer, _, coordinator = _coordinated_apart(mock_cluster, make_producer, txn_id)
    mock_cluster.create_topic("in", partitions=1)
    group_coordinator = _other(mock_cluster, coordinator)
    mock_cluster.move_coordinator("grey-group", group_coordinator, key_type="group")
    with producer.transaction():
        producer.send("t", b"before", partition=0)
    frozen_at = mock_cluster.requests.next_seq()
    mock_cluster.black_hole(coordinator)
    producer.begin_transaction()  # offsets only: the TxnOffsetCommit is what waits
    offsets = {TopicPartition("in", 0): OffsetAndMetadata(7, "", -1)}
    sending = threading.Thread(target=producer.send_offsets_to_transaction, args=(offsets, "grey-group"))
    sending.start()
    mock_cluster.wait_for_request(
        lambda e: e.api == "FindCoordinator" and e.broker_id != coordinator and e.fields.get("key_type") == 1,
        timeout=RECOVERY_BOUND_S, since=frozen_at)
    new_coordinator = _other(mock_cluster, coordinator, group_coordinator)
    mock_cluster.move_coordinator(txn_id, new_coordinator)
    sending.join(RECOVERY_BOUND_S)
    assert not sending.is_alive()
    producer.commit_transaction(RECOVERY_BOUND_S)
    after = [e for e in mock_cluster.request_log if e.seq >= frozen_at]
    assert {e.broker_id for e in after if e.api == "EndTxn"} == {new_coordinator}
    assert mock_cluster.committed_offsets("grey-group") == {("in", 0): 7}
    assert committed_values(mock_cluster, "t", 0) == [b"before"]


@TVS
@pytest.mark.parametrize("connection", ["ready", "none"])
def test_a_coordinator_lookup_sent_to_a_frozen_broker_is_asked_again_elsewhere(
        mock_cluster: MockCluster, make_producer: Any, monkeypatch: pytest.MonkeyPatch,
        connection: str) -> None:
    """FindCoordinator may go to any broker; a frozen one still accepts connections (the kernel does) and
    never answers, so a lookup sent there would wait request_timeout_ms. kafka-python's choice of broker is
    made to be the frozen one here, with a ready connection to it from before it froze or none: the lookup
    must go to another broker within a couple of seconds."""
    from kafka.net.compat import KafkaNetClient

    txn_id = f"tx-grey-lookup-{connection}"
    producer, leader, coordinator = _coordinated_apart(mock_cluster, make_producer, txn_id)
    frozen = _other(mock_cluster, leader, coordinator)
    if connection == "ready":
        mock_cluster.create_topic("u", partitions=1)
        mock_cluster.move_leader("u", 0, frozen)
        with producer.transaction():
            producer.send("u", b"connects", partition=0)
    producer.begin_transaction()
    producer.send("t", b"x", partition=0).get(5)
    mock_cluster.black_hole(frozen)
    monkeypatch.setattr(KafkaNetClient, "least_loaded_node", lambda self: frozen)
    mock_cluster.move_coordinator(txn_id, leader)  # the old coordinator answers NOT_COORDINATOR: look up
    started = time.monotonic()
    producer.commit_transaction(RECOVERY_BOUND_S)
    assert time.monotonic() - started < RECOVERY_BOUND_S
    assert committed_values(mock_cluster, "t", 0) == [b"x"]
