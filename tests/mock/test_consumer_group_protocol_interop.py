"""Our consumer-protocol member and confluent-kafka's (librdkafka 2.12+, ``group.protocol=consumer``) in
one KIP-848 group on MockCluster.

What a user migrating a fleet relies on: members of both clients share the partitions the coordinator
assigns, hand them over when one leaves, and between them read every record - ours starting the
partitions librdkafka gave up at the offsets it committed (our consumer commits nothing itself: its
offsets go in transactions, so what it read before a partition moved is read again by librdkafka).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.consumer_protocol import describe
from txnproducer import TransactionalConsumer
from txnproducer.testing import MockCluster

confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "mixed"
PARTITIONS = 4
PER_PARTITION = 10
WAIT_S = 30.0


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    config = {"group.consumer.heartbeat.interval.ms": 100, "group.consumer.session.timeout.ms": 6000}
    with MockCluster(num_brokers=1, consumer_group_config=config) as mock:
        mock.create_topic(TOPIC, partitions=PARTITIONS)
        yield mock


def produce(cluster: MockCluster, start: int) -> set[bytes]:
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers})
    values = set()
    for p in range(PARTITIONS):
        for i in range(start, start + PER_PARTITION):
            value = b"%d-%d" % (p, i)
            values.add(value)
            producer.produce(TOPIC, value=value, partition=p)
    assert producer.flush(30) == 0
    return values


def test_our_member_and_librdkafkas_share_a_group_and_read_each_record_once(cluster: MockCluster) -> None:
    written = produce(cluster, 0)
    ours_read: list[bytes] = []
    lock = threading.Condition()
    stop = threading.Event()
    ours = TransactionalConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="mixed",
                                 client_id="ours", group_protocol="consumer", auto_offset_reset="earliest",
                                 fetch_max_wait_ms=50)
    ours.subscribe([TOPIC])
    failures: list[BaseException] = []

    def poll_ours() -> None:
        try:
            while not stop.is_set():
                records = ours.poll(0.05)
                with lock:
                    ours_read.extend(r.value for r in records)
                    lock.notify_all()
        except BaseException as exc:  # reported by the test thread
            failures.append(exc)

    thread = threading.Thread(target=poll_ours, daemon=True)
    thread.start()
    theirs = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": "mixed", "group.protocol": "consumer",
        "client.id": "theirs", "auto.offset.reset": "earliest", "enable.auto.commit": True,
        "auto.commit.interval.ms": 100})
    theirs_read: list[bytes] = []
    try:
        theirs.subscribe([TOPIC])

        def drive(what: str, done: Any) -> None:
            deadline = time.monotonic() + WAIT_S
            while not done():
                assert not failures, failures
                assert time.monotonic() < deadline, f"timed out: {what}: {describe(cluster, 'mixed')}"
                message = theirs.poll(0.05)
                if message is not None and message.error() is None:
                    theirs_read.append(message.value())

        def shares() -> dict[str, int]:
            return {m.client_id: sum(len(t.partitions) for t in m.assignment.topic_partitions)
                    for m in describe(cluster, "mixed").members}

        drive("the two share the partitions", lambda: shares() == {"ours": 2, "theirs": 2}
              and len(ours.assignment()) == 2 and len(theirs.assignment()) == 2)
        written |= produce(cluster, PER_PARTITION)
        drive("every record is read", lambda: len(ours_read) + len(theirs_read) >= len(written))
        theirs_partitions = {tp.partition for tp in theirs.assignment()}
        written |= produce(cluster, 2 * PER_PARTITION)
        drive("librdkafka read its share of the last records",
              lambda: sum(1 for v in theirs_read if int(v.split(b"-")[1]) >= 2 * PER_PARTITION)
              == PER_PARTITION * len(theirs_partitions))
    finally:
        theirs.close()  # leaves the group, committing what it read
    with lock:
        read_before_close = len(ours_read)
    with lock:  # ours polls on its thread and notifies after each poll
        assert lock.wait_for(lambda: failures or len(ours.assignment()) == PARTITIONS, WAIT_S), (
            f"ours did not take every partition: {ours.assignment()}")
    assert not failures, failures
    final = produce(cluster, 3 * PER_PARTITION)
    written |= final
    with lock:
        assert lock.wait_for(lambda: failures or set(final) <= set(ours_read), WAIT_S), "ours missed the last"
    stop.set()
    thread.join(WAIT_S)
    ours.close(5)
    assert set(ours_read) | set(theirs_read) == written, "every record was read"
    after = [v for v in ours_read[read_before_close:] if int(v.split(b"-")[0]) in theirs_partitions]
    assert sorted(after) == sorted(v for v in final if int(v.split(b"-")[0]) in theirs_partitions), (
        "ours started librdkafka's partitions at the offsets it committed, not before")
