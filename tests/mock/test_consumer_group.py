"""Third-party consumer groups against the MockCluster's group coordinator.

Real kafka-python (and confluent-kafka) consumers, each on its own thread, join one group on a
6-partition topic. What users rely on: the coordinator's rebalances give every partition to exactly
one live member as members come and go, committed offsets are stored and read back, and a member
that stops heartbeating is dropped after its session timeout so its partitions move on.
Everything waits on a condition with a bound; short session/heartbeat settings keep it fast.

kafka-python 3.0.12 note: when a member's ``poll`` times out while its join is in flight and the
join then finishes, kafka-python can drop the finished join (``need_rejoin()`` turns False before the
task is looked at again): the member never applies its assignment, never heartbeats and is dropped by
the coordinator after the rebalance timeout. Seen with a debug log in 1 of about 10 runs under CPU
load. Each member therefore runs the guard the TransactionalProcessor ran after every poll while it was
built on kafka-python
(``rescue_lost_join``, tests/_support/kafka_python_groups.py), which asks for a new join.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.errors import KafkaError
from kafka.protocol.consumer.group import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment
from kafka.structs import TopicPartition

from tests._support.kafka_python_groups import rescue_lost_join
from txnproducer.testing import MockCluster
from txnproducer.testing.wire_client import WireClient

TOPIC = "events"
PARTITIONS = 6
PER_PARTITION = 5
ALL = frozenset(TopicPartition(TOPIC, p) for p in range(PARTITIONS))
WAIT_S = 20.0

MEMBER_ID_REQUIRED = 79
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27

# Each consumer.poll() hands work to kafka-python's IO thread; fewer, longer polls make its
# lost-join stall (see the module docstring) rarer, and rescue_lost_join repairs the rest.
POLL_MS = 500

# Fast group settings: heartbeats every 100 ms, a rebalance round bounded by 4 s.
KAFKA_PYTHON_GROUP = {
    "session_timeout_ms": 3000,
    "heartbeat_interval_ms": 100,
    "max_poll_interval_ms": 4000,
    "request_timeout_ms": 10000,
    "metadata_max_age_ms": 1000,
    "retry_backoff_ms": 50,
    "reconnect_backoff_ms": 20,
}


class Tracker:
    """What each member thread reports: its current assignment and the positions it consumed to."""

    def __init__(self, diagnostics: Callable[[], str] = lambda: "") -> None:
        self._diagnostics = diagnostics
        self.cond = threading.Condition()
        self.assignments: dict[str, frozenset[TopicPartition]] = {}
        self.consumed: dict[TopicPartition, int] = {}
        self.errors: list[BaseException] = []

    def report(
        self, name: str, assignment: frozenset[TopicPartition], positions: dict[TopicPartition, int]
    ) -> None:
        with self.cond:
            if self.assignments.get(name) != assignment:
                self.assignments[name] = assignment
            for tp, offset in positions.items():
                self.consumed[tp] = max(self.consumed.get(tp, 0), offset)
            self.cond.notify_all()

    def gone(self, name: str) -> None:
        with self.cond:
            self.assignments.pop(name, None)
            self.cond.notify_all()

    def failed(self, exc: BaseException) -> None:
        with self.cond:
            self.errors.append(exc)
            self.cond.notify_all()

    def wait_for(self, what: str, predicate: Callable[[], bool], timeout: float = WAIT_S) -> None:
        with self.cond:
            ok = self.cond.wait_for(lambda: bool(self.errors) or predicate(), timeout=timeout)
            assert not self.errors, f"a member thread failed: {self.errors!r}"
            assert ok, (
                f"timed out waiting until {what}; assignments={self.assignments}; {self._diagnostics()}"
            )

    def balanced(self, names: set[str]) -> bool:
        """Exactly ``names`` are members, each holding PARTITIONS/len(names), every partition exactly once."""
        if set(self.assignments) != names:
            return False
        parts = [self.assignments[n] for n in names]
        union: frozenset[TopicPartition] = frozenset().union(*parts)
        share = PARTITIONS // len(names)
        return (
            union == ALL and sum(len(p) for p in parts) == PARTITIONS and all(len(p) == share for p in parts)
        )


class KafkaPythonMember:
    """A kafka-python KafkaConsumer in the group, polling on its own thread and committing what it read."""

    def __init__(self, cluster: MockCluster, group: str, name: str, tracker: Tracker) -> None:
        self.name = name
        self._cluster = cluster
        self._group = group
        self._tracker = tracker
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"member-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            consumer = KafkaConsumer(
                bootstrap_servers=self._cluster.bootstrap_servers,
                group_id=self._group,
                client_id=self.name,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                **KAFKA_PYTHON_GROUP,
            )
            # Know the topic's partitions before joining, so that this member, if elected leader,
            # assigns with full metadata (kafka-python otherwise assigns nothing and rejoins).
            assert consumer.partitions_for_topic(TOPIC) == set(range(PARTITIONS))
            consumer.subscribe([TOPIC])
        except BaseException as exc:  # pragma: no cover - reported to the test thread
            self._tracker.failed(exc)
            return
        try:
            while not self._stop.is_set():
                batches = consumer.poll(timeout_ms=POLL_MS)
                rescue_lost_join(consumer)
                positions = {tp: records[-1].offset + 1 for tp, records in batches.items() if records}
                if positions:
                    # A commit racing a rebalance fails (CommitFailedError); the records come again.
                    with contextlib.suppress(KafkaError):
                        consumer.commit()
                self._tracker.report(self.name, frozenset(consumer.assignment()), positions)
        except BaseException as exc:  # pragma: no cover - reported to the test thread
            self._tracker.failed(exc)
        finally:
            consumer.close()  # sends LeaveGroup
            self._tracker.gone(self.name)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=WAIT_S)
        assert not self._thread.is_alive(), f"member {self.name} did not stop"


@contextlib.contextmanager
def seeded_cluster() -> Iterator[MockCluster]:
    """Three brokers and TOPIC with PER_PARTITION records in each partition (also used by
    test_cluster_group_faults.py)."""
    with MockCluster(num_brokers=3) as mock:
        mock.create_topic(TOPIC, partitions=PARTITIONS)
        producer = KafkaProducer(bootstrap_servers=mock.bootstrap_servers)
        for partition in range(PARTITIONS):
            for i in range(PER_PARTITION):
                producer.send(TOPIC, value=b"%d-%d" % (partition, i), partition=partition)
        producer.flush(timeout=10)
        producer.close(timeout=5)
        yield mock


@contextlib.contextmanager
def running_members() -> Iterator[list[KafkaPythonMember]]:
    """A list the test appends members to; each is stopped (and checked to stop) afterwards."""
    started: list[KafkaPythonMember] = []
    try:
        yield started
    finally:
        for member in started:
            member.stop()


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with seeded_cluster() as mock:
        yield mock


@pytest.fixture
def tracker(cluster: MockCluster) -> Tracker:
    def diagnostics() -> str:
        """The coordinator's view and the group requests, for a failure message."""
        with cluster.state.lock:
            groups = {g: cluster.state.groups.describe(g) for g in cluster.state.groups.group_ids()}
        calls = [
            (e.api, e.connection_id, e.fields.get("member_id"), e.fields.get("generation_id"), e.error_codes)
            for e in cluster.request_log
            if e.api_key in (11, 13, 14) or (e.api_key == 12 and e.error_codes)
        ]
        return f"groups={groups} group requests={calls}"

    return Tracker(diagnostics)


@pytest.fixture
def members() -> Iterator[list[KafkaPythonMember]]:
    with running_members() as started:
        yield started


def test_three_members_share_partitions_commit_and_rebalance_on_leave(
    cluster: MockCluster, tracker: Tracker, members: list[KafkaPythonMember]
) -> None:
    group = "three"
    members.append(KafkaPythonMember(cluster, group, "a", tracker))
    tracker.wait_for("a owns all partitions", lambda: tracker.balanced({"a"}))
    members.append(KafkaPythonMember(cluster, group, "b", tracker))
    tracker.wait_for("a and b split the partitions", lambda: tracker.balanced({"a", "b"}))
    members.append(KafkaPythonMember(cluster, group, "c", tracker))
    tracker.wait_for("a, b and c hold two each", lambda: tracker.balanced({"a", "b", "c"}))

    tracker.wait_for(
        "every record consumed",
        lambda: tracker.consumed == dict.fromkeys(ALL, PER_PARTITION),
    )
    end = {(TOPIC, p): PER_PARTITION for p in range(PARTITIONS)}
    tracker.wait_for("offsets committed", lambda: cluster.committed_offsets(group) == end, timeout=10)

    # b leaves cleanly: LeaveGroup, then a and c take over its partitions.
    b = members.pop(1)
    b.stop()
    assert any(e.api == "LeaveGroup" and e.fields.get("group_id") == group for e in cluster.request_log)
    tracker.wait_for("a and c split the partitions", lambda: tracker.balanced({"a", "c"}))

    while members:
        members.pop().stop()
    # The committed offsets are read back through OffsetFetch by a new client of the group.
    reader = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group, **KAFKA_PYTHON_GROUP)
    try:
        assert {tp.partition: reader.committed(tp) for tp in ALL} == dict.fromkeys(
            range(PARTITIONS), PER_PARTITION
        )
    finally:
        reader.close()
    assert any(e.api == "OffsetFetch" for e in cluster.request_log)


class RawMember:
    """A group member speaking the protocol directly (one socket), so a test can make it fall silent.

    It heartbeats every 100 ms on its own thread (rejoining when told to) until :meth:`fall_silent`;
    after that it sends nothing at all - no heartbeat, no LeaveGroup.
    """

    NAME = "raw"

    def __init__(self, cluster: MockCluster, group: str, session_timeout_ms: int, tracker: Tracker) -> None:
        self.group = group
        coordinator = cluster.coordinator_for(group, key_type="group")
        host, port = cluster.broker_address(coordinator)
        self.client = WireClient(host, port, client_id="raw", timeout=WAIT_S)
        self.session_timeout_ms = session_timeout_ms
        self.member_id = ""
        self.generation = -1
        self._tracker = tracker
        self._silent = threading.Event()
        self._thread = threading.Thread(target=self._heartbeat_loop, name="member-raw", daemon=True)

    def start(self) -> None:
        self._join_and_sync()
        self._thread.start()

    def fall_silent(self) -> None:
        self._silent.set()
        self._thread.join(timeout=WAIT_S)
        assert not self._thread.is_alive()
        self._tracker.gone(self.NAME)

    def _join_and_sync(self) -> None:
        subscription = RangePartitionAssignor.metadata({TOPIC})
        request = JoinGroupRequest(
            group_id=self.group,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=4000,
            member_id=self.member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription)],
        )
        joined = self.client.send(request, version=5)
        if joined.error_code == MEMBER_ID_REQUIRED:
            request.member_id = joined.member_id
            joined = self.client.send(request, version=5)
        assert joined.error_code == 0, joined
        self.member_id, self.generation = joined.member_id, joined.generation_id
        synced = self.client.send(
            SyncGroupRequest(
                group_id=self.group, generation_id=self.generation, member_id=self.member_id, assignments=[]
            ),
            version=3,
        )
        if synced.error_code == REBALANCE_IN_PROGRESS:
            return  # the next heartbeat says so too and we rejoin
        assert synced.error_code == 0, synced
        owned = ConsumerProtocolAssignment.decode(bytes(synced.assignment)).partitions()
        self._tracker.report(self.NAME, frozenset(owned), {})

    def _heartbeat_loop(self) -> None:
        try:
            while not self._silent.wait(0.1):  # the heartbeat interval
                error = self.heartbeat()
                if error == REBALANCE_IN_PROGRESS:
                    self._join_and_sync()
                elif error != 0:
                    raise AssertionError(f"raw member heartbeat failed with error {error}")
        except BaseException as exc:  # pragma: no cover - reported to the test thread
            self._tracker.failed(exc)

    def heartbeat(self) -> int:
        request = HeartbeatRequest(
            group_id=self.group, generation_id=self.generation, member_id=self.member_id
        )
        return int(self.client.send(request, version=3).error_code)

    def close(self) -> None:
        self.client.close()


def test_member_that_stops_heartbeating_is_removed_after_its_session_timeout(
    cluster: MockCluster, tracker: Tracker, members: list[KafkaPythonMember]
) -> None:
    group = "silent"
    members.append(KafkaPythonMember(cluster, group, "a", tracker))
    members.append(KafkaPythonMember(cluster, group, "b", tracker))
    tracker.wait_for("a and b split the partitions", lambda: tracker.balanced({"a", "b"}))

    raw = RawMember(cluster, group, session_timeout_ms=600, tracker=tracker)
    try:
        raw.start()
        tracker.wait_for("a, b and the raw member hold two each", lambda: tracker.balanced({"a", "b", "raw"}))
        silent_member = raw.member_id
        raw.fall_silent()
        # Nothing more from the raw member: its session (600 ms) runs out and a, b take over.
        tracker.wait_for("a and b take the silent member's partitions", lambda: tracker.balanced({"a", "b"}))
        description = cluster.state.groups.describe(group)
        assert description is not None
        assert silent_member not in {m.member_id for m in description.members}
        assert raw.heartbeat() == UNKNOWN_MEMBER_ID
        assert not any(
            e.api == "LeaveGroup" and e.fields.get("group_id") == group for e in cluster.request_log
        )
    finally:
        raw.close()


def test_confluent_kafka_consumer_joins_a_kafka_python_group(
    cluster: MockCluster, tracker: Tracker, members: list[KafkaPythonMember]
) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    group = "mixed"
    members.append(KafkaPythonMember(cluster, group, "a", tracker))
    tracker.wait_for("a owns all partitions", lambda: tracker.balanced({"a"}))

    stop = threading.Event()

    def run_confluent() -> None:
        consumer: Any = confluent_kafka.Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": group,
                "client.id": "ck",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 3000,
                "heartbeat.interval.ms": 100,
                "max.poll.interval.ms": 4000,
                "partition.assignment.strategy": "range",
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        try:
            consumer.subscribe([TOPIC])
            while not stop.is_set():
                consumer.poll(0.1)
                owned = frozenset(TopicPartition(tp.topic, tp.partition) for tp in consumer.assignment())
                tracker.report("ck", owned, {})
        except BaseException as exc:  # pragma: no cover - reported to the test thread
            tracker.failed(exc)
        finally:
            consumer.close()
            tracker.gone("ck")

    thread = threading.Thread(target=run_confluent, name="member-ck", daemon=True)
    thread.start()
    try:
        tracker.wait_for(
            "a and the confluent consumer split the partitions", lambda: tracker.balanced({"a", "ck"})
        )
    finally:
        stop.set()
        thread.join(timeout=WAIT_S)
    assert not thread.is_alive()
    tracker.wait_for("a owns all partitions again", lambda: tracker.balanced({"a"}))
