"""Grey failures: a broker that keeps its connections open but stops answering (SIGSTOP, a hung disk).

The cluster fences such a broker (after broker.session.timeout.ms) and moves its partitions and
coordinators to others; until its request times out (request_timeout_ms, 30 s by default) a client
that only waits learns nothing. What a user relies on: once the cluster has moved on, so does the
producer - within a couple of seconds, not request_timeout_ms - and nothing is lost or written
twice, whether or not the frozen broker had handled what it never answered; a slow broker the
cluster has not moved away from keeps its requests. Here ``freeze_broker`` (SIGSTOP: requests held,
answered late after ``thaw_broker``), a black hole (nothing answered, ever) or held answers (handled,
answer held back) stand in for the frozen broker, and ``fence_broker`` / ``move_leader`` /
``move_coordinator`` for the controller's decision.

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



def _in_background(call: Any, *args: Any) -> tuple[threading.Thread, list[BaseException | None]]:
    """Run ``call(*args)`` on a thread; the list gets None (it returned) or what it raised."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call(*args)
        except BaseException as exc:  # reported by the test
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _asks_who_coordinates(key: str, key_type: int, not_at: int) -> Any:
    """A FindCoordinator for ``key`` sent to another broker than ``not_at``."""
    def matches(e: Any) -> bool:
        keys = e.fields.get("coordinator_keys") or [e.fields.get("key")]
        return (e.api == "FindCoordinator" and e.broker_id != not_at and key in keys
                and e.fields.get("key_type", 0) == key_type)
    return matches


@TVS
def test_an_end_txn_a_frozen_coordinator_holds_goes_to_the_new_one_at_its_fence(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """SIGSTOP during EndTxn: the producer keeps waiting while the cluster still names the frozen broker
    (a slow coordinator keeps its requests), and commits through the new coordinator as soon as the
    controller fences it - not after request_timeout_ms (30 s). When the frozen broker wakes up it
    answers the EndTxn it held (NOT_COORDINATOR: it no longer coordinates); that late answer changes
    nothing, and what was committed is there once."""
    txn_id = "tx-grey-frozen-end-txn"
    producer, _, coordinator = _coordinated_apart(mock_cluster, make_producer, txn_id)
    with producer.transaction():
        producer.send("t", b"before", partition=0)
    producer.begin_transaction()
    producer.send("t", b"during", partition=0).get(5)
    frozen_at = mock_cluster.requests.next_seq()
    mock_cluster.freeze_broker(coordinator)
    committing, outcome = _in_background(producer.commit_transaction, RECOVERY_BOUND_S * 2)
    mock_cluster.wait_for_request(_asks_who_coordinates(txn_id, 1, coordinator), timeout=RECOVERY_BOUND_S,
                                  since=frozen_at)
    assert committing.is_alive()  # the cluster still names the frozen broker: the EndTxn waits for it
    mock_cluster.fence_broker(coordinator)
    committing.join(RECOVERY_BOUND_S)
    assert outcome == [None]
    new_coordinator = mock_cluster.coordinator_for(txn_id)
    ends = [(e.broker_id, e.error_codes) for e in mock_cluster.request_log
            if e.seq >= frozen_at and e.api == "EndTxn"]
    assert ends == [(new_coordinator, ())]
    thawed_at = mock_cluster.requests.next_seq()
    mock_cluster.thaw_broker(coordinator)
    late = mock_cluster.wait_for_request(lambda e: e.api == "EndTxn" and e.broker_id == coordinator,
                                         since=thawed_at)
    assert late.error_codes == (16,)  # NOT_COORDINATOR, to a request the producer no longer waits for
    mock_cluster.rejoin_broker(coordinator)  # the coordinator moves back: the producer follows
    with producer.transaction():
        producer.send("t", b"after", partition=0)
    assert committed_values(mock_cluster, "t", 0) == [b"before", b"during", b"after"]


def test_an_end_txn_the_frozen_coordinator_handled_is_decided_by_the_new_one(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """The coordinator wrote the commit and froze before it answered (TV2). The EndTxn goes again to the
    new coordinator with the epoch it was built with, and that one answers it as a retry of a commit it
    knows: NONE with the bumped epoch, which the producer adopts - the transaction is neither aborted
    nor committed twice, and the next one starts on the new epoch."""
    txn_id = "tx-grey-handled-end-txn"
    producer, _, coordinator = _coordinated_apart(mock_cluster, make_producer, txn_id)
    producer.begin_transaction()
    producer.send("t", b"once", partition=0).get(5)
    epoch = mock_cluster.describe_transaction(txn_id)["producer_epoch"]
    asked_at = mock_cluster.requests.next_seq()
    mock_cluster.delay_responses("EndTxn", 120_000, broker_id=coordinator)  # handled; the answer never left
    committing, outcome = _in_background(producer.commit_transaction, RECOVERY_BOUND_S * 2)
    mock_cluster.wait_for_request(_asks_who_coordinates(txn_id, 1, coordinator), timeout=RECOVERY_BOUND_S,
                                  since=asked_at)
    assert mock_cluster.describe_transaction(txn_id)["state"] in ("PrepareCommit", "CompleteCommit")
    mock_cluster.fence_broker(coordinator)
    committing.join(RECOVERY_BOUND_S)
    assert outcome == [None]
    retried = [e for e in mock_cluster.request_log if e.seq >= asked_at and e.api == "EndTxn"]
    assert [(e.fields["producer_epoch"], e.error_codes) for e in retried] == [(epoch, ())]
    with producer.transaction():
        producer.send("t", b"next", partition=0)
    produced = [e for e in mock_cluster.request_log if e.seq >= asked_at and e.api == "Produce"]
    assert {b[3] for e in produced for b in e.fields["batches"]} == {epoch + 1}
    assert committed_values(mock_cluster, "t", 0) == [b"once", b"next"]


@TVS
def test_offsets_a_frozen_group_coordinator_holds_go_to_the_new_one_at_its_fence(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """SIGSTOP of the consumer group's coordinator while it holds a TxnOffsetCommit: the offsets go to
    the new group coordinator once the frozen one is fenced, and are committed once."""
    txn_id = "tx-grey-frozen-group"
    producer, _, coordinator = _coordinated_apart(mock_cluster, make_producer, txn_id)
    mock_cluster.create_topic("in", partitions=1)
    group_coordinator = _other(mock_cluster, coordinator)
    mock_cluster.move_coordinator("grey-frozen-group", group_coordinator, key_type="group")
    with producer.transaction():
        producer.send("t", b"before", partition=0)
        producer.send_offsets_to_transaction({TopicPartition("in", 0): OffsetAndMetadata(3, "", -1)},
                                             "grey-frozen-group")
    frozen_at = mock_cluster.requests.next_seq()
    mock_cluster.freeze_broker(group_coordinator)
    producer.begin_transaction()
    offsets = {TopicPartition("in", 0): OffsetAndMetadata(7, "", -1)}
    sending, outcome = _in_background(producer.send_offsets_to_transaction, offsets, "grey-frozen-group")
    mock_cluster.wait_for_request(_asks_who_coordinates("grey-frozen-group", 0, group_coordinator),
                                  timeout=RECOVERY_BOUND_S, since=frozen_at)
    assert sending.is_alive()
    mock_cluster.fence_broker(group_coordinator)
    sending.join(RECOVERY_BOUND_S)
    assert outcome == [None]
    producer.commit_transaction(RECOVERY_BOUND_S)
    assert mock_cluster.committed_offsets("grey-frozen-group") == {("in", 0): 7}
    commits = [e.broker_id for e in mock_cluster.request_log
               if e.seq >= frozen_at and e.api == "TxnOffsetCommit" and not e.error_codes]
    assert commits == [mock_cluster.coordinator_for("grey-frozen-group", key_type="group")]


@TVS
def test_a_coordinator_lookup_sent_to_a_frozen_broker_is_asked_again_elsewhere(
        mock_cluster: MockCluster, make_producer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """FindCoordinator may go to any broker; a frozen one still accepts connections (the kernel does) and
    never answers, so a lookup sent there would wait request_timeout_ms. The least loaded broker is made
    to be the frozen one (while it is not known to be silent): the lookup goes to another broker within
    a couple of seconds, and the frozen one is passed over from then on."""
    from txnproducer._internal.network.client import NetworkClient

    txn_id = "tx-grey-lookup"
    producer, leader, coordinator = _coordinated_apart(mock_cluster, make_producer, txn_id)
    frozen = _other(mock_cluster, leader, coordinator)
    mock_cluster.create_topic("u", partitions=1)
    mock_cluster.move_leader("u", 0, frozen)
    with producer.transaction():  # a ready connection to the broker about to freeze
        producer.send("u", b"connects", partition=0)
    producer.begin_transaction()
    producer.send("t", b"x", partition=0).get(5)
    mock_cluster.freeze_broker(frozen)
    least_loaded = NetworkClient.least_loaded_node
    monkeypatch.setattr(NetworkClient, "least_loaded_node",
                        lambda self, avoid=frozenset(): frozen if not self.silent(frozen)
                        else least_loaded(self, avoid))
    mock_cluster.move_coordinator(txn_id, leader)  # the old coordinator answers NOT_COORDINATOR: look up
    started = time.monotonic()
    producer.commit_transaction(RECOVERY_BOUND_S)
    assert time.monotonic() - started < RECOVERY_BOUND_S
    assert committed_values(mock_cluster, "t", 0) == [b"x"]


@TVS
def test_a_coordinator_whose_connection_a_frozen_broker_never_readies_is_left_at_its_fence(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """A new connection to a frozen broker is taken by its kernel but never gets ready (its ApiVersions
    is not answered; only socket_connection_setup_timeout_ms ends it). A commit that needs such a
    connection to its coordinator goes to the new coordinator once the frozen one is fenced."""
    txn_id = "tx-grey-unready"
    mock_cluster.create_topic("t", partitions=1)
    leader = mock_cluster.leader_of("t", 0)
    coordinator = _other(mock_cluster, leader)
    mock_cluster.move_coordinator(txn_id, _other(mock_cluster, leader, coordinator))
    producer = make_producer(txn_id, socket_connection_setup_timeout_ms=60_000)
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("t", b"x", partition=0).get(5)
    mock_cluster.freeze_broker(coordinator)
    mock_cluster.drop_connections(coordinator)  # whatever connection the producer had to it is gone
    frozen_at = mock_cluster.requests.next_seq()
    mock_cluster.move_coordinator(txn_id, coordinator)  # the producer is sent to the frozen broker ...
    committing, outcome = _in_background(producer.commit_transaction, RECOVERY_BOUND_S * 2)
    mock_cluster.wait_for_request(_asks_who_coordinates(txn_id, 1, coordinator), timeout=RECOVERY_BOUND_S,
                                  since=frozen_at)
    assert committing.is_alive()
    mock_cluster.fence_broker(coordinator)  # ... which the controller fences
    committing.join(RECOVERY_BOUND_S)
    assert outcome == [None]
    assert committed_values(mock_cluster, "t", 0) == [b"x"]
