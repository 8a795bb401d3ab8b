"""TransactionalConsumer in a consumer group (``subscribe``) against MockCluster, with our own group member.

What a user writing an exactly-once loop relies on: consumers of one group split a topic's partitions and
read each committed record once; a newly assigned partition starts at the group's committed offset; the
listener's callbacks run on the polling thread, ``on_partitions_revoked`` before the member's JoinGroup
reaches the coordinator (so a loop can abort its transaction before the partitions move) and
``on_partitions_lost`` when the member was dropped; ``group_metadata()`` fences a zombie's offsets
(KIP-447); ``committed()`` and ``seek_to_committed()`` rewind after an abort; ``close()`` leaves the group
as a dynamic member and stays in it as a static one, whose restart gets its partitions back without a
rebalance; ``poll(0)`` in a loop gets there too; a setting or call the consumer cannot honour is a typed
error. Consumers poll on threads of their own; tests wait on conditions and on the request log.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from txnproducer import (
    CommitFailedError,
    ConfigError,
    IllegalStateError,
    OffsetAndMetadata,
    TopicPartition,
    TransactionalConsumer,
    TransactionalProducer,
)
from txnproducer.testing import MockCluster

TOPIC = "orders"
PARTITIONS = 6
ALL = frozenset(TopicPartition(TOPIC, p) for p in range(PARTITIONS))
WAIT_S = 20.0
FAST = {
    "session_timeout_ms": 3000,
    "heartbeat_interval_ms": 100,
    "max_poll_interval_ms": 6000,
    "retry_backoff_ms": 20,
    "retry_backoff_max_ms": 200,
    "request_timeout_ms": 5000,
    "fetch_max_wait_ms": 50,
    "auto_offset_reset": "earliest",
}


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3) as mock:
        mock.create_topic(TOPIC, partitions=PARTITIONS)
        mock.create_topic("out", partitions=1)
        yield mock


def write(cluster: MockCluster, per_partition: int, txn_id: str = "writer") -> None:
    """``per_partition`` committed records in each partition: ``b"<p>-<i>"``."""
    with TransactionalProducer(
        bootstrap_servers=cluster.bootstrap_servers, transactional_id=txn_id, max_block_ms=10_000
    ) as producer:
        producer.init_transactions()
        with producer.transaction():
            for p in range(PARTITIONS):
                for i in range(per_partition):
                    producer.send(TOPIC, b"%d-%d" % (p, i), partition=p)


class Listener:
    """Records each callback with the thread it ran on and the request log's position."""

    def __init__(self, cluster: MockCluster, cond: threading.Condition, lost: bool = True) -> None:
        self.cluster = cluster
        self.cond = cond
        self.calls: list[tuple[str, frozenset[TopicPartition], int, int]] = []  # kind, tps, thread, seq
        self.on_revoked_do: Callable[[], None] | None = None
        if not lost:
            self.on_partitions_lost = None  # type: ignore[assignment]

    def _record(self, kind: str, partitions: list[TopicPartition]) -> None:
        with self.cond:
            self.calls.append(
                (kind, frozenset(partitions), threading.get_ident(), self.cluster.requests.next_seq())
            )
            self.cond.notify_all()

    def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
        if self.on_revoked_do is not None:
            self.on_revoked_do()
        self._record("revoked", partitions)

    def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
        self._record("assigned", partitions)

    def on_partitions_lost(self, partitions: list[TopicPartition]) -> None:
        self._record("lost", partitions)

    def kinds(self) -> list[str]:
        with self.cond:
            return [c[0] for c in self.calls]


class Polled:
    """A subscribed consumer polled on its own thread; what it read, kept by partition."""

    def __init__(
        self,
        cluster: MockCluster,
        group: str,
        name: str,
        cond: threading.Condition,
        listener_lost: bool = True,
        **settings: Any,
    ) -> None:
        self.name = name
        self.cond = cond
        self.consumer = TransactionalConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            group_id=group,
            client_id=name,
            **{**FAST, **settings},
        )
        self.listener = Listener(cluster, cond, lost=listener_lost)
        self.consumer.subscribe([TOPIC], listener=self.listener)
        self.read: list[tuple[int, int, bytes]] = []  # partition, offset, value
        self.errors: list[BaseException] = []
        self.paused = threading.Event()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"consumer-{name}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.paused.is_set():
                self._stop.wait(0.02)
                continue
            try:
                records = self.consumer.poll(0.05)
            except BaseException as exc:
                with self.cond:
                    self.errors.append(exc)
                    self.cond.notify_all()
                return
            with self.cond:
                self.read.extend((r.partition, r.offset, r.value) for r in records)
                self.cond.notify_all()

    def owned(self) -> frozenset[TopicPartition]:
        return frozenset(self.consumer.assignment())

    def stop(self, close: bool = True, **close_args: Any) -> None:
        self._stop.set()
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive()
        if close:
            self.consumer.close(5, **close_args)


def wait_until(
    cond: threading.Condition, what: str, predicate: Callable[[], bool], polled: list[Polled]
) -> None:
    deadline = time.monotonic() + WAIT_S
    with cond:
        while not predicate():
            failed = [p.errors for p in polled if p.errors]
            assert not failed, f"a consumer failed while waiting until {what}: {failed!r}"
            remaining = deadline - time.monotonic()
            assert remaining > 0, (
                f"timed out waiting until {what}; owned: {[sorted(p.owned()) for p in polled]}"
            )
            cond.wait(min(remaining, 0.1))


@pytest.fixture
def running() -> Iterator[list[Polled]]:
    started: list[Polled] = []
    yield started
    for p in started:
        if p.thread.is_alive():
            p.stop(close=True, leave_group=False)


def test_two_consumers_split_the_partitions_and_read_each_record_once(
    cluster: MockCluster, running: list[Polled]
) -> None:
    cond = threading.Condition()
    a = Polled(cluster, "split", "a", cond)
    running.append(a)
    wait_until(cond, "a owns every partition", lambda: a.owned() == ALL, running)
    b = Polled(cluster, "split", "b", cond)
    running.append(b)
    wait_until(
        cond,
        "a and b split the partitions",
        lambda: len(a.owned()) == len(b.owned()) == 3 and a.owned() | b.owned() == ALL,
        running,
    )
    write(cluster, 5)
    wait_until(cond, "every record is read", lambda: len(a.read) + len(b.read) >= PARTITIONS * 5, running)
    everything = sorted(a.read + b.read)
    assert everything == sorted((p, i, b"%d-%d" % (p, i)) for p in range(PARTITIONS) for i in range(5))
    assert {p for p, _, _ in a.read} == {tp.partition for tp in a.owned()}
    # every listener call ran on the consumer's polling thread, inside poll()
    for member in (a, b):
        assert {thread for _, _, thread, _ in member.listener.calls} == {member.thread.ident}
    # eager: everything a owned is revoked before the group rebalances, then the new share assigned
    assert a.listener.kinds()[:3] == ["assigned", "revoked", "assigned"]
    assert [c[1] for c in a.listener.calls[:3]] == [ALL, ALL, a.owned()]
    assert b.consumer.subscription() == {TOPIC}


def test_the_revoke_listener_runs_before_the_members_join_group(
    cluster: MockCluster, running: list[Polled]
) -> None:
    """An exactly-once loop aborts its open transaction in on_partitions_revoked: that must happen before
    the coordinator can give the partitions to anyone, i.e. before this member's JoinGroup."""
    cond = threading.Condition()
    a = Polled(cluster, "ordered", "a", cond)
    running.append(a)
    wait_until(cond, "a owns every partition", lambda: a.owned() == ALL, running)
    member_id = a.consumer.group_metadata().member_id
    revoked_at: list[int] = []
    a.listener.on_revoked_do = lambda: revoked_at.append(cluster.requests.next_seq())
    since = cluster.requests.next_seq()
    running.append(Polled(cluster, "ordered", "b", cond))
    rejoin = cluster.wait_for_request(
        lambda e: e.api == "JoinGroup" and e.fields.get("member_id") == member_id, timeout=WAIT_S, since=since
    )
    wait_until(cond, "a's revoke listener returned", lambda: bool(a.listener.calls[1:]), running)
    revoke = a.listener.calls[1]
    assert revoke[0] == "revoked" and revoke[1] == ALL and revoked_at
    assert revoked_at[0] <= revoke[3] <= rejoin.seq, (revoked_at, revoke, rejoin.seq)


def test_newly_assigned_partitions_start_at_the_committed_offsets(cluster: MockCluster) -> None:
    write(cluster, 5)
    with TransactionalProducer(
        bootstrap_servers=cluster.bootstrap_servers, transactional_id="committer", max_block_ms=10_000
    ) as producer:
        producer.init_transactions()
        with producer.transaction():
            producer.send_offsets_to_transaction(
                {TopicPartition(TOPIC, 0): 3, TopicPartition(TOPIC, 4): 5}, "starts"
            )
    cond = threading.Condition()
    polled = [Polled(cluster, "starts", "a", cond)]
    try:
        wait_until(cond, "the rest is read", lambda: len(polled[0].read) >= PARTITIONS * 5 - 3 - 5, polled)
        firsts = {
            p: min(o for q, o, _ in polled[0].read if q == p) for p in {q for q, _, _ in polled[0].read}
        }
        assert firsts == {0: 3, 1: 0, 2: 0, 3: 0, 5: 0}  # partition 4's committed offset is its end
        committed = polled[0].consumer.committed([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)], 5)
        assert committed == {
            TopicPartition(TOPIC, 0): OffsetAndMetadata(3, "", -1),
            TopicPartition(TOPIC, 1): None,
        }
    finally:
        polled[0].stop()


def test_group_metadata_fences_a_zombies_offsets(cluster: MockCluster, running: list[Polled]) -> None:
    """KIP-447 through the consumer's API: offsets sent with the metadata of a generation the group has
    left are refused (CommitFailedError), those with the current one commit."""
    cond = threading.Condition()
    a = Polled(cluster, "fenced", "a", cond)
    running.append(a)
    wait_until(cond, "a owns every partition", lambda: a.owned() == ALL, running)
    before = a.consumer.group_metadata()
    assert before.generation_id >= 1 and before.member_id and before.group_id == "fenced"
    running.append(Polled(cluster, "fenced", "b", cond))
    wait_until(
        cond,
        "a is in a newer generation",
        lambda: len(a.owned()) == 3 and a.consumer.group_metadata().generation_id > before.generation_id,
        running,
    )
    tp = next(iter(a.owned()))
    with TransactionalProducer(
        bootstrap_servers=cluster.bootstrap_servers, transactional_id="zombie", max_block_ms=10_000
    ) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("out", b"x")
        with pytest.raises(CommitFailedError):
            producer.send_offsets_to_transaction({tp: 1}, before, timeout=10)
        producer.abort_transaction()
        with producer.transaction():
            producer.send_offsets_to_transaction({tp: 1}, a.consumer.group_metadata(), timeout=10)
    assert cluster.committed_offsets("fenced") == {(tp.topic, tp.partition): 1}


def test_seek_to_committed_rewinds_after_an_aborted_transaction(cluster: MockCluster) -> None:
    write(cluster, 4)
    consumer = TransactionalConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="rewind", **FAST)
    producer = TransactionalProducer(
        bootstrap_servers=cluster.bootstrap_servers, transactional_id="rewinder", max_block_ms=10_000
    )
    try:
        producer.init_transactions()
        consumer.subscribe(TOPIC)
        first = read_all(consumer, PARTITIONS * 4)
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            {tp: consumer.position(tp) for tp in consumer.assignment()}, consumer.group_metadata()
        )
        producer.abort_transaction()
        assert consumer.poll(0.2) == []  # read to the end
        consumer.seek_to_committed()  # nothing committed: auto_offset_reset (earliest)
        assert sorted(read_all(consumer, PARTITIONS * 4)) == sorted(first)
        with producer.transaction():
            producer.send_offsets_to_transaction({TopicPartition(TOPIC, 2): 2}, consumer.group_metadata())
        consumer.seek_to_committed([TopicPartition(TOPIC, 2)])
        assert [(p, o) for p, o, _ in read_all(consumer, 2)] == [(2, 2), (2, 3)]
    finally:
        producer.close(5)
        consumer.close(5)


def read_all(consumer: TransactionalConsumer, count: int) -> list[tuple[int, int, bytes]]:
    out: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + WAIT_S
    while len(out) < count:
        assert time.monotonic() < deadline, f"read {len(out)} of {count}"
        out.extend((r.partition, r.offset, r.value or b"") for r in consumer.poll(0.1))
    return out


def test_a_dynamic_member_leaves_on_close_and_a_static_one_stays(
    cluster: MockCluster, running: list[Polled]
) -> None:
    cond = threading.Condition()
    dynamic = Polled(cluster, "closing-d", "d", cond)
    static = Polled(cluster, "closing-s", "s", cond, group_instance_id="s-1", session_timeout_ms=30_000)
    running.extend([dynamic, static])
    wait_until(
        cond, "both own their topic", lambda: dynamic.owned() == ALL and static.owned() == ALL, running
    )
    generation = static.consumer.group_metadata().generation_id
    # the listener may still use the consumer and its group while close() revokes (to end a transaction)
    positions: dict[TopicPartition, Any] = {}

    def look_up() -> None:
        owned = dynamic.consumer.assignment()
        positions.update({tp: dynamic.consumer.position(tp, 5) for tp in owned})
        positions["committed"] = dynamic.consumer.committed(owned, 5)

    dynamic.listener.on_revoked_do = look_up
    since = cluster.requests.next_seq()
    dynamic.stop()
    assert positions == {**dict.fromkeys(ALL, 0), "committed": dict.fromkeys(ALL)}
    static.stop()
    leaves = [e.fields.get("group_id") for e in cluster.request_log[since:] if e.api == "LeaveGroup"]
    assert leaves == ["closing-d"]
    assert dynamic.listener.kinds()[-1] == static.listener.kinds()[-1] == "revoked"  # close revokes first
    with cluster.state.lock:
        kept = cluster.state.groups.describe("closing-s")
        gone = cluster.state.groups.describe("closing-d")
    assert kept is not None and [m.group_instance_id for m in kept.members] == ["s-1"]
    assert gone is None or not gone.members

    # the static member's restart takes its place and partitions back at once: no rebalance
    restarted = Polled(
        cluster, "closing-s", "s-again", cond, group_instance_id="s-1", session_timeout_ms=30_000
    )
    running.append(restarted)
    wait_until(cond, "the restarted member owns its partitions", lambda: restarted.owned() == ALL, running)
    assert restarted.consumer.group_metadata().generation_id == generation


def test_a_dropped_member_calls_on_partitions_lost_not_revoked(
    cluster: MockCluster, running: list[Polled]
) -> None:
    cond = threading.Condition()
    with_lost = Polled(cluster, "dropped-a", "a", cond)
    revoked_only = Polled(cluster, "dropped-b", "b", cond, listener_lost=False)
    running.extend([with_lost, revoked_only])
    wait_until(
        cond,
        "both own their topic",
        lambda: with_lost.owned() == ALL and revoked_only.owned() == ALL,
        running,
    )
    for polled, group in ((with_lost, "dropped-a"), (revoked_only, "dropped-b")):
        polled.paused.set()  # between two polls, as a loop busy with its batch
        member_id = polled.consumer.group_metadata().member_id
        assert cluster.remove_group_member(group, member_id)
        cluster.wait_for_request(
            lambda e, m=member_id: e.fields.get("member_id") == m and 25 in e.error_codes, timeout=WAIT_S
        )  # UNKNOWN_MEMBER_ID: the heartbeat learns it
        polled.paused.clear()
    wait_until(
        cond,
        "both rejoined",
        lambda: (
            with_lost.listener.kinds()[-2:] == ["lost", "assigned"]
            and revoked_only.listener.kinds()[-2:] == ["revoked", "assigned"]
        ),
        running,
    )
    assert with_lost.listener.calls[-2][1] == ALL and "lost" not in revoked_only.listener.kinds()
    assert with_lost.owned() == revoked_only.owned() == ALL


def test_polling_with_no_timeout_reaches_the_committed_offsets(cluster: MockCluster) -> None:
    """poll(0) gives every step one look: the committed-offset lookup of a newly assigned partition must
    carry over from poll to poll (an answer that arrives after one poll returned is taken by the next)
    instead of starting again each time and never finishing."""
    write(cluster, 3)
    consumer = TransactionalConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="zero", **FAST)
    try:
        consumer.subscribe([TOPIC])
        records: list[Any] = []
        deadline = time.monotonic() + WAIT_S
        while len(records) < PARTITIONS * 3:
            assert time.monotonic() < deadline, (
                f"poll(0) read {len(records)} records; {consumer.assignment()}"
            )
            records.extend(consumer.poll(0))
            time.sleep(0.002)  # a loop doing other work between polls
        fetches = [e for e in cluster.request_log if e.api == "OffsetFetch"]  # only this consumer fetches
        assert 1 <= len(fetches) <= 3, len(fetches)
    finally:
        consumer.close(5)


def test_calls_the_consumer_cannot_honour_are_typed_errors(cluster: MockCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    with TransactionalConsumer(bootstrap_servers=bootstrap) as no_group:
        with pytest.raises(ConfigError, match="group_id"):
            no_group.subscribe([TOPIC])
        with pytest.raises(ConfigError, match="group_id"):
            no_group.group_metadata()
        with pytest.raises(ConfigError, match="group_id"):
            no_group.committed([TopicPartition(TOPIC, 0)])
        with pytest.raises(ConfigError, match="group_id"):
            no_group.seek_to_committed()
    with pytest.raises(ConfigError, match="heartbeat_interval_ms"):
        TransactionalConsumer(
            bootstrap_servers=bootstrap, group_id="g", heartbeat_interval_ms=5000, session_timeout_ms=5000
        )
    with pytest.raises(ConfigError, match=r"partition\.assignment\.strategy"):
        TransactionalConsumer(
            **{
                "bootstrap.servers": bootstrap,
                "group.id": "g",
                "partition.assignment.strategy": "cooperative-sticky",
            }
        )
    with TransactionalConsumer(bootstrap_servers=bootstrap, group_id="g") as consumer:
        with pytest.raises(ConfigError, match="listener"):
            consumer.subscribe([TOPIC], listener=object())  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="topic names"):
            consumer.subscribe([])
        consumer.assign([TopicPartition(TOPIC, 0)])
        with pytest.raises(IllegalStateError, match="assign"):
            consumer.subscribe([TOPIC])
        # assigned with a group: generation -1 and no member id, as Java's
        metadata = consumer.group_metadata()
        assert (metadata.group_id, metadata.generation_id, metadata.member_id) == ("g", -1, "")
    with TransactionalConsumer(bootstrap_servers=bootstrap, group_id="g") as consumer:
        consumer.subscribe([TOPIC])
        with pytest.raises(IllegalStateError, match="subscribe"):
            consumer.assign([TopicPartition(TOPIC, 0)])


def test_a_listener_exception_reaches_the_poll_caller(cluster: MockCluster) -> None:
    class Failing:
        def on_partitions_revoked(self, partitions: list[TopicPartition]) -> None:
            pass

        def on_partitions_assigned(self, partitions: list[TopicPartition]) -> None:
            raise KeyError("the application's own bug")

    with TransactionalConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="raising", **FAST) as c:
        c.subscribe([TOPIC], listener=Failing())
        deadline = time.monotonic() + WAIT_S
        with pytest.raises(KeyError, match="own bug"):
            while time.monotonic() < deadline:
                c.poll(0.1)
        assert c.assignment() == ALL  # the assignment stands; the next poll goes on


def test_a_revoke_listener_that_raises_still_gives_the_partitions_up(
    cluster: MockCluster, running: list[Polled]
) -> None:
    """Java's onJoinPrepare: the revocation completes even when the listener throws - the exception
    reaches the poll caller, the partitions are no longer owned (nothing of theirs is handed out), and
    the next poll rejoins, so that the group can move on."""
    cond = threading.Condition()
    a = Polled(cluster, "revoke-raises", "a", cond)
    running.append(a)
    wait_until(cond, "a owns every partition", lambda: a.owned() == ALL, running)

    def fail() -> None:
        raise KeyError("the application's own bug")

    a.listener.on_revoked_do = fail
    b = Polled(cluster, "revoke-raises", "b", cond)
    running.append(b)
    deadline = time.monotonic() + WAIT_S
    with cond:
        while not a.errors:
            assert time.monotonic() < deadline, "a's revoke listener was not called"
            cond.wait(0.1)
    a.thread.join(WAIT_S)
    assert isinstance(a.errors[0], KeyError)
    assert a.owned() == frozenset(), "the revoked partitions are given up although the listener raised"
    a.listener.on_revoked_do = None
    try:
        while not (a.owned() and b.owned() and a.owned() | b.owned() == ALL and not a.owned() & b.owned()):
            assert time.monotonic() < deadline, f"no split: a {sorted(a.owned())}, b {sorted(b.owned())}"
            assert not b.errors, b.errors
            a.consumer.poll(0.05)  # a rejoins: the group's rebalance completes
    finally:
        a.consumer.close(5)


def test_an_assignment_replaces_the_one_before(cluster: MockCluster) -> None:
    """The member's assign hook makes its partitions the assignment (the Java assignFromSubscribed): a
    partition not in it is dropped even if no revocation came first."""
    tp = [TopicPartition(TOPIC, p) for p in range(3)]
    with TransactionalConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="replace", **FAST) as c:
        c.subscribe([TOPIC])
        c.on_assign([tp[0], tp[1]])
        c.on_assign([tp[1], tp[2]])
        assert c.assignment() == {tp[1], tp[2]}
