"""The two ways kafka-python 3.0.12 leaves a member outside its group for good (the scenarios of
test_kafka_python_rejoin.py, which ``tests/_support/kafka_python_groups.py`` repairs), played
against our GroupMember: neither can happen to it.

1. *A finished join nobody applies*: the caller's ``poll`` returns while a JoinGroup is held by the
   coordinator, the round then finishes - our member keeps the round (Java's ``joinFuture``) and the
   next ``poll`` applies it, whatever changed meanwhile.
2. *A join abandoned after an error*: a rejoin started only by a subscription change fails
   (REBALANCE_IN_PROGRESS) - our member asks to rejoin again after every failed round (Java's
   ``requestRejoin`` in ``joinGroupIfNeeded``), so it retries until it is in.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from kafka.structs import TopicPartition

from tests._support.group_members import WAIT_S, PolledMember, RecordingHooks, make_member, wait_until
from txnproducer.testing import MockCluster

REBALANCE_IN_PROGRESS = 27


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1) as mock:
        mock.create_topic("a", partitions=2)
        mock.create_topic("b", partitions=2)
        yield mock


def test_a_join_that_finishes_after_poll_returned_is_applied_by_the_next_poll(cluster: MockCluster) -> None:
    hooks = RecordingHooks(cluster, threading.Condition())
    member = make_member(cluster, "late", "m", hooks)
    try:
        member.subscribe(["a"])
        deadline = time.monotonic() + WAIT_S
        while not member.poll(time.monotonic() + 0.2):
            assert time.monotonic() < deadline, "the member did not join"
        first = member.group_metadata().generation_id

        since = cluster.requests.next_seq()
        cluster.delay_responses("JoinGroup", 500)  # the answer comes long after the caller's deadline
        cluster.force_rebalance("late")
        while "revoke" not in hooks.kinds():  # the heartbeat learns of it; a poll starts the rejoin
            assert time.monotonic() < deadline, "the member did not start rejoining"
            member.poll(time.monotonic() + 0.05)
        assert not member.poll(time.monotonic() + 0.05)  # returns at its deadline: the round goes on

        # nobody polls; the round finishes on the member's own thread
        cluster.wait_for_request(lambda e: e.api == "SyncGroup", timeout=WAIT_S, since=since)
        assert member.group_metadata().generation_id == first  # not applied yet: that is poll's job

        assert member.poll(time.monotonic() + 0.05)
        assert member.group_metadata().generation_id == first + 1
        assert hooks.kinds() == ["assign", "revoke", "assign"]
        assert member.assignment() == {TopicPartition("a", 0), TopicPartition("a", 1)}
        joins = [e for e in cluster.request_log[since:] if e.api == "JoinGroup"]
        assert len(joins) == 1  # the round was kept, not sent again
        cluster.wait_for_request(  # and the member lives on in the new generation
            lambda e: e.api == "Heartbeat" and e.fields.get("generation_id") == first + 1
            and not e.error_codes, timeout=WAIT_S, since=since)
    finally:
        member.close(5)


def test_a_rejoin_refused_after_a_subscription_change_is_retried(cluster: MockCluster) -> None:
    cond = threading.Condition()
    leader = PolledMember(cluster, "rejoin", "L", topics=["a", "b"], cond=cond)
    follower = PolledMember(cluster, "rejoin", "F", topics=["a"], cond=cond)
    members = [leader, follower]
    try:
        everything = {TopicPartition(t, p) for t in ("a", "b") for p in (0, 1)}
        wait_until(cond, members, "L and F share a generation and F owns a partition of a",
                   lambda: bool(follower.assignment) and leader.generation == follower.generation
                   and leader.assignment | follower.assignment == everything)
        follower_id = follower.member_id

        since = cluster.requests.next_seq()
        cluster.inject_error("JoinGroup", REBALANCE_IN_PROGRESS, count=1)
        follower.member.subscribe(["a", "b"])  # the only reason to rejoin
        wait_until(cond, members, "F owns a partition of b, and L and F everything between them",
                   lambda: any(tp.topic == "b" for tp in follower.assignment)
                   and leader.assignment | follower.assignment == everything)

        refused = [e for e in cluster.request_log[since:] if e.api == "JoinGroup" and e.injected]
        assert [e.fields.get("member_id") for e in refused] == [follower_id]
        with cluster.state.lock:
            description = cluster.state.groups.describe("rejoin")
        assert description is not None and sorted(m.client_id for m in description.members) == ["F", "L"]
    finally:
        for member in members:
            member.stop(timeout=2)
