"""GroupMember under injected errors, request by request, against the MockCluster.

What a user relies on: every error the coordinator can answer is handled as the Java client handles
it - retried (after a backoff, or at once) until the member is in the group, or raised as the typed
error that tells the owner to stop (FencedInstanceIdError, GroupAuthorizationError, a FatalError) -
and a member dropped by a heartbeat error runs the lost hook before it rejoins. Every wait stays
within the caller's deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kafka.structs import TopicPartition

from tests._support.group_members import WAIT_S, PolledMember, make_member, split_evenly
from txnproducer import errors
from txnproducer._internal.group import GroupMember
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster

TOPIC = "t"
PARTITIONS = 4


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=2) as mock:
        mock.create_topic(TOPIC, partitions=PARTITIONS)
        yield mock


class Hooks:
    def __init__(self) -> None:
        self.kinds: list[str] = []

    def on_revoke(self, partitions: frozenset[TopicPartition]) -> None:
        self.kinds.append("revoke")

    def on_assign(self, partitions: frozenset[TopicPartition]) -> None:
        self.kinds.append("assign")

    def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self.kinds.append("lost")


def join(member: GroupMember) -> None:
    deadline = time.monotonic() + WAIT_S
    while not member.poll(time.monotonic() + 0.2):
        assert time.monotonic() < deadline, "the member did not join"


# (api, injected code, how many times) -> the member joins anyway
RETRIED = [
    ("FindCoordinator", ec.COORDINATOR_NOT_AVAILABLE, 2),
    ("FindCoordinator", ec.COORDINATOR_LOAD_IN_PROGRESS, 1),
    ("JoinGroup", ec.COORDINATOR_LOAD_IN_PROGRESS, 2),
    ("JoinGroup", ec.COORDINATOR_NOT_AVAILABLE, 1),
    ("JoinGroup", ec.NOT_COORDINATOR, 1),
    ("JoinGroup", ec.REBALANCE_IN_PROGRESS, 2),
    ("JoinGroup", ec.UNKNOWN_MEMBER_ID, 1),
    ("SyncGroup", ec.REBALANCE_IN_PROGRESS, 1),
    ("SyncGroup", ec.ILLEGAL_GENERATION, 1),
    ("SyncGroup", ec.UNKNOWN_MEMBER_ID, 1),
    ("SyncGroup", ec.NOT_COORDINATOR, 1),
    ("SyncGroup", ec.COORDINATOR_NOT_AVAILABLE, 1),
]


@pytest.mark.parametrize(("api", "code", "count"), RETRIED,
                         ids=[f"{a}-{ec.error_name(c)}" for a, c, _ in RETRIED])
def test_join_errors_are_retried_until_the_member_is_in(cluster: MockCluster, api: str, code: int,
                                                        count: int) -> None:
    cluster.inject_error(api, code, count=count)
    hooks = Hooks()
    member = make_member(cluster, "retried", "a", hooks)
    try:
        member.subscribe([TOPIC])
        join(member)
        assert len(member.assignment()) == PARTITIONS and hooks.kinds[-1] == "assign"
        answered = [e for e in cluster.request_log if e.api == api and e.injected]
        assert [e.error_codes for e in answered] == [(code,)] * count
    finally:
        member.close(5)


FATAL = [
    ("FindCoordinator", ec.GROUP_AUTHORIZATION_FAILED, errors.GroupAuthorizationError),
    ("JoinGroup", ec.GROUP_AUTHORIZATION_FAILED, errors.GroupAuthorizationError),
    ("JoinGroup", ec.FENCED_INSTANCE_ID, errors.FencedInstanceIdError),
    ("JoinGroup", ec.INCONSISTENT_GROUP_PROTOCOL, errors.FatalError),
    ("JoinGroup", ec.INVALID_SESSION_TIMEOUT, errors.FatalError),
    ("JoinGroup", ec.GROUP_MAX_SIZE_REACHED, errors.FatalError),
    ("SyncGroup", ec.GROUP_AUTHORIZATION_FAILED, errors.GroupAuthorizationError),
    ("SyncGroup", ec.FENCED_INSTANCE_ID, errors.FencedInstanceIdError),
]


@pytest.mark.parametrize(("api", "code", "error_class"), FATAL,
                         ids=[f"{a}-{ec.error_name(c)}" for a, c, _ in FATAL])
def test_join_errors_that_end_the_member_are_raised_typed(cluster: MockCluster, api: str, code: int,
                                                          error_class: type[Exception]) -> None:
    cluster.inject_error(api, code)
    member = make_member(cluster, "fatal", "a", Hooks(), group_instance_id="a-1")
    try:
        member.subscribe([TOPIC])
        started = time.monotonic()
        with pytest.raises(error_class, match="'fatal'") as raised:
            join(member)
        assert raised.value.error_code == code  # type: ignore[attr-defined]
        assert time.monotonic() - started < WAIT_S / 2  # at once, not after a timeout
    finally:
        member.close(5)


@pytest.fixture
def stable(cluster: MockCluster) -> Iterator[PolledMember]:
    member = PolledMember(cluster, "beats", "a", group_instance_id=None)
    member.wait_until("a owns every partition", lambda: split_evenly([member], TOPIC, PARTITIONS))
    yield member
    member.stop(leave_group=False, timeout=2)


@pytest.mark.parametrize(("code", "after", "same_member_id"), [
    (ec.REBALANCE_IN_PROGRESS, ["assign", "revoke", "assign"], True),  # a rebalance: revoked
    (ec.ILLEGAL_GENERATION, ["assign", "lost", "assign"], True),  # dropped: lost; the member id stays valid
    (ec.UNKNOWN_MEMBER_ID, ["assign", "lost", "assign"], False),  # dropped: lost; a new member id
], ids=["REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"])
def test_heartbeat_errors_rejoin_revoking_or_losing_the_partitions(
        cluster: MockCluster, stable: PolledMember, code: int, after: list[str],
        same_member_id: bool) -> None:
    first_id = stable.member_id
    since = cluster.requests.next_seq()
    cluster.inject_error("Heartbeat", code)
    stable.wait_until("the member rejoined", lambda: stable.hooks.kinds() == after)
    assert len(stable.assignment) == PARTITIONS
    rejoin = next(e for e in cluster.request_log[since:] if e.api == "JoinGroup")
    assert (rejoin.fields.get("member_id") == first_id) is same_member_id


def test_a_heartbeat_not_coordinator_rediscovers_it_without_a_rebalance(cluster: MockCluster,
                                                                       stable: PolledMember) -> None:
    generation = stable.generation
    since = cluster.requests.next_seq()
    cluster.inject_error("Heartbeat", ec.NOT_COORDINATOR)
    cluster.wait_for_request(lambda e: e.api == "FindCoordinator", timeout=WAIT_S, since=since)
    cluster.wait_for_request(lambda e: e.api == "Heartbeat" and not e.error_codes, timeout=WAIT_S,
                             since=since)
    assert stable.generation == generation and stable.hooks.kinds() == ["assign"]


@pytest.mark.parametrize("code", [ec.GROUP_AUTHORIZATION_FAILED, ec.UNKNOWN_SERVER_ERROR])
def test_other_heartbeat_errors_are_retried_and_the_member_keeps_its_partitions(
        cluster: MockCluster, stable: PolledMember, code: int) -> None:
    """As Java's HeartbeatThread: only FENCED_INSTANCE_ID ends a member from a heartbeat; any other
    error is a failed heartbeat, retried after the backoff (the 4.x coordinator answers
    UNKNOWN_SERVER_ERROR for failures of its own). Both used to end the member, its partitions lost."""
    generation = stable.generation
    since = cluster.requests.next_seq()
    cluster.inject_error("Heartbeat", code, count=2)
    cluster.wait_for_request(lambda e: e.api == "Heartbeat" and e.injected, timeout=WAIT_S, since=since)
    answered = cluster.wait_for_request(lambda e: e.api == "Heartbeat" and not e.injected, timeout=WAIT_S,
                                        since=since)
    refused = [e.error_codes for e in cluster.request_log[since:answered.seq] if e.api == "Heartbeat"]
    assert refused == [(code,)] * 2
    assert not answered.error_codes, "the member is still in its generation"
    assert stable.errors == [] and stable.generation == generation
    assert stable.hooks.kinds() == ["assign"] and len(stable.assignment) == PARTITIONS


@pytest.mark.parametrize(("code", "error_class"), [
    (ec.FENCED_INSTANCE_ID, errors.FencedInstanceIdError),
])
def test_heartbeat_errors_that_end_the_member_lose_its_partitions_and_raise(
        cluster: MockCluster, stable: PolledMember, code: int, error_class: type[Exception]) -> None:
    cluster.inject_error("Heartbeat", code)
    stable.wait_until("poll raised", lambda: bool(stable.errors), allow_errors=True)
    assert isinstance(stable.errors[0], error_class)
    assert stable.hooks.kinds() == ["assign", "lost"] and stable.assignment == frozenset()


def test_an_answer_the_member_cannot_process_fails_the_poll_instead_of_hanging(
        cluster: MockCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python's futures swallow what a callback raises; the member turns it into the round's
    failure, so poll raises a FatalError naming it instead of waiting for an answer forever."""
    from txnproducer._internal.group.classic import join_group

    def broken(*_args: object) -> None:
        raise KeyError("something this member did not expect")

    monkeypatch.setattr(join_group, "read_response", broken)
    member = make_member(cluster, "broken", "a", Hooks())
    try:
        member.subscribe([TOPIC])
        with pytest.raises(errors.FatalError, match=r"could not process the JoinGroupResponse.*not expect"):
            join(member)
    finally:
        member.close(5)


def test_a_leave_group_error_does_not_hold_up_close(cluster: MockCluster) -> None:
    member = make_member(cluster, "leaving", "a", Hooks())
    member.subscribe([TOPIC])
    join(member)
    cluster.inject_error("LeaveGroup", ec.UNKNOWN_MEMBER_ID)
    started = time.monotonic()
    member.close(5)
    assert time.monotonic() - started < 5
    assert [e.error_codes for e in cluster.request_log if e.api == "LeaveGroup"] == [(ec.UNKNOWN_MEMBER_ID,)]
    with pytest.raises(errors.ClosedError):
        member.poll(time.monotonic() + 1)


@pytest.mark.parametrize("code", [ec.COORDINATOR_LOAD_IN_PROGRESS, ec.NOT_COORDINATOR,
                                  ec.COORDINATOR_NOT_AVAILABLE])
def test_offset_fetch_errors_are_retried_within_the_timeout(cluster: MockCluster, code: int) -> None:
    """(UNSTABLE_OFFSET_COMMIT comes per partition, from a real pending transaction: test_group_member.py.)"""
    member = make_member(cluster, "fetching", "a", Hooks())
    try:
        member.subscribe([TOPIC])
        join(member)
        cluster.inject_error("OffsetFetch", code, count=2)
        assert member.fetch_committed([TopicPartition(TOPIC, 0)], timeout=10) == {}
        fetches = [e for e in cluster.request_log if e.api == "OffsetFetch"]
        assert len(fetches) == 3 and all(e.version == 9 for e in fetches)
    finally:
        member.close(5)


def test_an_offset_fetch_refused_by_the_acls_raises(cluster: MockCluster) -> None:
    member = make_member(cluster, "fetching", "a", Hooks())
    try:
        member.subscribe([TOPIC])
        join(member)
        cluster.inject_error("OffsetFetch", ec.GROUP_AUTHORIZATION_FAILED)
        with pytest.raises(errors.GroupAuthorizationError, match="'fetching'"):
            member.fetch_committed([TopicPartition(TOPIC, 0)], timeout=10)
    finally:
        member.close(5)


def test_every_wait_ends_at_its_deadline_when_no_broker_answers(cluster: MockCluster) -> None:
    member = make_member(cluster, "frozen", "a", Hooks())
    try:
        member.subscribe([TOPIC])
        join(member)
        cluster.black_hole()
        cluster.force_rebalance("frozen")  # nobody will answer the rejoin
        started = time.monotonic()
        while time.monotonic() - started < 1.0:
            t0 = time.monotonic()
            member.poll(t0 + 0.2)
            assert time.monotonic() - t0 < 0.2 + 1.0  # its deadline (plus room for a loaded machine)
        t0 = time.monotonic()
        with pytest.raises(errors.TimeoutError, match="within the timeout"):
            member.fetch_committed([TopicPartition(TOPIC, 0)], timeout=0.3)
        assert time.monotonic() - t0 < 0.3 + 1.0
    finally:
        cluster.black_hole(enabled=False)
        t0 = time.monotonic()
        member.close(1)
        assert time.monotonic() - t0 < 1 + 1.0
