"""kafka-python 3.0.12 members that fall out of their group, and the guard that brings them back.

What the kafka-python members of the mock tier rely on (tests/_support/kafka_python_groups.py;
the TransactionalProcessor relied on it until it moved onto our own group member): a member whose
join failed after a subscription change must not stay idle forever. kafka-python's
``join_group_async`` returns "joined" when the failed attempt had cleared the only reason to rejoin;
the member is then REBALANCING without heartbeats. The mock makes that happen on purpose: the
follower changes its subscription and its next JoinGroup is answered REBALANCE_IN_PROGRESS.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.structs import TopicPartition

from tests._support.kafka_python_groups import rescue_lost_join
from txnproducer.testing import MockCluster

REBALANCE_IN_PROGRESS = 27
WAIT_S = 20.0
GROUP = "rejoin"


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1) as mock:
        mock.create_topic("a", partitions=2)
        mock.create_topic("b", partitions=2)
        yield mock


def _consumer(cluster: MockCluster, client_id: str) -> Any:
    return KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=GROUP, client_id=client_id,
                         session_timeout_ms=3000, heartbeat_interval_ms=100, max_poll_interval_ms=4000,
                         enable_auto_commit=False)


def _poll_until(consumer: Any, what: str, done: Callable[[], bool], rescues: list[bool]) -> None:
    """Drive ``consumer`` (poll + guard) until ``done()``; fail after WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        consumer.poll(timeout_ms=200)
        rescues.append(rescue_lost_join(consumer))


def test_member_whose_join_failed_after_a_subscription_change_rejoins(cluster: MockCluster) -> None:
    leader = _consumer(cluster, "L")
    follower = _consumer(cluster, "F")
    stop = threading.Event()

    def run_leader() -> None:
        while not stop.is_set():
            leader.poll(timeout_ms=200)
            rescue_lost_join(leader)

    leader.subscribe(topics=["a", "b"])
    leader.topics()
    thread = threading.Thread(target=run_leader, name="leader", daemon=True)
    thread.start()
    try:
        rescues: list[bool] = []
        follower.subscribe(topics=["a"])
        follower.topics()
        _poll_until(follower, "F owns a partition of a", lambda: bool(follower.assignment()), rescues)

        since = cluster.requests.next_seq()
        cluster.inject_error("JoinGroup", REBALANCE_IN_PROGRESS, count=1)
        follower.subscribe(topics=["a", "b"])  # the only reason to rejoin: need_rejoin() sees it
        rescues.clear()
        _poll_until(follower, "F owns a partition of b",
                    lambda: any(tp.topic == "b" for tp in follower.assignment()), rescues)

        refused = [e for e in cluster.request_log if e.seq >= since and e.api == "JoinGroup"
                   and REBALANCE_IN_PROGRESS in e.error_codes]
        assert refused, "the injected REBALANCE_IN_PROGRESS was never answered"
        assert any(rescues), "F rejoined without the guard: the scenario did not happen"
        with cluster.state.lock:
            description = cluster.state.groups.describe(GROUP)
        assert description is not None
        assert sorted(m.client_id for m in description.members) == ["F", "L"]
        assert follower.assignment() & {TopicPartition("b", 0), TopicPartition("b", 1)}
    finally:
        stop.set()
        thread.join(WAIT_S)
        follower.close(timeout_ms=2000)
        leader.close(timeout_ms=2000)
