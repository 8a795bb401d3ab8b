"""MockCluster's consumer-group fault injection: ``force_rebalance`` and ``remove_group_member``.

What a user testing their consumer relies on: forcing a rebalance makes every kafka-python member
rejoin (a new generation) and the partitions stay covered exactly once; removing a member makes it
learn UNKNOWN_MEMBER_ID, rejoin under a new member id, and the group ends up balanced again.
The members and the tracker come from test_consumer_group.py (kafka-python consumers on threads).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mock.test_consumer_group import (
    UNKNOWN_MEMBER_ID,
    WAIT_S,
    KafkaPythonMember,
    Tracker,
    running_members,
    seeded_cluster,
)
from txnproducer.testing import MockCluster
from txnproducer.testing.request_log import RequestLogEntry


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with seeded_cluster() as mock:
        yield mock


@pytest.fixture
def members() -> Iterator[list[KafkaPythonMember]]:
    with running_members() as started:
        yield started


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


def _wait_synced(cluster: MockCluster, group: str, generation: int, member_ids: set[str], since: int) -> int:
    """Wait until each of ``member_ids`` got a successful SyncGroup answer for ``generation`` or a
    later one (a member repaired by rescue_lost_join may rejoin once more); return the highest."""
    pending = set(member_ids)
    highest = generation

    def synced(e: RequestLogEntry) -> bool:
        return (e.api == "SyncGroup" and not e.error_codes and e.fields.get("group_id") == group
                and e.fields.get("generation_id", -1) >= generation and e.fields.get("member_id") in pending)

    start = since
    while pending:
        try:
            entry = cluster.wait_for_request(synced, timeout=WAIT_S, since=since)
        except TimeoutError:
            raise AssertionError(f"{sorted(pending)} never synced generation >= {generation}; "
                                 f"the group's requests since: {_story(cluster, group, start)}") from None
        pending.discard(entry.fields["member_id"])
        highest = max(highest, entry.fields["generation_id"])
        since = entry.seq + 1
    return highest


def _story(cluster: MockCluster, group: str, since: int) -> str:
    """The group's requests since ``since`` (api, member, generation, errors): what a failure shows."""
    lines = [f"{e.api}({e.fields.get('member_id')}, gen {e.fields.get('generation_id')})"
             f" -> {list(e.error_codes)}"
             for e in cluster.request_log[since:] if e.fields.get("group_id") == group]
    return "; ".join(lines[-40:])


def _two_members(cluster: MockCluster, group: str, tracker: Tracker,
                 members: list[KafkaPythonMember]) -> None:
    members.append(KafkaPythonMember(cluster, group, "a", tracker))
    members.append(KafkaPythonMember(cluster, group, "b", tracker))
    tracker.wait_for("a and b split the partitions", lambda: tracker.balanced({"a", "b"}))
    _wait_synced(cluster, group, _generation(cluster, group), set(_member_ids(cluster, group).values()), 0)


def test_force_rebalance_makes_every_member_rejoin(
        cluster: MockCluster, members: list[KafkaPythonMember]) -> None:
    """Outcome, not mechanism: how each member hears of the rebalance (a Heartbeat or OffsetCommit
    answered REBALANCE_IN_PROGRESS, or a rejoin of its own already under way) is kafka-python's
    business; the coordinator's answers are checked request by request in test_group_coordinator.py."""
    group = "forced"
    tracker = Tracker()
    _two_members(cluster, group, tracker, members)
    before = _member_ids(cluster, group)
    generation = _generation(cluster, group)
    since = cluster.requests.next_seq()

    cluster.force_rebalance(group)
    with cluster.state.lock:
        description = cluster.state.groups.describe(group)
    assert description is not None and description.state != "Stable"

    # both members rejoin with the same member ids and sync in a new generation
    _wait_synced(cluster, group, generation + 1, set(before.values()), since)
    assert _member_ids(cluster, group) == before
    assert _generation(cluster, group) > generation
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
    generation = _wait_synced(cluster, group, rejoined.fields["generation_id"], {before["a"]}, since)
    after = _member_ids(cluster, group)
    assert after["a"] == before["a"] and after["b"] != before["b"]
    assert _generation(cluster, group) >= generation
    tracker.wait_for("a and b split the partitions again", lambda: tracker.balanced({"a", "b"}))
    assert _member_ids(cluster, group) == after

    assert cluster.remove_group_member(group, before["b"]) is False  # not a member any more
    assert cluster.remove_group_member("no-such-group", "m") is False
