"""Every KIP-848 error code as TransactionalConsumer (``group_protocol="consumer"``) meets it, against
MockCluster: what Kafka answers for real (a full group, an assignor or pattern it refuses, an instance id
still in use, a broker without the protocol) and what fault injection makes it answer.

What a user relies on: a code no retry can fix is a documented typed error raised by ``poll()`` (after
the lost hook ran for what the member owned), whose message says what happened and what to do; a
coordinator that moves, loads or times out is ridden out; a fenced member loses its partitions and
rejoins; a misconfiguration is a ConfigError naming the key before anything is sent.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.consumer_protocol import describe
from txnproducer import (
    ConfigError,
    FatalError,
    FencedInstanceIdError,
    GroupAuthorizationError,
    GroupMaxSizeReachedError,
    InvalidRegularExpressionError,
    SubscriptionPattern,
    TopicPartition,
    TransactionalConsumer,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
)
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster

TOPIC = "orders"
ALL = frozenset(TopicPartition(TOPIC, p) for p in range(3))
WAIT_S = 15.0
FAST = {"group_protocol": "consumer", "retry_backoff_ms": 20, "retry_backoff_max_ms": 100,
        "request_timeout_ms": 5000, "fetch_max_wait_ms": 50, "auto_offset_reset": "earliest"}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    config = {"group.consumer.heartbeat.interval.ms": 100, "group.consumer.session.timeout.ms": 3000,
              "group.consumer.max.size": 2}
    with MockCluster(num_brokers=1, consumer_group_config=config) as mock:
        mock.create_topic(TOPIC, partitions=3)
        yield mock


class Lost:
    def __init__(self) -> None:
        self.lost: list[frozenset[TopicPartition]] = []

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        pass

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        self.lost.append(frozenset(partitions))


def consumer(cluster: MockCluster, group: str, subscription: Any = TOPIC, listener: Any = None,
             **settings: Any) -> TransactionalConsumer:
    c = TransactionalConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                              **{**FAST, **settings})
    c.subscribe(subscription, listener=listener)
    return c


def poll_until(c: TransactionalConsumer, what: str, done: Any) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        c.poll(0.05)


def poll_until_raises(c: TransactionalConsumer, error: type[BaseException]) -> BaseException:
    deadline = time.monotonic() + WAIT_S
    with pytest.raises(error) as raised:
        while time.monotonic() < deadline:
            c.poll(0.05)
    return raised.value


@pytest.mark.parametrize(("code", "error", "words"), [
    (ec.GROUP_AUTHORIZATION_FAILED, GroupAuthorizationError, "grant this principal READ on the group"),
    (ec.INVALID_REQUEST, FatalError, "INVALID_REQUEST"),
    (ec.GROUP_MAX_SIZE_REACHED, GroupMaxSizeReachedError, "group.consumer.max.size"),
    (ec.UNSUPPORTED_ASSIGNOR, UnsupportedAssignorError, "group_remote_assignor"),
    (ec.INVALID_REGULAR_EXPRESSION, InvalidRegularExpressionError, "RE2/J"),
    (ec.FENCED_INSTANCE_ID, FencedInstanceIdError, "give each instance its own id"),
    (ec.UNSUPPORTED_VERSION, UnsupportedVersionError, "Kafka 4.0 or newer"),
    (ec.GROUP_ID_NOT_FOUND, FatalError, "GROUP_ID_NOT_FOUND"),
    (ec.UNKNOWN_SERVER_ERROR, FatalError, "UNKNOWN_SERVER_ERROR"),
])
def test_a_code_no_retry_fixes_is_a_typed_error_after_the_lost_hook(
        cluster: MockCluster, code: int, error: type[BaseException], words: str) -> None:
    listener = Lost()
    c = consumer(cluster, f"fatal-{code}", listener=listener)
    try:
        poll_until(c, "the member owns the partitions", lambda: c.assignment() == ALL)
        cluster.inject_error("ConsumerGroupHeartbeat", code)
        raised = poll_until_raises(c, error)
        assert getattr(raised, "error_code", None) == code
        assert words in str(raised)
        assert listener.lost == [ALL], "the partitions were lost before the error was raised"
        assert c.assignment() == set()
        with pytest.raises(error):  # and again, until the consumer is closed
            c.poll(0)
    finally:
        c.close(5)


@pytest.mark.parametrize("code", [ec.NOT_COORDINATOR, ec.COORDINATOR_NOT_AVAILABLE,
                                  ec.COORDINATOR_LOAD_IN_PROGRESS, ec.REQUEST_TIMED_OUT])
def test_a_coordinator_that_moves_loads_or_times_out_is_ridden_out(cluster: MockCluster, code: int) -> None:
    cluster.inject_error("ConsumerGroupHeartbeat", code, count=3)
    c = consumer(cluster, f"retried-{code}")
    try:
        poll_until(c, "the member owns the partitions", lambda: c.assignment() == ALL)
        injected = [e for e in cluster.request_log if e.api == "ConsumerGroupHeartbeat" and e.injected]
        assert len(injected) == 3
    finally:
        c.close(5)


def test_unknown_member_id_loses_the_partitions_and_rejoins(cluster: MockCluster) -> None:
    listener = Lost()
    c = consumer(cluster, "unknown", listener=listener)
    try:
        poll_until(c, "the member owns the partitions", lambda: c.assignment() == ALL)
        member_id = c.group_metadata().member_id
        cluster.inject_error("ConsumerGroupHeartbeat", ec.UNKNOWN_MEMBER_ID)
        poll_until(c, "the partitions were lost and taken back", lambda: listener.lost == [ALL]
                   and c.assignment() == ALL)
        assert c.group_metadata().member_id == member_id
    finally:
        c.close(5)


def test_what_kafka_answers_a_full_group_a_foreign_assignor_and_a_bad_pattern(cluster: MockCluster) -> None:
    first, second = consumer(cluster, "full"), consumer(cluster, "full")
    third = consumer(cluster, "full")
    bad_assignor = consumer(cluster, "assignor", group_remote_assignor="sticky")
    bad_pattern = consumer(cluster, "pattern", subscription=SubscriptionPattern("(?=orders).*"))
    try:
        poll_until(first, "the first two joined", lambda: (first.poll(0) or second.poll(0) or True)
                   and len(describe(cluster, "full").members) == 2)
        assert "maximum capacity of 2 members" in str(poll_until_raises(third, GroupMaxSizeReachedError))
        assert "'sticky'" in str(poll_until_raises(bad_assignor, UnsupportedAssignorError))
        assert "(?=orders).*" in str(poll_until_raises(bad_pattern, InvalidRegularExpressionError))
    finally:
        for c in (first, second, third, bad_assignor, bad_pattern):
            c.close(5)


def test_an_instance_id_still_in_use_is_retried_then_fatal(cluster: MockCluster) -> None:
    """UNRELEASED_INSTANCE_ID: retried for max_poll_interval_ms (a crashed predecessor's session may
    still run), then UnreleasedInstanceIdError."""
    running = consumer(cluster, "unreleased", group_instance_id="x")
    second = consumer(cluster, "unreleased", group_instance_id="x", max_poll_interval_ms=1500)
    try:
        poll_until(running, "the first instance owns the partitions", lambda: running.assignment() == ALL)
        started = time.monotonic()
        deadline = started + WAIT_S
        with pytest.raises(UnreleasedInstanceIdError, match="group_instance_id 'x'"):
            while time.monotonic() < deadline:
                second.poll(0.05)
                running.poll(0)  # stays in the group meanwhile
        assert time.monotonic() - started >= 1.4, "retried for max_poll_interval_ms first"
        refused = [e for e in cluster.request_log if ec.UNRELEASED_INSTANCE_ID in e.error_codes]
        assert len(refused) > 1
    finally:
        running.close(5)
        second.close(5)


@pytest.mark.parametrize(("caps", "words"), [
    ({68: (1, 0), 0: (0, 11)}, "older than Kafka 4.0"),
    ({68: (1, 0)}, "group.coordinator.rebalance.protocols"),
])
def test_a_broker_without_the_consumer_group_protocol_is_named(
        cluster: MockCluster, caps: dict[int, tuple[int, int]], words: str) -> None:
    cluster.set_broker_api_versions(1, caps)
    c = consumer(cluster, "old-broker")
    try:
        raised = poll_until_raises(c, UnsupportedVersionError)
        assert words in str(raised) and "group_protocol='classic'" in str(raised)
    finally:
        c.close(5)


def test_a_pattern_needs_heartbeat_v1(cluster: MockCluster) -> None:
    cluster.set_broker_api_versions(1, {68: (0, 0)})
    c = consumer(cluster, "v0", subscription=SubscriptionPattern("orders"))
    try:
        assert "v1" in str(poll_until_raises(c, UnsupportedVersionError))
    finally:
        c.close(5)


def test_a_member_that_stops_polling_leaves_and_its_next_poll_rejoins(cluster: MockCluster) -> None:
    listener = Lost()
    c = consumer(cluster, "slow", listener=listener, max_poll_interval_ms=400)
    try:
        poll_until(c, "the member owns the partitions", lambda: c.assignment() == ALL)
        since = cluster.requests.next_seq()
        deadline = time.monotonic() + WAIT_S
        while describe(cluster, "slow").members:  # not polling: the member leaves by itself
            assert time.monotonic() < deadline, "the member did not leave"
            since = cluster.wait_for_request(lambda e: e.api == "ConsumerGroupHeartbeat", since=since).seq + 1
        poll_until(c, "the partitions were lost and taken back", lambda: listener.lost == [ALL]
                   and c.assignment() == ALL)
    finally:
        c.close(5)


def test_settings_the_protocol_does_not_have_are_refused(cluster: MockCluster) -> None:
    with pytest.raises(ConfigError, match=r"session_timeout_ms \(session.timeout.ms\) cannot be set"):
        TransactionalConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="g",
                              group_protocol="consumer", session_timeout_ms=10_000)
    classic = TransactionalConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="g")
    try:
        with pytest.raises(ConfigError, match="group_protocol='consumer'"):
            classic.subscribe(SubscriptionPattern("orders"))
    finally:
        classic.close(1)
