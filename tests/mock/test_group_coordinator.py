"""Handler-level tests of the MockCluster group coordinator (no sockets).

Requests go through the registered handlers exactly as the server calls them: encoded and decoded
at the request's version, handler called with the state lock held, response encoded and decoded at
the same version (so every field/version combination the handlers build is wire-checked).
Members that must block (JoinGroup, follower SyncGroup) run on threads; the tests synchronise on
the cluster condition and on futures, each wait bounded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from kafka.protocol.admin.groups import DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

from txnproducer.testing import handlers as gc_module
from txnproducer.testing.group_coordinator import GroupCoordinator, GroupState
from txnproducer.testing.handlers import RequestContext, lookup

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
UNSTABLE_OFFSET_COMMIT = 88

WAIT_S = 5.0
TOPIC = "orders"


class FakeState:
    """The parts of ClusterState the group coordinator and its handlers use."""

    def __init__(self, coordinator: int = 1) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.coordinator = coordinator
        self.topics: dict[str, object] = {TOPIC: object(), "payments": object()}
        self.settings: dict[str, object] = {}
        self.closed = False
        self.groups = GroupCoordinator(self)

    def now_ms(self) -> int:
        return int(time.monotonic() * 1000)

    def coordinator_for(self, key_type: int, key: str) -> int:
        assert key_type == 0
        return self.coordinator

    def notify_all(self) -> None:
        with self.cond:
            self.cond.notify_all()


@pytest.fixture
def state() -> FakeState:
    return FakeState()


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=4) as executor:
        yield executor


def call(state: FakeState, request: Any, version: int, client_id: str = "client", broker: int = 1) -> Any:
    """Send ``request`` at ``version`` through the wire codec and the registered handler."""
    wire = request.encode(version=version)
    decoded = type(request).decode(bytes(wire), version=version)
    ctx = RequestContext(broker, request.API_KEY, version, 7, client_id, 1)
    handler = lookup(request.API_KEY)
    assert handler is not None
    with state.lock:
        response = handler(state, ctx, decoded)
    encoded = response.encode(version=version)
    return type(response).decode(bytes(encoded), version=version)


def wait_until(state: FakeState, predicate: Callable[[], bool]) -> None:
    with state.cond:
        assert state.cond.wait_for(predicate, timeout=WAIT_S), "condition not reached in time"


# ---------------------------------------------------------------- request builders
def join_req(
    member_id: str = "",
    *,
    group: str = "g",
    session_ms: int = 10_000,
    rebalance_ms: int = 10_000,
    protocols: tuple[tuple[str, bytes], ...] = (("range", b"meta"),),
    instance_id: str | None = None,
    protocol_type: str = "consumer",
) -> Any:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type=protocol_type,
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
    )


def sync_req(
    member_id: str,
    generation: int,
    assignments: dict[str, bytes] | None = None,
    group: str = "g",
    instance_id: str | None = None,
) -> Any:
    return SyncGroupRequest(
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
            for m, a in (assignments or {}).items()
        ],
    )


def heartbeat(
    state: FakeState, member_id: str, generation: int, version: int = 4, instance_id: str | None = None
) -> int:
    request = HeartbeatRequest(
        group_id="g", generation_id=generation, member_id=member_id, group_instance_id=instance_id
    )
    return int(call(state, request, version).error_code)


def commit_req(generation: int, member_id: str, offsets: dict[tuple[str, int], int], group: str = "g") -> Any:
    topic_cls = OffsetCommitRequest.OffsetCommitRequestTopic
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            topic_cls.OffsetCommitRequestPartition(
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=3,
                committed_metadata="m",
            )
        )
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=None,
        topics=[topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


def commit_errors(response: Any) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def fetch(
    state: FakeState,
    version: int,
    partitions: list[tuple[str, int]] | None,
    *,
    group: str = "g",
    require_stable: bool = False,
) -> tuple[int, dict[tuple[str, int], tuple[int, int]]]:
    """OffsetFetch at ``version``: (group/top-level error, {tp: (offset, error)})."""
    if partitions is None:
        topics = None
        group_topics = None
    else:
        names = sorted({t for t, _ in partitions})
        topics = [
            OffsetFetchRequest.OffsetFetchRequestTopic(
                name=t, partition_indexes=[p for tt, p in partitions if tt == t]
            )
            for t in names
        ]
        group_topics = [
            OffsetFetchRequest.OffsetFetchRequestGroup.OffsetFetchRequestTopics(
                name=t, partition_indexes=[p for tt, p in partitions if tt == t]
            )
            for t in names
        ]
    request = OffsetFetchRequest(
        group_id=group,
        topics=topics,
        require_stable=require_stable,
        groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=group_topics)],
    )
    response = call(state, request, version)
    if version >= 8:
        (g,) = response.groups
        error, topics_out = g.error_code, g.topics
    else:
        error, topics_out = (response.error_code if version >= 2 else 0), response.topics
    return error, {
        (t.name, p.partition_index): (p.committed_offset, p.error_code)
        for t in topics_out
        for p in t.partitions
    }


def join_single(state: FakeState, version: int = 7, **kwargs: Any) -> Any:
    """Join a fresh member (doing the MEMBER_ID_REQUIRED round for v4+) and return the JoinGroup response."""
    first = call(state, join_req(**kwargs), version)
    if first.error_code == MEMBER_ID_REQUIRED:
        return call(state, join_req(first.member_id, **kwargs), version)
    return first


def stable_single(state: FakeState, **kwargs: Any) -> Any:
    """A one-member Stable group; returns the member's JoinGroup response."""
    joined = join_single(state, **kwargs)
    assert joined.error_code == NONE
    synced = call(state, sync_req(joined.member_id, joined.generation_id, {joined.member_id: b"A"}), 5)
    assert synced.error_code == NONE
    return joined


# ---------------------------------------------------------------- JoinGroup basics
def test_join_v4_plus_requires_member_id_then_elects_the_member_leader(state: FakeState) -> None:
    first = call(state, join_req(), 7, client_id="c1")
    assert first.error_code == MEMBER_ID_REQUIRED
    assert first.member_id.startswith("c1-")
    assert first.generation_id == -1

    joined = call(state, join_req(first.member_id), 7)
    assert joined.error_code == NONE
    assert joined.member_id == first.member_id
    assert joined.generation_id == 1
    assert joined.leader == first.member_id
    assert joined.protocol_type == "consumer"
    assert joined.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in joined.members] == [(first.member_id, b"meta")]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_join_before_v4_gets_a_member_id_at_once(state: FakeState, version: int) -> None:
    joined = call(state, join_req(), version)
    assert joined.error_code == NONE
    assert joined.member_id
    assert joined.generation_id == 1
    assert joined.protocol_name == "range"


def test_join_rejects_session_timeout_out_of_bounds(state: FakeState) -> None:
    state.groups.min_session_timeout_ms = 6000
    assert call(state, join_req(session_ms=100), 7).error_code == INVALID_SESSION_TIMEOUT


def test_join_with_unknown_member_id_on_missing_group(state: FakeState) -> None:
    response = call(state, join_req("ghost"), 7)
    assert response.error_code == UNKNOWN_MEMBER_ID


def test_not_coordinator_everywhere() -> None:
    state = FakeState(coordinator=2)
    assert call(state, join_req(), 7).error_code == NOT_COORDINATOR
    assert call(state, sync_req("m", 1), 5).error_code == NOT_COORDINATOR
    assert heartbeat(state, "m", 1) == NOT_COORDINATOR
    leave = LeaveGroupRequest(
        group_id="g", member_id="m", members=[LeaveGroupRequest.MemberIdentity(member_id="m")]
    )
    assert call(state, leave, 5).error_code == NOT_COORDINATOR
    assert commit_errors(call(state, commit_req(-1, "", {(TOPIC, 0): 1}), 8)) == {(TOPIC, 0): NOT_COORDINATOR}
    assert fetch(state, 8, [(TOPIC, 0)])[0] == NOT_COORDINATOR
    assert fetch(state, 5, [(TOPIC, 0)])[0] == NOT_COORDINATOR
    assert fetch(state, 1, [(TOPIC, 0)])[1] == {(TOPIC, 0): (-1, NOT_COORDINATOR)}
    described = call(state, DescribeGroupsRequest(groups=["g"], include_authorized_operations=False), 5)
    assert described.groups[0].error_code == NOT_COORDINATOR


# ---------------------------------------------------------------- rebalances
def test_second_member_triggers_rebalance_and_both_get_the_new_generation(
    state: FakeState, pool: ThreadPoolExecutor
) -> None:
    a = stable_single(state)
    b_first = call(state, join_req(), 7, client_id="b")
    assert b_first.error_code == MEMBER_ID_REQUIRED
    b_id = b_first.member_id
    b_join: Future[Any] = pool.submit(call, state, join_req(b_id), 7, "b")
    wait_until(state, lambda: b_id in state.groups.group("g").members)  # type: ignore[union-attr]

    # A learns about the rebalance from its heartbeat, then rejoins.
    assert heartbeat(state, a.member_id, 1) == REBALANCE_IN_PROGRESS
    a_rejoin = call(state, join_req(a.member_id), 7)
    b_joined = b_join.result(timeout=WAIT_S)

    assert a_rejoin.error_code == b_joined.error_code == NONE
    assert a_rejoin.generation_id == b_joined.generation_id == 2
    assert a_rejoin.leader == b_joined.leader == a.member_id
    assert sorted(m.member_id for m in a_rejoin.members) == sorted([a.member_id, b_id])
    assert b_joined.members == []

    # The follower's SyncGroup waits for the leader's assignment.
    b_sync: Future[Any] = pool.submit(call, state, sync_req(b_id, 2), 5)
    wait_until(state, lambda: state.groups.group("g").members[b_id].awaiting_sync)  # type: ignore[union-attr]
    a_sync = call(state, sync_req(a.member_id, 2, {a.member_id: b"pa", b_id: b"pb"}), 5)
    assert a_sync.assignment == b"pa"
    assert b_sync.result(timeout=WAIT_S).assignment == b"pb"
    assert heartbeat(state, a.member_id, 2) == NONE
    assert heartbeat(state, b_id, 2) == NONE
    assert heartbeat(state, b_id, 1) == ILLEGAL_GENERATION
    described = state.groups.describe("g")
    assert described is not None and described.state == "Stable"


def test_member_that_misses_the_rebalance_is_removed(state: FakeState, pool: ThreadPoolExecutor) -> None:
    a = stable_single(state, rebalance_ms=150)
    b_id = call(state, join_req(rebalance_ms=150), 7).member_id
    b_join: Future[Any] = pool.submit(call, state, join_req(b_id, rebalance_ms=150), 7)
    # A never rejoins: after the rebalance timeout B forms the generation alone.
    b_joined = b_join.result(timeout=WAIT_S)
    assert b_joined.error_code == NONE
    assert b_joined.generation_id == 2
    assert b_joined.leader == b_id
    assert [m.member_id for m in b_joined.members] == [b_id]
    assert heartbeat(state, a.member_id, 1) == UNKNOWN_MEMBER_ID


def test_session_timeout_removes_a_silent_member(state: FakeState) -> None:
    a = stable_single(state, session_ms=500)
    with state.lock:
        state.groups.tick(state.now_ms() + 200)
    assert heartbeat(state, a.member_id, 1) == NONE
    with state.lock:
        state.groups.tick(state.now_ms() + 10_000)
    assert heartbeat(state, a.member_id, 1) == UNKNOWN_MEMBER_ID
    described = state.groups.describe("g")
    assert described is not None and described.state == "Empty" and described.members == ()


def test_leader_that_never_syncs_is_removed_and_followers_are_told_to_rejoin(
    state: FakeState, pool: ThreadPoolExecutor
) -> None:
    a = stable_single(state, rebalance_ms=150)
    b_id = call(state, join_req(rebalance_ms=150), 7).member_id
    b_join: Future[Any] = pool.submit(call, state, join_req(b_id, rebalance_ms=150), 7)
    wait_until(state, lambda: b_id in state.groups.group("g").members)  # type: ignore[union-attr]
    call(state, join_req(a.member_id, rebalance_ms=150), 7)
    assert b_join.result(timeout=WAIT_S).generation_id == 2
    # B syncs, the leader A never does: the pending-sync timer removes A and restarts the round.
    b_sync = call(state, sync_req(b_id, 2), 5)
    assert b_sync.error_code == REBALANCE_IN_PROGRESS
    group = state.groups.group("g")
    assert group is not None and a.member_id not in group.members


def test_leave_group_v3_batched_and_rebalance(state: FakeState, pool: ThreadPoolExecutor) -> None:
    a = stable_single(state)
    b_id = call(state, join_req(), 7).member_id
    b_join: Future[Any] = pool.submit(call, state, join_req(b_id), 7)
    wait_until(state, lambda: b_id in state.groups.group("g").members)  # type: ignore[union-attr]
    call(state, join_req(a.member_id), 7)
    b_join.result(timeout=WAIT_S)
    call(state, sync_req(a.member_id, 2, {a.member_id: b"x", b_id: b"y"}), 5)

    leave = LeaveGroupRequest(
        group_id="g",
        members=[
            LeaveGroupRequest.MemberIdentity(member_id=a.member_id),
            LeaveGroupRequest.MemberIdentity(member_id="ghost"),
        ],
    )
    response = call(state, leave, 4)
    assert response.error_code == NONE
    assert [(m.member_id, m.error_code) for m in response.members] == [
        (a.member_id, NONE),
        ("ghost", UNKNOWN_MEMBER_ID),
    ]
    # B is alone now; the departure started a rebalance B hears about.
    assert heartbeat(state, b_id, 2) == REBALANCE_IN_PROGRESS
    assert call(state, join_req(b_id), 7).generation_id == 3


def test_leave_group_v1_single_member(state: FakeState) -> None:
    a = stable_single(state)
    response = call(state, LeaveGroupRequest(group_id="g", member_id=a.member_id), 1)
    assert response.error_code == NONE
    described = state.groups.describe("g")
    assert described is not None and described.state == "Empty"
    assert (
        call(state, LeaveGroupRequest(group_id="g", member_id=a.member_id), 1).error_code == UNKNOWN_MEMBER_ID
    )


def test_force_rebalance_and_remove_member(state: FakeState) -> None:
    a = stable_single(state)
    with state.lock:
        state.groups.force_rebalance("g")
    assert heartbeat(state, a.member_id, 1) == REBALANCE_IN_PROGRESS
    assert call(state, join_req(a.member_id), 7).generation_id == 2
    with state.lock:
        assert state.groups.remove_member("g", a.member_id)
    assert heartbeat(state, a.member_id, 2) == UNKNOWN_MEMBER_ID


def test_protocol_selection_and_inconsistent_protocol(state: FakeState, pool: ThreadPoolExecutor) -> None:
    a = join_single(state, protocols=(("range", b"r"), ("roundrobin", b"rr")))
    b_id = call(state, join_req(protocols=(("roundrobin", b"b"),)), 7).member_id
    b_join: Future[Any] = pool.submit(call, state, join_req(b_id, protocols=(("roundrobin", b"b"),)), 7)
    wait_until(state, lambda: b_id in state.groups.group("g").members)  # type: ignore[union-attr]
    a2 = call(state, join_req(a.member_id, protocols=(("range", b"r"), ("roundrobin", b"rr"))), 7)
    b2 = b_join.result(timeout=WAIT_S)
    assert a2.protocol_name == b2.protocol_name == "roundrobin"
    assert sorted(m.metadata for m in a2.members) == [b"b", b"rr"]
    other = call(state, join_req(protocols=(("sticky", b""),)), 3)
    assert other.error_code == INCONSISTENT_GROUP_PROTOCOL
    other_type = call(state, join_req(protocol_type="connect"), 3)
    assert other_type.error_code == INCONSISTENT_GROUP_PROTOCOL


def test_static_member_restart_keeps_generation_and_fences_old_id(state: FakeState) -> None:
    first = call(state, join_req(instance_id="inst-1"), 7)
    assert first.error_code == NONE  # static members skip MEMBER_ID_REQUIRED
    call(state, sync_req(first.member_id, 1, {first.member_id: b"A"}, instance_id="inst-1"), 5)

    restarted = call(state, join_req(instance_id="inst-1"), 7)
    assert restarted.error_code == NONE
    assert restarted.member_id != first.member_id
    assert restarted.generation_id == 1  # no rebalance
    sync = call(state, sync_req(restarted.member_id, 1, instance_id="inst-1"), 5)
    assert sync.assignment == b"A"
    assert heartbeat(state, first.member_id, 1, instance_id="inst-1") == FENCED_INSTANCE_ID
    assert heartbeat(state, restarted.member_id, 1, instance_id="inst-1") == NONE


def test_static_member_restart_with_other_subscription_bytes_keeps_generation(state: FakeState) -> None:
    """Kafka 4.1 compares only the protocol the group would select (GroupMetadataManager's
    updateStaticMemberThenRebalanceOrCompleteJoin): a restarted static member whose subscription bytes
    differ - a Java member no longer listing owned partitions, another client version - takes its
    place back without a rebalance, and its new metadata replaces the old."""
    first = call(state, join_req(instance_id="inst-1", protocols=(("range", b"owned:t-0"),)), 9)
    call(state, sync_req(first.member_id, 1, {first.member_id: b"A"}, instance_id="inst-1"), 5)

    restarted = call(state, join_req(instance_id="inst-1", protocols=(("range", b"owned:none"),)), 9)
    assert restarted.error_code == NONE
    assert restarted.generation_id == 1  # no rebalance
    assert restarted.skip_assignment  # the leader came back: it keeps the assignment (KIP-814)
    assert [m.metadata for m in restarted.members] == [b"owned:none"]
    group = state.groups.group("g")
    assert group is not None and group.state is GroupState.STABLE


def test_static_member_restart_choosing_another_protocol_rebalances(state: FakeState) -> None:
    both = (("range", b"meta"), ("roundrobin", b"meta"))
    first = call(state, join_req(instance_id="inst-1", protocols=both), 9)
    call(state, sync_req(first.member_id, 1, {first.member_id: b"A"}, instance_id="inst-1"), 5)

    preferring = (("roundrobin", b"meta"), ("range", b"meta"))
    restarted = call(state, join_req(instance_id="inst-1", protocols=preferring), 9)
    assert restarted.error_code == NONE
    assert restarted.generation_id == 2
    assert restarted.protocol_name == "roundrobin"


# ---------------------------------------------------------------- offsets
def test_simple_commit_on_empty_group_and_fetch_back(state: FakeState) -> None:
    response = call(state, commit_req(-1, "", {(TOPIC, 0): 5, (TOPIC, 1): 7}), 8)
    assert commit_errors(response) == {(TOPIC, 0): NONE, (TOPIC, 1): NONE}
    with state.lock:
        assert state.groups.committed("g") == {(TOPIC, 0): 5, (TOPIC, 1): 7}
    for version in (1, 2, 5, 7, 8, 9):
        error, offsets = fetch(state, version, [(TOPIC, 0), (TOPIC, 2)])
        assert error == NONE
        assert offsets == {(TOPIC, 0): (5, NONE), (TOPIC, 2): (-1, NONE)}
    for version in (2, 7, 8, 9):
        assert fetch(state, version, None)[1] == {(TOPIC, 0): (5, NONE), (TOPIC, 1): (7, NONE)}


def test_fetch_of_unknown_group_answers_minus_one(state: FakeState) -> None:
    assert fetch(state, 8, [(TOPIC, 0)], group="nobody") == (NONE, {(TOPIC, 0): (-1, NONE)})


def test_commit_generation_checks(state: FakeState, pool: ThreadPoolExecutor) -> None:
    assert commit_errors(call(state, commit_req(5, "m", {(TOPIC, 0): 1}, group="new"), 8)) == {
        (TOPIC, 0): ILLEGAL_GENERATION
    }
    assert commit_errors(call(state, commit_req(5, "m", {(TOPIC, 0): 1}, group="new"), 9)) == {
        (TOPIC, 0): GROUP_ID_NOT_FOUND
    }
    assert commit_errors(call(state, commit_req(-1, "", {("nope", 0): 1}), 8)) == {
        ("nope", 0): UNKNOWN_TOPIC_OR_PARTITION
    }

    a = stable_single(state)
    ok = call(state, commit_req(1, a.member_id, {(TOPIC, 0): 3}), 8)
    assert commit_errors(ok) == {(TOPIC, 0): NONE}
    assert commit_errors(call(state, commit_req(0, a.member_id, {(TOPIC, 0): 4}), 8)) == {
        (TOPIC, 0): ILLEGAL_GENERATION
    }
    assert commit_errors(call(state, commit_req(1, "ghost", {(TOPIC, 0): 4}), 8)) == {
        (TOPIC, 0): UNKNOWN_MEMBER_ID
    }
    # A simple (generation -1) commit is refused while the group has members.
    assert commit_errors(call(state, commit_req(-1, "", {(TOPIC, 0): 4}), 8)) == {
        (TOPIC, 0): UNKNOWN_MEMBER_ID
    }

    # CompletingRebalance: the member knows the new generation but the round is not done.
    b_id = call(state, join_req(), 7).member_id
    b_join: Future[Any] = pool.submit(call, state, join_req(b_id), 7)
    wait_until(state, lambda: b_id in state.groups.group("g").members)  # type: ignore[union-attr]
    call(state, join_req(a.member_id), 7)
    b_join.result(timeout=WAIT_S)
    assert commit_errors(call(state, commit_req(2, a.member_id, {(TOPIC, 0): 4}), 8)) == {
        (TOPIC, 0): REBALANCE_IN_PROGRESS
    }
    with state.lock:
        assert state.groups.committed("g") == {(TOPIC, 0): 3}


def test_require_stable_fetch_sees_pending_transactional_offsets(state: FakeState) -> None:
    gc = state.groups
    with state.lock:
        assert gc.validate_txn_offset_commit("g", -1, "", None) == NONE
        gc.stage_txn_offsets("g", 1000, {(TOPIC, 0): (42, -1, "")})
    assert fetch(state, 8, [(TOPIC, 0), (TOPIC, 1)], require_stable=True)[1] == {
        (TOPIC, 0): (-1, UNSTABLE_OFFSET_COMMIT),
        (TOPIC, 1): (-1, NONE),
    }
    assert fetch(state, 7, [(TOPIC, 0)], require_stable=True)[1] == {(TOPIC, 0): (-1, UNSTABLE_OFFSET_COMMIT)}
    assert fetch(state, 8, [(TOPIC, 0)], require_stable=False)[1] == {(TOPIC, 0): (-1, NONE)}
    with state.lock:
        gc.complete_txn_offsets("g", 1000, commit=True)
        assert gc.committed("g") == {(TOPIC, 0): 42}
        gc.stage_txn_offsets("g", 1000, {(TOPIC, 0): (50, -1, "")})
        gc.complete_txn_offsets("g", 1000, commit=False)
        assert gc.committed("g") == {(TOPIC, 0): 42}
    assert fetch(state, 8, [(TOPIC, 0)], require_stable=True)[1] == {(TOPIC, 0): (42, NONE)}


@pytest.mark.parametrize(
    ("exists", "generation", "member", "expected"),
    [
        (False, 5, "ghost-member", ILLEGAL_GENERATION),
        (False, -1, "ghost-member", NONE),
        (False, 5, "", ILLEGAL_GENERATION),
        (False, 0, "", ILLEGAL_GENERATION),
        (False, -1, "", NONE),
        (True, 5, "ghost-member", UNKNOWN_MEMBER_ID),
        (True, -1, "ghost-member", NONE),
        (True, 5, "", UNKNOWN_MEMBER_ID),
    ],
)
def test_txn_offset_commit_validation_matches_kafka_41(
    state: FakeState, exists: bool, generation: int, member: str, expected: int
) -> None:
    """errors.json case g of the Kafka 4.1.0 conformance recordings."""
    gc = state.groups
    with state.lock:
        if exists:
            assert gc.validate_txn_offset_commit("g", -1, "", None) == NONE
            gc.stage_txn_offsets("g", 1, {(TOPIC, 0): (1, -1, "")})
            gc.complete_txn_offsets("g", 1, commit=True)
        assert gc.validate_txn_offset_commit("g", generation, member, None) == expected


def test_txn_offset_commit_validation_with_a_live_member(state: FakeState) -> None:
    a = stable_single(state)
    with state.lock:
        assert state.groups.validate_txn_offset_commit("g", 1, a.member_id, None) == NONE
        assert state.groups.validate_txn_offset_commit("g", 0, a.member_id, None) == ILLEGAL_GENERATION
        assert state.groups.validate_txn_offset_commit("g", 1, "zombie", None) == UNKNOWN_MEMBER_ID


# ---------------------------------------------------------------- admin views
def test_describe_and_list_groups(state: FakeState) -> None:
    a = stable_single(state)
    call(state, commit_req(-1, "", {(TOPIC, 0): 1}, group="simple"), 8)
    for version in (0, 3, 5, 6):
        response = call(
            state,
            DescribeGroupsRequest(groups=["g", "missing"], include_authorized_operations=False),
            version,
        )
        g, missing = response.groups
        assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == (
            NONE,
            "Stable",
            "consumer",
            "range",
        )
        assert [(m.member_id, m.member_assignment) for m in g.members] == [(a.member_id, b"A")]
        assert missing.group_state == "Dead"
        assert missing.error_code == (GROUP_ID_NOT_FOUND if version >= 6 else NONE)
    for version in (0, 3, 4, 5):
        listed = call(state, ListGroupsRequest(states_filter=[], types_filter=[]), version)
        assert {(x.group_id, x.protocol_type) for x in listed.groups} == {("g", "consumer"), ("simple", "")}
    stable_only = call(state, ListGroupsRequest(states_filter=["stable"], types_filter=[]), 4)
    assert [x.group_id for x in stable_only.groups] == ["g"]


def test_module_exports_supported_versions() -> None:
    assert gc_module.SUPPORTED_VERSIONS[11] == (0, 9)
    assert gc_module.SUPPORTED_VERSIONS[8] == (2, 9)


def test_parked_join_returns_when_the_cluster_closes(state: FakeState, pool: ThreadPoolExecutor) -> None:
    a = stable_single(state, rebalance_ms=60_000)
    b_id = call(state, join_req(rebalance_ms=60_000), 7).member_id
    b_join: Future[Any] = pool.submit(call, state, join_req(b_id, rebalance_ms=60_000), 7)
    wait_until(state, lambda: b_id in state.groups.group("g").members)  # type: ignore[union-attr]
    assert heartbeat(state, a.member_id, 1) == REBALANCE_IN_PROGRESS
    state.closed = True  # what MockCluster.close() sets before waking every waiter
    state.notify_all()
    assert b_join.result(timeout=WAIT_S).error_code == REBALANCE_IN_PROGRESS
