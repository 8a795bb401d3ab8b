"""Our GroupMember in one group with kafka-python's KafkaConsumer and confluent-kafka's Consumer.

What a user relies on when moving a fleet over one instance at a time: whoever leads - our member
or another client - the group agrees on one assignment (the "range" protocol every client offers),
every partition has exactly one owner, and members come and go without breaking it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.structs import TopicPartition

from tests._support.group_members import FAST, make_member
from tests.mock.test_consumer_group import (
    TOPIC,
    KafkaPythonMember,
    Tracker,
    running_members,
    seeded_cluster,
)
from txnproducer.testing import MockCluster

confluent_kafka = pytest.importorskip("confluent_kafka")


class TrackedHooks:
    """Reports our member's assignment to the test's Tracker (as the other members' threads do)."""

    def __init__(self, tracker: Tracker, name: str) -> None:
        self._tracker = tracker
        self._name = name

    def on_revoke(self, partitions: frozenset[TopicPartition]) -> None:
        self._tracker.report(self._name, frozenset(), {})

    def on_assign(self, partitions: frozenset[TopicPartition]) -> None:
        self._tracker.report(self._name, partitions, {})

    def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._tracker.report(self._name, frozenset(), {})


class OurMember:
    def __init__(self, cluster: MockCluster, group: str, tracker: Tracker) -> None:
        self._tracker = tracker
        self.member = make_member(cluster, group, "ours", TrackedHooks(tracker, "ours"))
        self.member.subscribe([TOPIC])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="member-ours", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.wait(0.02):
                self.member.poll(time.monotonic() + 0.1)
        except BaseException as exc:  # pragma: no cover - reported to the test thread
            self._tracker.failed(exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=20)
        self.member.close(5)
        self._tracker.gone("ours")


class ConfluentMember:
    def __init__(self, cluster: MockCluster, group: str, tracker: Tracker) -> None:
        self._cluster = cluster
        self._group = group
        self._tracker = tracker
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="member-ck", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        consumer: Any = confluent_kafka.Consumer({
            "bootstrap.servers": self._cluster.bootstrap_servers, "group.id": self._group, "client.id": "ck",
            "enable.auto.commit": False, "session.timeout.ms": FAST["session_timeout_ms"],
            "heartbeat.interval.ms": FAST["heartbeat_interval_ms"],
            "max.poll.interval.ms": FAST["max_poll_interval_ms"],
            "partition.assignment.strategy": "range,roundrobin", "topic.metadata.refresh.interval.ms": 1000,
        })
        try:
            consumer.subscribe([TOPIC])
            while not self._stop.is_set():
                consumer.poll(0.1)
                owned = frozenset(TopicPartition(tp.topic, tp.partition) for tp in consumer.assignment())
                self._tracker.report("ck", owned, {})
        except BaseException as exc:  # pragma: no cover - reported to the test thread
            self._tracker.failed(exc)
        finally:
            consumer.close()
            self._tracker.gone("ck")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=20)


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with seeded_cluster() as mock:
        yield mock


@pytest.mark.parametrize("leader", ["ours", "kafka-python"])
def test_a_mixed_group_agrees_on_one_assignment_whoever_leads(cluster: MockCluster, leader: str) -> None:
    group = f"mixed-{leader}"
    tracker = Tracker()
    ours: OurMember | None = None
    ck: ConfluentMember | None = None
    with running_members() as kafka_python:
        try:
            if leader == "ours":
                ours = OurMember(cluster, group, tracker)
                tracker.wait_for("our member owns every partition", lambda: tracker.balanced({"ours"}))
                kafka_python.append(KafkaPythonMember(cluster, group, "kp", tracker))
            else:
                kafka_python.append(KafkaPythonMember(cluster, group, "kp", tracker))
                tracker.wait_for("kafka-python owns every partition", lambda: tracker.balanced({"kp"}))
                ours = OurMember(cluster, group, tracker)
            tracker.wait_for("two members split", lambda: tracker.balanced({"ours", "kp"}))
            ck = ConfluentMember(cluster, group, tracker)
            tracker.wait_for("three clients hold two partitions each",
                             lambda: tracker.balanced({"ours", "kp", "ck"}))
            with cluster.state.lock:
                description = cluster.state.groups.describe(group)
            assert description is not None and description.protocol_name == "range"
            assert len({m.client_id for m in description.members}) == 3

            ck.stop()
            ck = None
            tracker.wait_for("ours and kafka-python split again", lambda: tracker.balanced({"ours", "kp"}))
        finally:
            if ck is not None:
                ck.stop()
            if ours is not None:
                ours.stop()
