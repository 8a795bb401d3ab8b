"""A broker that stops answering without closing its connections (``network/grey_failures.py``), below the
producer: the network layer's promises, and what a consumer group member and the admin tools make of them.

What a user relies on: a request to a coordinator that stops answering waits for it while the cluster
still names it (a slow coordinator keeps its requests), and fails at once, naming the new coordinator,
when the cluster names another - within about a second of the controller's decision, not after
``request_timeout_ms``; a lookup any broker can answer goes to another broker; the silent broker is passed
over until it answers again, and when it wakes up its late answers are read without disturbing anything.
A group member keeps its place in the group through its coordinator's freeze; an admin call answers from
the new coordinator. ``freeze_broker`` / ``fence_broker`` / ``thaw_broker`` are MockCluster's SIGSTOP, the
controller's fence and SIGCONT.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka.protocol.consumer.group import OffsetFetchRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from tests._support.group_members import PolledMember
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.network.connection_errors import BrokerSilent, CoordinatorMoved
from txnproducer.admin import TransactionsAdmin
from txnproducer.config import ProducerConfig
from txnproducer.producer import TransactionalProducer
from txnproducer.testing import MockCluster

# well below request_timeout_ms (30 s here): leaving the silent broker must not wait for it
RECOVERY_BOUND_S = 8.0
GROUP_KEY, TRANSACTION_KEY = 0, 1


@pytest.fixture
def networks(mock_cluster: MockCluster) -> Iterator[Callable[..., NetworkClient]]:
    made: list[NetworkClient] = []

    def make(**settings: Any) -> NetworkClient:
        settings = {"bootstrap_servers": mock_cluster.bootstrap_servers, "transactional_id": "t-grey",
                    "request_timeout_ms": 30_000, **settings}
        made.append(NetworkClient(ProducerConfig(**settings)))
        return made[-1]

    yield make
    for net in made:
        net.close()


def pump(net: NetworkClient, until: Callable[[], bool], timeout: float = RECOVERY_BOUND_S) -> None:
    """Play the network thread until ``until()``; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "condition not reached within the test's bound"
        net.maintain()
        net.poll(0.02)


def connect(net: NetworkClient, *nodes: int) -> None:
    pump(net, lambda: net.bootstrapped)

    def connected() -> bool:
        for node in nodes:
            net.ensure_connecting(node)
        return all(net.is_ready(node) for node in nodes)

    pump(net, connected)


def asked_elsewhere(cluster: MockCluster, key: str, not_at: int, since: int) -> bool:
    return any(e.api == "FindCoordinator" and e.broker_id != not_at
               and key in (e.fields.get("coordinator_keys") or [e.fields.get("key")])
               for e in cluster.request_log[since:])


def offset_fetch(group: str) -> OffsetFetchRequest:
    return OffsetFetchRequest(version=7, group_id=group, topics=None, require_stable=False)


def test_a_coordinator_request_fails_naming_the_new_coordinator_once_the_silent_one_is_fenced(
        mock_cluster: MockCluster, networks: Callable[..., NetworkClient]) -> None:
    net = networks()
    group = "grey-net-group"
    coordinator = mock_cluster.coordinator_for(group, key_type="group")
    connect(net, *mock_cluster.broker_ids)
    frozen_at = mock_cluster.requests.next_seq()
    mock_cluster.freeze_broker(coordinator)
    future = net.send_to_coordinator(coordinator, offset_fetch(group), GROUP_KEY, group)
    # overdue: other brokers are asked, and while they name the frozen broker the request waits for it
    pump(net, lambda: asked_elsewhere(mock_cluster, group, coordinator, frozen_at))
    pump(net, lambda: sum(e.api == "FindCoordinator" for e in mock_cluster.request_log[frozen_at:]) >= 2)
    assert not future.is_done
    fenced = time.monotonic()
    mock_cluster.fence_broker(coordinator)
    pump(net, lambda: future.is_done, timeout=2.0)  # a probe every 0.25 s
    assert time.monotonic() - fenced < 2.0
    assert isinstance(future.exception, CoordinatorMoved)
    new = mock_cluster.coordinator_for(group, key_type="group")
    assert (future.exception.node_id, future.exception.key) == (new, group)
    # the frozen broker is silent, and passed over for requests any broker can answer
    assert net.silent(coordinator)
    assert all(net.least_loaded_node() != coordinator for _ in range(20))
    # it wakes up: its late answer is read on the same connection; the broker is still passed over for a
    # few seconds (what it answers first may come from its state before the fence), then serves again
    thawed_at = mock_cluster.requests.next_seq()
    mock_cluster.thaw_broker(coordinator)
    late = mock_cluster.wait_for_request(lambda e: e.api == "OffsetFetch", since=thawed_at)
    assert (late.broker_id, late.error_codes) == (coordinator, (16,))  # NOT_COORDINATOR
    pump(net, lambda: net.in_flight_count(coordinator) == 0)
    assert net.silent(coordinator)
    pump(net, lambda: not net.silent(coordinator))
    assert net.has_connection(coordinator) and net.is_ready(coordinator)
    answer = net.send(coordinator, FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=[group]))
    pump(net, lambda: answer.is_done)
    assert answer.succeeded()


def test_a_coordinator_that_is_only_slow_keeps_its_request(
        mock_cluster: MockCluster, networks: Callable[..., NetworkClient]) -> None:
    """Unanswered for seconds while every other broker still names it: the request is answered when the
    coordinator is, never given up (the cluster has not moved on)."""
    net = networks()
    group = "grey-net-slow"
    coordinator = mock_cluster.coordinator_for(group, key_type="group")
    connect(net, *mock_cluster.broker_ids)
    frozen_at = mock_cluster.requests.next_seq()
    mock_cluster.freeze_broker(coordinator)
    future = net.send_to_coordinator(coordinator, offset_fetch(group), GROUP_KEY, group)
    pump(net, lambda: sum(e.api == "FindCoordinator" for e in mock_cluster.request_log[frozen_at:]) >= 4)
    assert not future.is_done and not net.silent(coordinator)
    mock_cluster.thaw_broker(coordinator)
    pump(net, lambda: future.is_done)
    assert future.succeeded() and future.value.error_code == 0


def test_a_lookup_a_silent_broker_leaves_unanswered_fails_so_that_another_broker_is_asked(
        mock_cluster: MockCluster, networks: Callable[..., NetworkClient]) -> None:
    net = networks()
    frozen = mock_cluster.broker_ids[-1]
    connect(net, *mock_cluster.broker_ids)
    mock_cluster.freeze_broker(frozen)
    sent = time.monotonic()
    future = net.send_anywhere(frozen, FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=["g"]))
    pump(net, lambda: future.is_done)
    assert 0.9 < time.monotonic() - sent < 2.0  # a second, well under request_timeout_ms
    assert isinstance(future.exception, BrokerSilent)
    assert net.silent(frozen)
    assert all(net.least_loaded_node() != frozen for _ in range(20))


def test_a_lookup_the_only_broker_leaves_unanswered_waits_for_it() -> None:
    """With nobody else to ask, a lookup waits for the one broker it can go to (its request timeout
    still bounds it)."""
    with MockCluster(num_brokers=1) as single:
        net = NetworkClient(ProducerConfig(bootstrap_servers=single.bootstrap_servers,
                                           transactional_id="t-grey-single", request_timeout_ms=30_000))
        try:
            connect(net, 1)
            frozen_at = time.monotonic()
            single.freeze_broker(1)
            lookup = FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=["g"])
            future = net.send_anywhere(1, lookup)
            pump(net, lambda: time.monotonic() - frozen_at > 2.0)
            assert not future.is_done
            single.thaw_broker(1)
            pump(net, lambda: future.is_done)
            assert future.succeeded()
        finally:
            net.close()


def test_a_group_member_keeps_its_place_through_its_coordinators_freeze(mock_cluster: MockCluster) -> None:
    """The member's heartbeats reach the new coordinator within a couple of seconds of the fence -
    not after request_timeout_ms - so it stays in its generation with its partitions."""
    mock_cluster.create_topic("t", partitions=2)
    group = "grey-member"
    member = PolledMember(mock_cluster, group, "a", session_timeout_ms=30_000, max_poll_interval_ms=60_000,
                          connection={"request_timeout_ms": 30_000})
    try:
        member.wait_until("in the group with both partitions", lambda: len(member.assignment) == 2)
        generation, member_id = member.generation, member.member_id
        coordinator = mock_cluster.coordinator_for(group, key_type="group")
        frozen_at = mock_cluster.requests.next_seq()
        mock_cluster.freeze_broker(coordinator)
        mock_cluster.wait_for_request(
            lambda e: e.api == "FindCoordinator" and e.broker_id != coordinator
            and group in (e.fields.get("coordinator_keys") or [e.fields.get("key")]),
            timeout=RECOVERY_BOUND_S, since=frozen_at)
        fenced_at = mock_cluster.requests.next_seq()
        mock_cluster.fence_broker(coordinator)
        new = mock_cluster.coordinator_for(group, key_type="group")
        mock_cluster.wait_for_request(
            lambda e: e.api == "Heartbeat" and e.broker_id == new and not e.error_codes,
            timeout=3.0, since=fenced_at)
        assert (member.generation, member.member_id) == (generation, member_id)
        assert member.hooks.kinds() == ["assign"]  # never revoked nor lost
    finally:
        mock_cluster.clear_faults()
        member.stop()


def test_an_admin_call_answers_from_the_new_coordinator_once_the_silent_one_is_fenced(
        mock_cluster: MockCluster) -> None:
    txn_id = "tx-grey-admin"
    producer = TransactionalProducer(bootstrap_servers=mock_cluster.bootstrap_servers,
                                     transactional_id=txn_id, max_block_ms=10_000)
    try:
        producer.init_transactions()
    finally:
        producer.close(5)
    coordinator = mock_cluster.coordinator_for(txn_id)
    bootstrap = mock_cluster.bootstrap_servers
    with TransactionsAdmin(bootstrap_servers=bootstrap, request_timeout_ms=30_000) as admin:
        admin.describe_transactions([txn_id])  # connected to every broker it needs
        mock_cluster.freeze_broker(coordinator, fence_after_s=1.5)  # the controller fences it 1.5 s on
        started = time.monotonic()
        described = admin.describe_transactions([txn_id])
        assert time.monotonic() - started < RECOVERY_BOUND_S
    assert described[txn_id].coordinator_id == mock_cluster.coordinator_for(txn_id) != coordinator
    assert described[txn_id].state == "Empty"
