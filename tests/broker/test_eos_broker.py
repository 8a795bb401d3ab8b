"""Exactly-once consume-transform-produce against a real Apache Kafka broker (issue 4, criterion 1).

The scenario of tests/mock/test_eos_pipeline.py at the same scale (12,000 inputs on 6
partitions; about 10 s, the real broker's 6 s minimum session timeout included): two
TransactionalProcessor instances in one group, one killed mid-transaction (outputs written and
offsets added, then connections dropped: no commit, no abort, no LeaveGroup) and restarted with
the same transactional id, and a third instance joining to force another rebalance. What users
rely on: a read_committed consumer of the output sees every input exactly once, in input order per
input partition, and the group's committed offsets end at the input end offsets. The transaction
version is the broker's (``KAFKA_TRANSACTION_VERSION=1`` formats it with TV1).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.admin.transactions import DescribeTransactionsRequest
from kafka.structs import TopicPartition

from txnproducer.eos import OutputRecord, TransactionalProcessor
from txnproducer.testing.wire_client import WireClient

PARTITIONS = 6
TOTAL = 12_000
WAIT_S = 60.0

# The real broker refuses session timeouts below group.min.session.timeout.ms (6 s); a killed
# member therefore holds its partitions for up to 6 s before the coordinator drops it.
CONSUMER = {
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 500,
    "max_poll_interval_ms": 20000,
    "request_timeout_ms": 30000,
    "metadata_max_age_ms": 5000,
    "retry_backoff_ms": 50,
    "reconnect_backoff_ms": 20,
    "fetch_max_wait_ms": 50,
}
PRODUCER = {"linger_ms": 2, "transaction_timeout_ms": 30000, "max_block_ms": 30000}


def _fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class BrokerPipeline:
    """Runs processor instances on threads against a real broker; the test waits on what they
    committed (tracked from ``on_commit``, so waiting needs no polling of the broker)."""

    def __init__(self, bootstrap: str, in_topic: str, out_topic: str) -> None:
        self.bootstrap = bootstrap
        self.in_topic = in_topic
        self.out_topic = out_topic
        self.group = _fresh("eos-group")
        self.cond = threading.Condition()
        self.errors: list[BaseException] = []
        self.threads: dict[str, threading.Thread] = {}
        self.processors: dict[str, TransactionalProcessor] = {}
        self.committed: dict[TopicPartition, int] = {}

    def transform(self, record: Any) -> list[OutputRecord]:
        """One output per input, on the output partition of the same number (keeps per-input
        order), carrying where it came from so the test can check exactly-once."""
        origin = f"{record.partition}:{record.offset}"
        return [OutputRecord(self.out_topic, value=f"{origin}:{record.value.decode()}".encode(),
                             partition=record.partition, headers=[("origin", origin.encode())])]

    def on_commit(self, offsets: dict[TopicPartition, Any]) -> None:
        with self.cond:
            for tp, meta in offsets.items():
                self.committed[tp] = max(self.committed.get(tp, 0), int(meta.offset))
            self.cond.notify_all()

    def on_assigned(self, _partitions: set[Any]) -> None:
        with self.cond:
            self.cond.notify_all()

    def start(self, name: str) -> TransactionalProcessor:
        proc = TransactionalProcessor(
            self.in_topic,
            consumer_config={"group_id": self.group, "bootstrap_servers": self.bootstrap, **CONSUMER},
            producer_config={"bootstrap_servers": self.bootstrap, **PRODUCER},
            transactional_id=f"{self.group}-{name}",
            transform=self.transform,
            max_records_per_txn=300,
            max_txn_time_ms=200,
            poll_timeout_ms=50,
            on_commit=self.on_commit,
            on_assigned=self.on_assigned,
        )
        self.processors[name] = proc

        def body() -> None:
            try:
                proc.run()
            except BaseException as exc:
                with self.cond:
                    self.errors.append(exc)
            finally:
                with self.cond:
                    self.cond.notify_all()

        thread = threading.Thread(target=body, name=f"processor-{name}", daemon=True)
        self.threads[name] = thread
        thread.start()
        return proc

    def committed_total(self) -> int:
        return sum(self.committed.values())

    def wait_for(self, what: str, predicate: Callable[[], bool], timeout: float = WAIT_S) -> None:
        with self.cond:
            ok = self.cond.wait_for(lambda: bool(self.errors) or predicate(), timeout=timeout)
            assert not self.errors, f"a processor failed: {self.errors!r}"
            assert ok, f"timed out waiting until {what}; committed={self.committed}"

    def stop_all(self) -> None:
        stoppers = [threading.Thread(target=p.stop, args=(30.0,)) for p in self.processors.values()]
        for s in stoppers:
            s.start()
        for s in stoppers:
            s.join(40)
        for t in self.threads.values():
            t.join(40)
            assert not t.is_alive(), f"{t.name} did not stop"


def produce_inputs(bootstrap: str, topic: str, start: int, stop: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    try:
        for i in range(start, stop):
            producer.send(topic, value=str(i).encode(), partition=i % PARTITIONS)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)


def end_offsets(bootstrap: str, topic: str, isolation_level: str = "read_uncommitted") -> dict[int, int]:
    """ListOffsets latest: the high watermark (read_uncommitted) or the last stable offset."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level,
                             enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {tp.partition: offset for tp, offset in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def read_output(bootstrap: str, topic: str, isolation_level: str) -> dict[int, list[Any]]:
    """Every record a kafka-python consumer with ``isolation_level`` sees in ``topic``."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level,
                             enable_auto_commit=False, auto_offset_reset="earliest", fetch_max_wait_ms=50)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        seen: dict[int, list[Any]] = {p: [] for p in range(PARTITIONS)}
        deadline = time.monotonic() + WAIT_S
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"{topic} not fully read within {WAIT_S}s: {ends}"
            for tp, records in consumer.poll(timeout_ms=200).items():
                seen[tp.partition].extend(records)
        return seen
    finally:
        consumer.close()


def transaction_state(bootstrap: str, txn_id: str) -> str:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with WireClient(host, int(port), timeout=10) as wire:  # one node: it is the coordinator
        response = wire.send(DescribeTransactionsRequest[0](transactional_ids=[txn_id]))
    state: str = response.transaction_states[0].transaction_state
    return state


def assert_each_input_once_in_order(bootstrap: str, topic: str, total: int) -> None:
    seen = read_output(bootstrap, topic, "read_committed")
    origins: dict[tuple[int, int], int] = {}
    for out_partition, records in seen.items():
        last_offset = -1
        for record in records:
            text = record.value.decode()
            in_partition, in_offset, number = (int(x) for x in text.split(":"))
            assert in_partition == out_partition, text
            assert number % PARTITIONS == in_partition, text
            assert dict(record.headers)["origin"] == f"{in_partition}:{in_offset}".encode()
            assert in_offset > last_offset, f"order broken or duplicate in partition {out_partition}: {text}"
            last_offset = in_offset
            origins[(in_partition, in_offset)] = origins.get((in_partition, in_offset), 0) + 1
    assert len(origins) == total, f"lost inputs: {total - len(origins)}"
    assert set(origins.values()) == {1}


@pytest.fixture
def topics(kafka_bootstrap: str) -> Iterator[tuple[str, str]]:
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    names = (_fresh("eos-in"), _fresh("eos-out"))
    try:
        admin.create_topics([NewTopic(n, num_partitions=PARTITIONS, replication_factor=1) for n in names])
        yield names
    finally:
        admin.close()


@pytest.mark.timeout(240)
def test_each_input_exactly_once_across_crash_restart_and_rebalance(
        kafka_bootstrap: str, topics: tuple[str, str]) -> None:
    in_topic, out_topic = topics
    pipeline = BrokerPipeline(kafka_bootstrap, in_topic, out_topic)
    try:
        produce_inputs(kafka_bootstrap, in_topic, 0, 4000)
        a = pipeline.start("a")
        pipeline.start("b")
        pipeline.wait_for("the first 1000 inputs are committed", lambda: pipeline.committed_total() >= 1000)

        # Kill "a" at its next commit (more input guarantees there is one): outputs written,
        # offsets added to the transaction, nothing committed or aborted.
        a.simulate_crash("before_commit")
        produce_inputs(kafka_bootstrap, in_topic, 4000, 8000)
        pipeline.wait_for("instance a died", lambda: not pipeline.threads["a"].is_alive())
        assert transaction_state(kafka_bootstrap, a.transactional_id) == "Ongoing"
        lso = end_offsets(kafka_bootstrap, out_topic, "read_committed")
        hw = end_offsets(kafka_bootstrap, out_topic)
        assert any(lso[p] < hw[p] for p in range(PARTITIONS)), (lso, hw)  # it holds the LSO back

        # Restart "a" with the same transactional id: init_transactions fences the dead instance
        # and the coordinator aborts its open transaction.
        pipeline.start("a")
        pipeline.wait_for("6000 inputs are committed", lambda: pipeline.committed_total() >= 6000)

        # More input, and a third instance joins while it is being processed: a rebalance mid-stream.
        produce_inputs(kafka_bootstrap, in_topic, 8000, 10000)
        c = pipeline.start("c")
        pipeline.wait_for("instance c owns partitions", lambda: bool(c.assignment()))
        produce_inputs(kafka_bootstrap, in_topic, 10000, TOTAL)
        ends = end_offsets(kafka_bootstrap, in_topic)
        assert sum(ends.values()) == TOTAL  # plain writes: no markers, high watermark = count
        wanted = {TopicPartition(in_topic, p): o for p, o in ends.items()}
        pipeline.wait_for("every input is committed", lambda: pipeline.committed == wanted)
    finally:
        pipeline.stop_all()

    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    try:
        committed = admin.list_group_offsets(pipeline.group)[pipeline.group]
    finally:
        admin.close()
    assert {tp: meta.offset for tp, meta in committed.items()} == wanted
    assert c.metrics()["records_in"] > 0, "the joining instance never got partitions"
    assert_each_input_once_in_order(kafka_bootstrap, out_topic, TOTAL)

    # No transaction is left open, and the crash really left aborted data in the log.
    lso = end_offsets(kafka_bootstrap, out_topic, "read_committed")
    hw = end_offsets(kafka_bootstrap, out_topic)
    assert lso == hw, (lso, hw)
    uncommitted = read_output(kafka_bootstrap, out_topic, "read_uncommitted")
    uncommitted_view = sum(len(records) for records in uncommitted.values())
    assert uncommitted_view > TOTAL
