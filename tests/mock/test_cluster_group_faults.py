"""MockCluster's consumer-group fault injection: ``force_rebalance`` and ``remove_group_member``.

What a user testing their consumer relies on: forcing a rebalance makes every kafka-python member
rejoin (a new generation) and the partitions stay covered exactly once; removing a member makes it
learn UNKNOWN_MEMBER_ID, rejoin under a new member id, and the group ends up balanced again.
The members and the tracker come from test_consumer_group.py (kafka-python consumers on threads).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaProducer

from tests.mock.test_consumer_group import (
    PARTITIONS,
    PER_PARTITION,
    REBALANCE_IN_PROGRESS,
    TOPIC,
    UNKNOWN_MEMBER_ID,
    WAIT_S,
    KafkaPythonMember,
    Tracker,
)
from txnproducer.testing import MockCluster
from txnproducer.testing.request_log import RequestLogEntry


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3) as mock:
        mock.create_topic(TOPIC, partitions=PARTITIONS)
        producer = KafkaProducer(bootstrap_servers=mock.bootstrap_servers)
        for partition in range(PARTITIONS):
            for i in range(PER_PARTITION):
                producer.send(TOPIC, value=b"%d-%d" % (partition, i), partition=partition)
        producer.flush(timeout=10)
        producer.close(timeout=5)
        yield mock


@pytest.fixture
def members() -> Iterator[list[KafkaPythonMember]]:
    started: list[KafkaPythonMember] = []
    yield started
    for member in started:
        member.stop()


def _member_ids(cluster: MockCluster, group: str) -> dict[str, str]:
    """client id -> member id, as the coordinator sees the group now."""
    with cluster.state.lock:
        description = cluster.state.groups.describe(group)
    assert description is not None
    return {m.client_id: m.member_id for m in description.members}


def _generation(cluster: MockCluster, group: str) -> int:
    with cluster.state.lock:
        description = cluster.state.groups.describe(group)
    assert description is not None
    return description.generation_id


def _wait_synced(cluster: MockCluster, group: str, generation: int, member_ids: set[str], since: int) -> None:
    """Wait until each of ``member_ids`` got a successful SyncGroup answer for ``generation``."""
    pending = set(member_ids)

    def synced(e: RequestLogEntry) -> bool:
        return (e.api == "SyncGroup" and not e.error_codes and e.fields.get("group_id") == group
                and e.fields.get("generation_id") == generation and e.fields.get("member_id") in pending)

    while pending:
        entry = cluster.wait_for_request(synced, timeout=WAIT_S, since=since)
        pending.discard(entry.fields["member_id"])
        since = entry.seq + 1


def _two_members(cluster: MockCluster, group: str, tracker: Tracker,
                 members: list[KafkaPythonMember]) -> None:
    members.append(KafkaPythonMember(cluster, group, "a", tracker))
    members.append(KafkaPythonMember(cluster, group, "b", tracker))
    tracker.wait_for("a and b split the partitions", lambda: tracker.balanced({"a", "b"}))
    _wait_synced(cluster, group, _generation(cluster, group), set(_member_ids(cluster, group).values()), 0)


def test_force_rebalance_makes_every_member_rejoin(
        cluster: MockCluster, members: list[KafkaPythonMember]) -> None:
    group = "forced"
    tracker = Tracker()
    _two_members(cluster, group, tracker, members)
    before = _member_ids(cluster, group)
    generation = _generation(cluster, group)
    since = cluster.requests.next_seq()

    cluster.force_rebalance(group)

    # both members are told REBALANCE_IN_PROGRESS (by a Heartbeat or by an OffsetCommit, whichever
    # they send first: Kafka answers both so), rejoin with the same member ids, and sync
    for member_id in before.values():
        cluster.wait_for_request(
            lambda e, m=member_id: e.api in ("Heartbeat", "OffsetCommit")  # type: ignore[misc]
            and e.fields.get("member_id") == m and REBALANCE_IN_PROGRESS in e.error_codes,
            timeout=WAIT_S, since=since)
    _wait_synced(cluster, group, generation + 1, set(before.values()), since)
    assert _member_ids(cluster, group) == before
    tracker.wait_for("a and b still split the partitions", lambda: tracker.balanced({"a", "b"}))
    cluster.force_rebalance("no-such-group")  # no effect, no error


def test_removed_member_gets_unknown_member_id_and_rejoins(
        cluster: MockCluster, members: list[KafkaPythonMember]) -> None:
    group = "removed"
    tracker = Tracker()
    _two_members(cluster, group, tracker, members)
    before = _member_ids(cluster, group)
    since = cluster.requests.next_seq()

    assert cluster.remove_group_member(group, before["b"]) is True
    assert set(_member_ids(cluster, group)) == {"a"}  # gone at once, as after a session timeout

    cluster.wait_for_request(
        lambda e: e.fields.get("member_id") == before["b"] and UNKNOWN_MEMBER_ID in e.error_codes,
        timeout=WAIT_S, since=since)
    # b rejoins under a new member id; a keeps its id; both sync in the final generation
    rejoined = cluster.wait_for_request(
        lambda e: e.api == "SyncGroup" and not e.error_codes and e.fields.get("group_id") == group
        and e.fields.get("member_id") not in before.values(), timeout=WAIT_S, since=since)
    generation = rejoined.fields["generation_id"]
    _wait_synced(cluster, group, generation, {before["a"]}, since)
    after = _member_ids(cluster, group)
    assert after["a"] == before["a"] and after["b"] != before["b"]
    # later generations are possible: a member repaired by rescue_lost_join (see
    # test_consumer_group.py) rejoins once more, under the same member id
    assert _generation(cluster, group) >= generation
    tracker.wait_for("a and b split the partitions again", lambda: tracker.balanced({"a", "b"}))
    assert _member_ids(cluster, group) == after

    assert cluster.remove_group_member(group, before["b"]) is False  # not a member any more
    assert cluster.remove_group_member("no-such-group", "m") is False
