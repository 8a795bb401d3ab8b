"""TransactionalConsumer with ``group_protocol="consumer"`` (KIP-848) against MockCluster's consumer group
coordinator: our own ConsumerGroupMember through the real consumer.

What a user relies on: members share the partitions the coordinator assigns; when one joins or leaves,
only the partitions that move change hands - one member revokes them (its listener runs, on the polling
thread, before the coordinator can give them to anyone), the other gets them - while every other
partition keeps being read without a pause or a rewind; a newly assigned partition starts at the
group's committed offset; ``group_metadata()`` carries the member epoch, which fences a zombie's
transactional offsets (KIP-447); a static member's close leaves with epoch -2 and its restart takes its
partitions back without moving anyone else's; a fenced member loses its partitions (``on_partitions_lost``)
and rejoins under the same member id; a pattern subscription follows the topics that match. Consumers
poll on threads of their own; tests wait on conditions and on ConsumerGroupDescribe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests._support.consumer_protocol import describe
from txnproducer import (
    CommitFailedError,
    ConsumerGroupMetadata,
    SubscriptionPattern,
    TopicPartition,
    TransactionalConsumer,
    TransactionalProducer,
)
from txnproducer.testing import MockCluster

TOPIC = "orders"
PARTITIONS = 6
ALL = frozenset(TopicPartition(TOPIC, p) for p in range(PARTITIONS))
WAIT_S = 20.0
#: the consumer protocol: the coordinator gives the heartbeat interval and owns the session timeout
FAST = {
    "group_protocol": "consumer",
    "max_poll_interval_ms": 6000,
    "retry_backoff_ms": 20,
    "retry_backoff_max_ms": 200,
    "request_timeout_ms": 5000,
    "fetch_max_wait_ms": 50,
    "auto_offset_reset": "earliest",
}
GROUP_CONFIG = {"group.consumer.heartbeat.interval.ms": 100, "group.consumer.session.timeout.ms": 3000}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3, consumer_group_config=GROUP_CONFIG) as mock:
        mock.create_topic(TOPIC, partitions=PARTITIONS)
        yield mock


def write(cluster: MockCluster, per_partition: int, topic: str = TOPIC, partitions: int = PARTITIONS,
          txn_id: str = "writer") -> None:
    """``per_partition`` committed records in each partition: ``b"<p>-<i>"``."""
    with TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=txn_id,
                               max_block_ms=10_000) as producer:
        producer.init_transactions()
        with producer.transaction():
            for p in range(partitions):
                for i in range(per_partition):
                    producer.send(topic, b"%d-%d" % (p, i), partition=p)


class Listener:
    """Records each callback (kind, partitions, thread) and runs ``on_revoked_do`` in the revocation."""

    def __init__(self, cond: threading.Condition) -> None:
        self.cond = cond
        self.calls: list[tuple[str, frozenset[TopicPartition], int]] = []
        self.on_revoked_do: Callable[[frozenset[TopicPartition]], None] | None = None

    def _record(self, kind: str, partitions: list[TopicPartition]) -> None:
        with self.cond:
            self.calls.append((kind, frozenset(partitions), threading.get_ident()))
            self.cond.notify_all()

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        if self.on_revoked_do is not None:
            self.on_revoked_do(frozenset(partitions))
        self._record("revoked", partitions)

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        self._record("assigned", partitions)

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        self._record("lost", partitions)

    def of(self, kind: str) -> list[frozenset[TopicPartition]]:
        with self.cond:
            return [c[1] for c in self.calls if c[0] == kind]


class Polled:
    """A consumer-protocol consumer polled on its own thread; what it read, by partition and offset."""

    def __init__(self, cluster: MockCluster, group: str, name: str, cond: threading.Condition,
                 subscription: Any = TOPIC, **settings: Any) -> None:
        self.name = name
        self.cond = cond
        self.consumer = TransactionalConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                                              client_id=name, **{**FAST, **settings})
        self.listener = Listener(cond)
        self.consumer.subscribe(subscription, listener=self.listener)
        self.read: list[tuple[str, int, int]] = []  # topic, partition, offset
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"consumer-{name}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                records = self.consumer.poll(0.05)
            except BaseException as exc:
                with self.cond:
                    self.errors.append(exc)
                    self.cond.notify_all()
                return
            with self.cond:
                self.read.extend((r.topic, r.partition, r.offset) for r in records)
                self.cond.notify_all()

    def owned(self) -> frozenset[TopicPartition]:
        return frozenset(self.consumer.assignment())

    def stop(self, close: bool = True, **close_args: Any) -> None:
        self._stop.set()
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive()
        if close:
            self.consumer.close(5, **close_args)


def wait_until(cond: threading.Condition, what: str, predicate: Callable[[], bool],
               polled: list[Polled]) -> None:
    deadline = time.monotonic() + WAIT_S
    with cond:
        while not predicate():
            failed = [p.errors for p in polled if p.errors]
            assert not failed, f"a consumer failed while waiting until {what}: {failed!r}"
            remaining = deadline - time.monotonic()
            owned = [sorted(p.owned()) for p in polled]
            assert remaining > 0, f"timed out waiting until {what}; owned: {owned}"
            cond.wait(min(remaining, 0.1))


@pytest.fixture
def running() -> Iterator[list[Polled]]:
    started: list[Polled] = []
    yield started
    for p in started:
        if p.thread.is_alive():
            p.stop(close=True, leave_group=False)


def member_epochs(cluster: MockCluster, group: str) -> dict[str, int]:
    """{member id: member epoch} as the coordinator describes the group."""
    return {m.member_id: m.member_epoch for m in describe(cluster, group).members}


def test_a_joining_member_takes_partitions_one_member_gives_up_while_the_rest_keep_flowing(
    cluster: MockCluster, running: list[Polled]
) -> None:
    cond = threading.Condition()
    write(cluster, 5)
    a = Polled(cluster, "share", "a", cond)
    running.append(a)
    wait_until(cond, "a read everything", lambda: len(a.read) == PARTITIONS * 5, running)
    assert a.owned() == ALL
    before = {tp: a.consumer.position(tp) for tp in ALL}
    b = Polled(cluster, "share", "b", cond)
    running.append(b)
    wait_until(cond, "a and b share the partitions",
               lambda: len(a.owned()) == len(b.owned()) == 3 and a.owned() | b.owned() == ALL, running)
    # a was told only of what it gave up, b only of what it got; nothing a kept was revoked or rewound
    kept = a.owned()
    assert a.listener.of("revoked") == [ALL - kept]
    assert a.listener.of("assigned")[-1] == frozenset(), "added nothing: called with no partition"
    assert b.listener.of("assigned")[-1] == ALL - kept
    assert {tp: a.consumer.position(tp) for tp in kept} == {tp: before[tp] for tp in kept}
    write(cluster, 3, txn_id="writer-2")
    wait_until(cond, "the new records are read",
               lambda: len(a.read) + len(b.read) == PARTITIONS * 8 + len(ALL - kept) * 5, running)
    # b started the partitions it got at the group's committed offsets: none, so from the beginning
    # (auto_offset_reset) - it read a's old records of them again, and a none of b's new ones
    assert {(t, p) for t, p, _ in b.read} == {(tp.topic, tp.partition) for tp in ALL - kept}
    assert all(o >= 5 for t, p, o in a.read[PARTITIONS * 5:])
    for member in (a, b):
        assert {thread for _, _, thread in member.listener.calls} == {member.thread.ident}


def test_the_revoke_listener_runs_before_the_coordinator_hands_the_partitions_over(
    cluster: MockCluster, running: list[Polled]
) -> None:
    """While a's listener runs, the coordinator has not given the revoked partitions to b: they move only
    once a's next heartbeat stops listing them (so an exactly-once loop can end its transaction first)."""
    cond = threading.Condition()
    a = Polled(cluster, "order", "a", cond)
    running.append(a)
    wait_until(cond, "a owns every partition", lambda: a.owned() == ALL, running)
    seen: list[dict[str, list[int]]] = []
    joined: list[Polled] = []

    def look(revoked: frozenset[TopicPartition]) -> None:
        # b heartbeats while a revokes: had a acknowledged already, b's answer would carry the partitions
        b_id = joined[0].consumer.group_metadata().member_id
        since = cluster.requests.next_seq()
        for _ in range(2):
            since = cluster.wait_for_request(lambda e: e.api == "ConsumerGroupHeartbeat"
                                             and e.fields.get("member_id") == b_id, since=since).seq + 1
        group = describe(cluster, "order")
        seen.append({m.client_id: sorted(p for t in m.assignment.topic_partitions for p in t.partitions)
                     for m in group.members})

    a.listener.on_revoked_do = look
    b = Polled(cluster, "order", "b", cond)
    joined.append(b)
    running.append(b)
    wait_until(cond, "b owns partitions", lambda: len(b.owned()) == 3, running)
    assert len(seen) == 1
    assert seen[0]["b"] == [], "b already had partitions while a was still revoking them"


def test_group_metadata_carries_the_member_epoch_and_fences_a_zombies_offsets(
    cluster: MockCluster, running: list[Polled]
) -> None:
    cond = threading.Condition()
    cluster.create_topic("out", partitions=1)
    a = Polled(cluster, "zombie", "a", cond)
    running.append(a)
    wait_until(cond, "a owns every partition", lambda: a.owned() == ALL, running)
    metadata = a.consumer.group_metadata()
    assert member_epochs(cluster, "zombie") == {metadata.member_id: metadata.generation_id}
    assert metadata.generation_id > 0 and metadata.group_instance_id is None
    b = Polled(cluster, "zombie", "b", cond)
    running.append(b)
    wait_until(cond, "a and b share", lambda: len(b.owned()) == 3, running)
    assert a.consumer.group_metadata().generation_id > metadata.generation_id
    with TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="zombie-out",
                               max_block_ms=10_000) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("out", b"late", partition=0)
        with pytest.raises(CommitFailedError):
            # the epoch a had before b joined: the coordinator answers ILLEGAL_GENERATION
            producer.send_offsets_to_transaction({TopicPartition(TOPIC, 0): 1}, metadata, timeout=10)
        producer.abort_transaction()
    assert cluster.committed_offsets("zombie") == {}


def test_a_static_member_leaves_with_epoch_minus_2_and_its_restart_takes_its_partitions_back(
    cluster: MockCluster, running: list[Polled]
) -> None:
    cond = threading.Condition()
    a = Polled(cluster, "static", "a", cond, group_instance_id="a")
    b = Polled(cluster, "static", "b", cond, group_instance_id="b")
    running.extend([a, b])
    wait_until(cond, "a and b share", lambda: len(a.owned()) == len(b.owned()) == 3, running)
    a_had, b_has = a.owned(), b.owned()
    b_revoked = len(b.listener.of("revoked"))
    a_member = a.consumer.group_metadata().member_id
    a.stop(close=True)  # the default for a static member: leave with -2, the instance keeps its place
    group = describe(cluster, "static")
    assert {m.instance_id: m.member_epoch for m in group.members}["a"] == -2
    again = Polled(cluster, "static", "a2", cond, group_instance_id="a")
    running.append(again)
    wait_until(cond, "the restart owns a's partitions", lambda: again.owned() == a_had, running)
    assert b.owned() == b_has and len(b.listener.of("revoked")) == b_revoked, "b gave nothing up"
    assert again.consumer.group_metadata().member_id != a_member


def test_a_dynamic_member_leaves_on_close_and_its_partitions_move_at_once(
    cluster: MockCluster, running: list[Polled]
) -> None:
    cond = threading.Condition()
    a = Polled(cluster, "leave", "a", cond)
    b = Polled(cluster, "leave", "b", cond)
    running.extend([a, b])
    wait_until(cond, "a and b share", lambda: len(a.owned()) == len(b.owned()) == 3, running)
    gone = a.owned()
    a.stop(close=True)
    assert a.listener.of("revoked")[-1] == gone, "close revokes what the member owned"
    assert len(describe(cluster, "leave").members) == 1, "left with epoch -1: removed at once"
    wait_until(cond, "b owns everything", lambda: b.owned() == ALL, running)


def test_a_fenced_member_loses_its_partitions_and_rejoins_under_the_same_member_id(
    cluster: MockCluster, running: list[Polled]
) -> None:
    cond = threading.Condition()
    a = Polled(cluster, "fenced", "a", cond)
    running.append(a)
    wait_until(cond, "a owns every partition", lambda: a.owned() == ALL, running)
    member_id = a.consumer.group_metadata().member_id
    assert cluster.remove_group_member("fenced", member_id)
    wait_until(cond, "a lost its partitions", lambda: a.listener.of("lost") == [ALL], running)
    wait_until(cond, "a owns them again", lambda: a.owned() == ALL, running)
    assert a.consumer.group_metadata().member_id == member_id, "KIP-1082: one member id for life"
    assert list(member_epochs(cluster, "fenced")) == [member_id]


def test_a_member_still_in_the_group_at_a_fenced_rejoin_leaves_first(
    cluster: MockCluster, running: list[Polled]
) -> None:
    """FENCED_MEMBER_EPOCH while the coordinator still holds the member (Kafka 4.1 fences an epoch-0
    join of a member it knows): the member leaves under its id, then joins - not a loop of fenced joins
    until the old incarnation's session runs out."""
    cond = threading.Condition()
    a = Polled(cluster, "refenced", "a", cond)
    running.append(a)
    wait_until(cond, "a owns every partition", lambda: a.owned() == ALL, running)
    epoch = a.consumer.group_metadata().generation_id
    cluster.force_rebalance("refenced")  # the group epoch moves: a's epoch-0 join is no longer accepted
    wait_until(cond, "a is in the next epoch", lambda: a.consumer.group_metadata().generation_id > epoch,
               running)
    since = cluster.requests.next_seq()
    assigned = len(a.listener.of("assigned"))
    cluster.inject_error("ConsumerGroupHeartbeat", 110)  # FENCED_MEMBER_EPOCH; the member stays in
    wait_until(cond, "a lost its partitions", lambda: a.listener.of("lost") == [ALL], running)
    wait_until(cond, "a owns them again",
               lambda: a.owned() == ALL and len(a.listener.of("assigned")) > assigned, running)
    heartbeats = [e for e in cluster.request_log[since:] if e.api == "ConsumerGroupHeartbeat"]
    fenced_joins = [e for e in heartbeats if 110 in e.error_codes and not e.injected]
    assert len(fenced_joins) == 1, "one join was fenced (the member was still in), then it left and joined"
    assert list(member_epochs(cluster, "refenced")) == [a.consumer.group_metadata().member_id]


def test_a_pattern_subscription_follows_the_matching_topics(
    cluster: MockCluster, running: list[Polled], monkeypatch: pytest.MonkeyPatch
) -> None:
    cond = threading.Condition()
    cluster.create_topic("audit-eu", partitions=2)
    cluster.create_topic("billing", partitions=1)
    write(cluster, 2, topic="audit-eu", partitions=2)
    a = Polled(cluster, "pattern", "a", cond, subscription=SubscriptionPattern("audit-.*"))
    running.append(a)
    eu = frozenset(TopicPartition("audit-eu", p) for p in range(2))
    wait_until(cond, "a owns audit-eu", lambda: a.owned() == eu, running)
    wait_until(cond, "a read audit-eu", lambda: len(a.read) == 4, running)
    assert a.consumer.subscription() == {"audit-eu"}
    cluster.create_topic("audit-us", partitions=1)
    # Kafka 4.1 resolves a group's expressions again no sooner than 10 s after the last time
    monkeypatch.setattr(cluster.state, "now_ms", lambda: int(time.time() * 1000) + 10_000)
    wait_until(cond, "a owns audit-us too",
               lambda: a.owned() == eu | {TopicPartition("audit-us", 0)}, running)
    assert a.consumer.subscription() == {"audit-eu", "audit-us"}


def test_a_new_partition_waits_for_its_stable_offset_while_the_others_keep_flowing(
    cluster: MockCluster, running: list[Polled]
) -> None:
    """A partition assigned while a transaction's offsets for it are pending (UNSTABLE_OFFSET_COMMIT,
    KIP-447: its previous owner's commit is under way) starts only once they are committed, at them - and
    meanwhile the partitions the member already reads keep delivering."""
    cond = threading.Condition()
    c = Polled(cluster, "grow", "c", cond)
    running.append(c)
    wait_until(cond, "c owns every partition", lambda: c.owned() == ALL, running)
    new = TopicPartition(TOPIC, PARTITIONS)
    with TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers,
                               transactional_id="previous-owner", max_block_ms=10_000) as previous:
        previous.init_transactions()
        previous.begin_transaction()
        pending = ConsumerGroupMetadata("grow", -1, "", None)  # an offsets-only commit, still open
        previous.send_offsets_to_transaction({new: 5}, pending, timeout=10)
        cluster.add_partitions(TOPIC, PARTITIONS + 1)
        write(cluster, 10, partitions=PARTITIONS + 1)
        wait_until(cond, "c owns the new partition", lambda: new in c.owned(), running)
        wait_until(cond, "the others delivered their records while the new one waits",
                   lambda: sum(1 for t, p, _ in c.read if p < PARTITIONS) == PARTITIONS * 10, running)
        assert not [o for t, p, o in c.read if p == PARTITIONS], "the new partition started before its offset"
        unstable = cluster.wait_for_request(lambda e: e.api == "OffsetFetch" and 88 in e.error_codes)
        previous.commit_transaction()
    since = cluster.requests.next_seq()
    wait_until(cond, "the new partition was read from its committed offset on",
               lambda: sum(1 for t, p, _ in c.read if p == PARTITIONS) == 5, running)
    assert sorted(o for t, p, o in c.read if p == PARTITIONS) == [5, 6, 7, 8, 9]
    assert unstable.seq < since, "the lookup met the pending offsets (UNSTABLE_OFFSET_COMMIT) first"
