"""KIP-848 scenarios run with real confluent-kafka consumers, on any cluster.

Why shared: each scenario runs against MockCluster (``tests/mock/test_consumer_protocol_clients.py``) and
against a real Kafka 4.1 (``tests/broker/test_consumer_protocol_broker.py``), and both must end in the same
observable states, so that the mock treats librdkafka's members as the real group coordinator does:

- :func:`run` (:data:`EXPECTED`): two ``group.protocol=consumer`` consumers share a topic of four partitions,
  one closes (leaving the group), the other takes everything; every record produced is consumed;
- :func:`run_migration` (:data:`EXPECTED_MIGRATION`): a classic consumer (``group.protocol=classic``, range)
  owns the topic, a consumer-protocol member joins - the classic group becomes a consumer group with a
  classic member in it, the broker assigns both - then leaves, and the group is classic again.

Each phase is read back with ConsumerGroupDescribe (group epoch, member epochs, assignments, state).

The consumers are driven by their own ``poll()`` calls (librdkafka heartbeats and reconciles in its own
threads, as the heartbeat interval the broker gives says); each phase ends when the group's description
shows the expected state, which is read again between two polls, bounded by ``timeout`` seconds.
"""

from __future__ import annotations

import time
from typing import Any

import attrs

from txnproducer._internal.protocol.consumer_group_describe import ConsumerGroupDescribeRequest
from txnproducer.testing.wire_client import WireClient

PARTITIONS = 4
RECORDS_PER_PHASE = 40


@attrs.frozen
class Phase:
    """A group as ConsumerGroupDescribe shows it: state, epochs and assignments by client id."""

    state: str
    group_epoch: int
    member_epochs: dict[str, int]
    assignments: dict[str, list[int]]


#: a alone; b joined (a keeps its first two partitions, b gets the two a released); a closed
EXPECTED = [
    Phase("Stable", 1, {"a": 1}, {"a": [0, 1, 2, 3]}),
    Phase("Stable", 2, {"a": 2, "b": 2}, {"a": [0, 1], "b": [2, 3]}),
    Phase("Stable", 3, {"b": 3}, {"b": [0, 1, 2, 3]}),
]


#: the classic consumer alone (a classic group: no consumer-group description); both (upgraded, the classic
#: member keeps the first two); the classic one alone again (downgraded)
EXPECTED_MIGRATION = [
    None,
    Phase("Stable", 2, {"classic": 2, "new": 2}, {"classic": [0, 1], "new": [2, 3]}),
    None,
]


def describe(bootstrap: str, group: str) -> Phase | None:
    """The group's current :class:`Phase` (asked of the broker that coordinates it), None before it exists."""
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with WireClient(host, int(port), timeout=10.0) as client:
        found = client.send(FindCoordinatorRequest[6](key_type=0, coordinator_keys=[group])).coordinators[0]
    if found.error_code:
        return None
    with WireClient(found.host, found.port, timeout=10.0) as client:
        answer = client.send(
            ConsumerGroupDescribeRequest[1](group_ids=[group], include_authorized_operations=False)
        )
    described = answer.groups[0]
    if described.error_code:
        return None
    return Phase(
        str(described.group_state),
        int(described.group_epoch),
        {m.client_id: int(m.member_epoch) for m in described.members},
        {
            m.client_id: sorted(p for t in m.assignment.topic_partitions for p in t.partitions)
            for m in described.members
        },
    )


def consumer(bootstrap: str, group: str, name: str, protocol: str = "consumer") -> Any:
    from confluent_kafka import Consumer

    classic = {
        "partition.assignment.strategy": "range",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
    }
    return Consumer(
        {
            **(classic if protocol == "classic" else {}),
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 100,
        }
    )


def produce(bootstrap: str, topic: str, tag: str) -> set[bytes]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    values = {f"{tag}-{i}".encode() for i in range(RECORDS_PER_PHASE)}
    for i, value in enumerate(sorted(values)):
        producer.produce(topic, value=value, partition=i % PARTITIONS)
    assert producer.flush(30) == 0, "the producer could not deliver the scenario's records"
    return values


def run(
    bootstrap: str, topic: str, group: str, timeout: float = 60.0
) -> tuple[list[Phase | None], set[bytes]]:
    """Play the scenario; returns each phase's description and the values produced but never consumed."""
    consumers: dict[str, Any] = {}
    consumed: set[bytes] = set()
    phases: list[Phase | None] = []

    def drive(expected: Phase) -> None:
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            for c in consumers.values():
                message = c.poll(0.05)
                if message is not None and message.error() is None:
                    consumed.add(message.value())
            seen = describe(bootstrap, group)
            if seen == expected:
                break
        phases.append(seen)

    produced = produce(bootstrap, topic, "one")
    try:
        consumers["a"] = consumer(bootstrap, group, "a")
        consumers["a"].subscribe([topic])
        drive(EXPECTED[0])
        produced |= produce(bootstrap, topic, "two")
        consumers["b"] = consumer(bootstrap, group, "b")
        consumers["b"].subscribe([topic])
        drive(EXPECTED[1])
        consumers.pop("a").close()
        produced |= produce(bootstrap, topic, "three")
        drive(EXPECTED[2])
        deadline = time.monotonic() + timeout
        while produced - consumed and time.monotonic() < deadline:
            message = consumers["b"].poll(0.1)
            if message is not None and message.error() is None:
                consumed.add(message.value())
    finally:
        for c in consumers.values():
            c.close()
    return phases, produced - consumed


def run_migration(
    bootstrap: str, topic: str, group: str, timeout: float = 60.0
) -> tuple[list[Phase | None], list[int]]:
    """Play the online migration; returns each phase's description and the classic consumer's final
    partitions."""
    consumers: dict[str, Any] = {}
    phases: list[Phase | None] = []

    def owns_all() -> bool:
        return len(consumers["classic"].assignment()) == PARTITIONS

    def drive(done: Any) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for c in consumers.values():
                c.poll(0.05)
            if done():
                break
        phases.append(describe(bootstrap, group))

    produce(bootstrap, topic, "migration")
    try:
        consumers["classic"] = consumer(bootstrap, group, "classic", "classic")
        consumers["classic"].subscribe([topic])
        drive(owns_all)
        consumers["new"] = consumer(bootstrap, group, "new")
        consumers["new"].subscribe([topic])
        drive(lambda: describe(bootstrap, group) == EXPECTED_MIGRATION[1])
        consumers.pop("new").close()
        drive(lambda: owns_all() and describe(bootstrap, group) is None)
        final = sorted(p.partition for p in consumers["classic"].assignment())
    finally:
        for c in consumers.values():
            c.close()
    return phases, final
