"""GroupMember, our own classic-protocol consumer group member, against the MockCluster.

What a user relies on: members split a topic's partitions as they come and go; a member that dies
is dropped after its session timeout and its partitions move on; a static member restarted with its
``group_instance_id`` gets its partitions back at once, with no rebalance (no session-timeout stall);
the revoke hook runs before the member's JoinGroup reaches the coordinator, so an exactly-once owner
aborts its transaction before anyone else can be given the partitions; a coordinator move is followed
without a rebalance; a member that stops polling leaves and loses its partitions; new partitions
rebalance the group; committed offsets are read only when no open transaction is about to change
them; and the member's group metadata fences a zombie's transactional offsets (KIP-447).

Members poll on their own threads (``tests/_support/group_members.py``); tests wait on conditions and
on the cluster's request log, with bounds.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from kafka.structs import MemberState, TopicPartition

from tests._support.group_members import (
    WAIT_S,
    PolledMember,
    make_member,
    split_evenly,
    wait_until,
)
from txnproducer import CommitFailedError, TimeoutError, TransactionalProducer
from txnproducer._internal.group import CommittedOffset, GroupMember
from txnproducer.testing import MockCluster

TOPIC = "t"
PARTITIONS = 6
TP0, TP1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3) as mock:
        mock.create_topic(TOPIC, partitions=PARTITIONS)
        mock.create_topic("out", partitions=1)
        yield mock


@pytest.fixture
def members() -> Iterator[list[PolledMember]]:
    started: list[PolledMember] = []
    yield started
    for member in started:
        member.stop(leave_group=False, timeout=2)


class NoHooks:
    def on_revoke(self, partitions: frozenset[TopicPartition]) -> None:
        pass

    def on_assign(self, partitions: frozenset[TopicPartition]) -> None:
        pass

    def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        pass


def poll_until(member: GroupMember, what: str, done: object) -> None:
    """Poll ``member`` on the test's thread until ``done()`` (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        member.poll(time.monotonic() + 0.1)


def test_members_split_the_partitions_as_they_come_and_go(cluster: MockCluster,
                                                          members: list[PolledMember]) -> None:
    cond = threading.Condition()
    a = PolledMember(cluster, "split", "a", cond=cond)
    members.append(a)
    wait_until(cond, members, "a owns every partition", lambda: split_evenly([a], TOPIC, PARTITIONS))
    b = PolledMember(cluster, "split", "b", cond=cond)
    members.append(b)
    wait_until(cond, members, "a and b hold three each", lambda: split_evenly([a, b], TOPIC, PARTITIONS))
    c = PolledMember(cluster, "split", "c", cond=cond)
    members.append(c)
    wait_until(cond, members, "a, b and c hold two each", lambda: split_evenly([a, b, c], TOPIC, PARTITIONS))
    assert len({m.generation for m in members}) == 1

    since = cluster.requests.next_seq()
    members.remove(b)
    b.stop()  # a clean close: the revoke hook, then LeaveGroup
    cluster.wait_for_request(lambda e: e.api == "LeaveGroup" and e.fields.get("group_id") == "split",
                             timeout=WAIT_S, since=since)
    assert b.hooks.kinds()[-1] == "revoke"
    wait_until(cond, members, "a and c hold three each", lambda: split_evenly([a, c], TOPIC, PARTITIONS))


def test_a_killed_member_is_dropped_after_its_session_timeout(cluster: MockCluster,
                                                             members: list[PolledMember]) -> None:
    cond = threading.Condition()
    a = PolledMember(cluster, "killed", "a", cond=cond)
    b = PolledMember(cluster, "killed", "b", cond=cond, session_timeout_ms=800)
    members.extend([a, b])
    wait_until(cond, members, "a and b hold three each", lambda: split_evenly([a, b], TOPIC, PARTITIONS))
    dead = b.member_id

    members.remove(b)
    b.stop(leave_group=False)  # the process dies: no hook, no LeaveGroup, its sockets close
    wait_until(cond, members, "a owns every partition", lambda: split_evenly([a], TOPIC, PARTITIONS))
    with cluster.state.lock:
        description = cluster.state.groups.describe("killed")
    assert description is not None and dead not in {m.member_id for m in description.members}
    assert not any(e.api == "LeaveGroup" for e in cluster.request_log)


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(
        cluster: MockCluster, members: list[PolledMember]) -> None:
    """The fix for the restart stall: a dynamic member's replacement waits for the dead member's
    session to run out (45 s by default) before the group rebalances; a static one takes its place."""
    cond = threading.Condition()
    static = {"session_timeout_ms": 30_000}
    a = PolledMember(cluster, "static", "a", cond=cond, group_instance_id="a-1", **static)
    b = PolledMember(cluster, "static", "b", cond=cond, group_instance_id="b-1", **static)
    members.extend([a, b])
    wait_until(cond, members, "a and b hold three each", lambda: split_evenly([a, b], TOPIC, PARTITIONS))
    # which of a and b joined first (and so owned all six for a generation) is a race: what counts is
    # that the restart adds no hook call to b's
    generation, a_owned, b_owned, b_id, b_hooks = a.generation, a.assignment, b.assignment, b.member_id, \
        b.hooks.kinds()

    since = cluster.requests.next_seq()
    members.remove(a)
    a.stop()  # a static member's close: revoke hook, but no LeaveGroup - its place is kept
    restarted = PolledMember(cluster, "static", "a-restarted", cond=cond, group_instance_id="a-1", **static)
    members.append(restarted)
    wait_until(cond, members, "the restarted member owns a's partitions",
               lambda: restarted.assignment == a_owned)

    assert restarted.generation == generation and restarted.member_id != a.member_id
    assert b.generation == generation and b.assignment == b_owned and b.hooks.kinds() == b_hooks
    after = cluster.request_log[since:]
    assert not any(e.api == "LeaveGroup" for e in after)
    assert not any(e.api == "JoinGroup" and e.fields.get("member_id") == b_id for e in after)
    assert not any(e.api == "Heartbeat" and e.error_codes for e in after)  # no REBALANCE_IN_PROGRESS
    joins = [e for e in after if e.api == "JoinGroup"]
    assert len(joins) == 1 and joins[0].fields.get("member_id") == "" and not joins[0].error_codes


def test_the_revoke_hook_runs_before_join_group_reaches_the_coordinator(
        cluster: MockCluster, members: list[PolledMember]) -> None:
    producer = TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="rv-1")
    producer.init_transactions()
    try:
        cond = threading.Condition()
        a = PolledMember(cluster, "revoke", "a", cond=cond)
        members.append(a)
        wait_until(cond, members, "a owns every partition", lambda: split_evenly([a], TOPIC, PARTITIONS))
        a_id = a.member_id
        producer.begin_transaction()
        producer.send("out", b"in flight").get(timeout=5)
        parked: list[bool] = []

        def abort(_partitions: frozenset[TopicPartition]) -> None:
            with cluster.state.lock:  # the coordinator's view: has a's JoinGroup arrived?
                group = cluster.state.groups.group("revoke")
                assert group is not None
                parked.append(group.members[a_id].awaiting_join)
            producer.abort_transaction(timeout=5)

        a.hooks.on_revoke_do = abort
        since = cluster.requests.next_seq()
        b = PolledMember(cluster, "revoke", "b", cond=cond)
        members.append(b)
        wait_until(cond, members, "a and b hold three each", lambda: split_evenly([a, b], TOPIC, PARTITIONS))

        assert parked == [False]
        revoke = next(c for c in a.hooks.calls if c.kind == "revoke")
        log = cluster.request_log
        end_txn = next(e for e in log[revoke.seq_before:revoke.seq_after] if e.api == "EndTxn")
        rejoin = next(e for e in log[since:] if e.api == "JoinGroup" and e.fields.get("member_id") == a_id)
        assert end_txn.seq < rejoin.seq
        assert cluster.partition_records("out", 0, read_committed=True) == []
    finally:
        producer.close(timeout=5)


def test_a_coordinator_move_is_followed_without_a_rebalance(cluster: MockCluster,
                                                           members: list[PolledMember]) -> None:
    a = PolledMember(cluster, "moving", "a")
    members.append(a)
    a.wait_until("a owns every partition", lambda: split_evenly([a], TOPIC, PARTITIONS))
    old = cluster.coordinator_for("moving", key_type="group")
    new = next(b for b in cluster.broker_ids if b != old)
    generation, owned = a.generation, a.assignment

    since = cluster.requests.next_seq()
    cluster.move_coordinator("moving", new, key_type="group")
    cluster.wait_for_request(lambda e: e.api == "Heartbeat" and e.broker_id == new and not e.error_codes,
                             timeout=WAIT_S, since=since)
    after = cluster.request_log[since:]
    assert any(e.api == "Heartbeat" and e.broker_id == old and e.error_codes == (16,) for e in after)
    assert any(e.api == "FindCoordinator" for e in after)
    assert a.generation == generation and a.assignment == owned and a.hooks.kinds() == ["assign"]


def test_a_member_that_stops_polling_leaves_and_loses_its_partitions(cluster: MockCluster,
                                                                    members: list[PolledMember]) -> None:
    a = PolledMember(cluster, "stuck", "a", max_poll_interval_ms=600)
    members.append(a)
    a.wait_until("a owns every partition", lambda: split_evenly([a], TOPIC, PARTITIONS))
    owned, first_id = a.assignment, a.member_id

    since = cluster.requests.next_seq()
    a.paused.set()  # the application is stuck between two polls
    leave = cluster.wait_for_request(lambda e: e.api == "LeaveGroup", timeout=WAIT_S, since=since)
    assert leave.fields.get("group_id") == "stuck"
    a.paused.clear()
    a.wait_until("a is back with every partition", lambda: a.hooks.kinds() == ["assign", "lost", "assign"])
    lost = a.hooks.calls[1]
    assert lost.partitions == owned and lost.seq_before > leave.seq
    assert a.assignment == owned and a.member_id != first_id


def test_partitions_added_to_a_topic_rebalance_the_group(cluster: MockCluster,
                                                        members: list[PolledMember]) -> None:
    cluster.create_topic("grow", partitions=2)
    cond = threading.Condition()
    a = PolledMember(cluster, "grow", "a", topics=["grow"], cond=cond, metadata_max_age_ms=200)
    b = PolledMember(cluster, "grow", "b", topics=["grow"], cond=cond, metadata_max_age_ms=200)
    members.extend([a, b])
    wait_until(cond, members, "one partition each", lambda: split_evenly([a, b], "grow", 2))
    generation = a.generation

    cluster.add_partitions("grow", 4)
    wait_until(cond, members, "two partitions each", lambda: split_evenly([a, b], "grow", 4))
    assert a.generation > generation


def test_a_topic_created_after_the_group_formed_is_assigned_soon(cluster: MockCluster,
                                                               members: list[PolledMember]) -> None:
    """Without waiting for metadata_max_age_ms (5 minutes by default): while a subscribed topic is
    unknown, the leader asks again after retry_backoff_max_ms, as the Java client refreshes then."""
    a = PolledMember(cluster, "later", "a", topics=["later"])
    members.append(a)
    a.wait_until("a joined, owning nothing", lambda: a.generation == 1)
    assert a.assignment == frozenset()
    cluster.create_topic("later", partitions=2)
    a.wait_until("a owns the new topic's partitions", lambda: split_evenly([a], "later", 2))
    assert a.member.settings.metadata_max_age_ms == 300_000


@contextlib.contextmanager
def _offsets_pending(cluster: MockCluster, group: str, transactional_id: str) -> Iterator[GroupMember]:
    """A member of ``group`` owning every partition, and offset 5 of partition 0 committed in a
    transaction of ``transactional_id`` whose markers the cluster holds: the offsets stay pending."""
    member = make_member(cluster, group, "a", NoHooks())
    producer = TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers,
                                     transactional_id=transactional_id)
    try:
        member.subscribe([TOPIC])
        poll_until(member, "the member owns every partition", lambda: len(member.assignment()) == PARTITIONS)
        producer.init_transactions()
        assert member.fetch_committed([TP0, TP1], timeout=5) == {}
        cluster.hold_markers(transactional_id)  # the commit's markers are not written yet
        producer.begin_transaction()
        producer.send_offsets_to_transaction({TP0: 5}, member.group_metadata())
        producer.commit_transaction(timeout=5)
        yield member
    finally:
        producer.close(timeout=5)
        member.close(5)


def test_committed_offsets_wait_for_an_open_transaction_to_end(cluster: MockCluster) -> None:
    with _offsets_pending(cluster, "offsets", "off-1") as member:
        # 2 s: answered (and retried) within it on a loaded CI machine too
        with pytest.raises(TimeoutError, match="UNSTABLE_OFFSET_COMMIT"):
            member.fetch_committed([TP0, TP1], timeout=2)
        unstable = [e for e in cluster.request_log if e.api == "OffsetFetch" and e.error_codes == (88,)]
        assert len(unstable) >= 2  # retried within the timeout

        cluster.release_markers()
        assert member.fetch_committed([TP0, TP1], timeout=5) == {TP0: CommittedOffset(5, -1, "")}


def test_a_fetch_that_times_out_names_the_last_answer_not_the_retry_on_its_way(cluster: MockCluster) -> None:
    """The deadline falls while a retry is unanswered: the error still says why it was retried (a loaded
    machine's coordinator is slow to answer; "no answer" alone would hide the pending transaction)."""
    with _offsets_pending(cluster, "offsets-late", "off-late") as member:
        since = cluster.requests.next_seq()
        # the first OffsetFetch answered at once (UNSTABLE_OFFSET_COMMIT), its retry 5 s late
        cluster.delay_responses("OffsetFetch", [0, 5_000])
        with pytest.raises(TimeoutError, match=r"UNSTABLE_OFFSET_COMMIT.*not answered in time"):
            member.fetch_committed([TP0], timeout=1.5)
        answered = [e for e in cluster.request_log[since:] if e.api == "OffsetFetch"]
        assert [e.error_codes for e in answered] == [(88,)]  # one answer; the retry was still held


def test_group_metadata_fences_a_zombies_transactional_offsets(cluster: MockCluster) -> None:
    """KIP-447 through a TransactionalProducer: offsets sent with the metadata of a generation the
    group has left are refused (CommitFailedError: abort, reprocess), current ones are committed."""
    member = make_member(cluster, "zombie", "a", NoHooks())
    producer = TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="z-1")
    tp = TopicPartition(TOPIC, 0)

    def commit(offset: int, group_metadata: object) -> None:
        producer.begin_transaction()
        try:
            producer.send_offsets_to_transaction({tp: offset}, group_metadata)  # type: ignore[arg-type]
            producer.commit_transaction(timeout=5)
        except BaseException:
            producer.abort_transaction(timeout=5)
            raise

    try:
        member.subscribe([TOPIC])
        poll_until(member, "joined", lambda: member.group_metadata().generation_id == 1)
        producer.init_transactions()
        first = member.group_metadata()
        assert (first.group_id, first.generation_id, first.member_id) == ("zombie", 1, member_id(member))
        commit(1, first)

        cluster.force_rebalance("zombie")
        poll_until(member, "the next generation", lambda: member.group_metadata().generation_id == 2)
        with pytest.raises(CommitFailedError):
            commit(2, first)  # a zombie of generation 1
        commit(3, member.group_metadata())
        assert cluster.committed_offsets("zombie") == {(TOPIC, 0): 3}

        since = cluster.requests.next_seq()
        cluster.remove_group_member("zombie", member_id(member))  # dropped; its heartbeat learns it
        cluster.wait_for_request(lambda e: e.api == "Heartbeat" and e.error_codes == (25,), timeout=WAIT_S,
                                 since=since)
        wait_for(lambda: member.group_metadata().state == MemberState.UNJOINED, "the member knows")
        # not polled since: the metadata is still that of the last join (Java's groupMetadata), never
        # generation -1, which Kafka would take as an unfenced "simple" commit
        assert member.group_metadata().generation_id == 2
        with pytest.raises(CommitFailedError):
            commit(4, member.group_metadata())
        poll_until(member, "rejoined", lambda: member.group_metadata().generation_id > 2)
        commit(5, member.group_metadata())
        assert cluster.committed_offsets("zombie") == {(TOPIC, 0): 5}
        fenced = [e for e in cluster.request_log if e.api == "TxnOffsetCommit" and e.error_codes]
        assert [e.error_codes[0] for e in fenced] == [22, 25]  # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID
    finally:
        producer.close(timeout=5)
        member.close(5)


def wait_for(done: Callable[[], bool], what: str) -> None:
    """Wait on something the member's own thread changes (no event to wait on: checked every 10 ms)."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        threading.Event().wait(0.01)


def member_id(member: GroupMember) -> str:
    return str(member.group_metadata().member_id)


def test_a_static_member_leaves_on_close_only_when_asked(cluster: MockCluster) -> None:
    cond = threading.Condition()
    stays = PolledMember(cluster, "closing", "a", cond=cond, group_instance_id="a-1")
    leaves = PolledMember(cluster, "closing", "b", cond=cond, group_instance_id="b-1")
    wait_until(cond, [stays, leaves], "a and b hold three each",
               lambda: split_evenly([stays, leaves], TOPIC, PARTITIONS))
    since = cluster.requests.next_seq()
    stays.stop()
    assert not any(e.api == "LeaveGroup" for e in cluster.request_log[since:])
    leaves.stop(leave_group=True)
    leave = [e for e in cluster.request_log[since:] if e.api == "LeaveGroup"]
    assert len(leave) == 1 and not leave[0].error_codes
    with cluster.state.lock:
        description = cluster.state.groups.describe("closing")
    assert description is not None and [m.group_instance_id for m in description.members] == ["a-1"]


def test_a_leader_elected_before_the_first_metadata_answer_asks_a_bootstrap_server(
        cluster: MockCluster, members: list[PolledMember]) -> None:
    """The group's JoinGroup can be answered (this member leading) while the network's first Metadata
    answer is still on its way (held here): the leader's Metadata for the group's topics then goes to a
    bootstrap server, whose id is not a broker id yet - it failed with ValueError(int('bootstrap-0'))."""
    cluster.delay_responses("Metadata", 1500, count=3)
    solo = PolledMember(cluster, "early-leader", "solo")
    members.append(solo)
    solo.wait_until("the member owns every partition", lambda: len(solo.assignment) == PARTITIONS)
