"""Exactly-once consume-transform-produce across crashes and rebalances (issue 4, criterion 1).

Three TransactionalProcessor instances in one consumer group read a 6-partition input topic of
12,000 records and write one transformed record per input to an output topic. One instance dies
mid-transaction (data written and offsets added, no commit, no abort, no LeaveGroup, sockets
dropped) and is restarted with the same transactional id; a third instance joins to force another
rebalance. What users rely on: a read_committed consumer of the output sees every input exactly
once, in input order per input partition, and the group's committed offsets end at the input end
offsets. Runs in TV1 and TV2 mode. Every wait is a bounded wait on a condition.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition

from txnproducer.eos import OutputRecord, TransactionalProcessor
from txnproducer.testing import MockCluster

IN, OUT = "eos-in", "eos-out"
PARTITIONS = 6
TOTAL = 12_000
GROUP = "eos-pipeline"
WAIT_S = 40.0

# Fast group settings: heartbeats every 100 ms; a dead member is dropped after 2 s.
CONSUMER = {
    "session_timeout_ms": 2000,
    "heartbeat_interval_ms": 100,
    "max_poll_interval_ms": 4000,
    "request_timeout_ms": 10000,
    "metadata_max_age_ms": 1000,
    "retry_backoff_ms": 50,
    "reconnect_backoff_ms": 20,
    "fetch_max_wait_ms": 50,
}
PRODUCER = {"linger_ms": 2, "transaction_timeout_ms": 20000, "max_block_ms": 20000}


class Pipeline:
    """Runs processor instances on threads and lets the test wait on what they committed.

    Shared with the other tests/mock/test_eos_*.py modules.
    """

    def __init__(self, cluster: MockCluster, group: str = GROUP) -> None:
        self.cluster = cluster
        self.group = group
        self.cond = threading.Condition()
        self.errors: list[BaseException] = []
        self.threads: dict[str, threading.Thread] = {}
        self.processors: dict[str, TransactionalProcessor] = {}
        self.commits = 0

    def on_commit(self, _offsets: dict[Any, Any]) -> None:
        with self.cond:
            self.commits += 1
            self.cond.notify_all()

    def on_assigned(self, _partitions: set[Any]) -> None:
        with self.cond:
            self.cond.notify_all()

    def build(self, name: str, **overrides: Any) -> TransactionalProcessor:
        overrides.setdefault("transform", transform)
        overrides.setdefault("max_records_per_txn", 300)
        overrides.setdefault("max_txn_time_ms", 200)
        overrides.setdefault("poll_timeout_ms", 50)
        proc = TransactionalProcessor(
            IN,
            consumer_config={"group_id": self.group, "bootstrap_servers": self.cluster.bootstrap_servers,
                             **CONSUMER},
            producer_config=dict(PRODUCER),
            instance_name=name,
            on_commit=self.on_commit,
            on_assigned=self.on_assigned,
            **overrides,
        )
        self.processors[name] = proc
        return proc

    def start(self, name: str, **overrides: Any) -> TransactionalProcessor:
        proc = self.build(name, **overrides)

        def body() -> None:
            try:
                proc.run()
            except BaseException as exc:
                with self.cond:
                    self.errors.append(exc)
                    self.cond.notify_all()
            finally:
                with self.cond:
                    self.cond.notify_all()

        thread = threading.Thread(target=body, name=f"processor-{name}", daemon=True)
        self.threads[name] = thread
        thread.start()
        return proc

    def committed_total(self) -> int:
        return sum(self.cluster.committed_offsets(self.group).values())

    def all_committed(self) -> bool:
        return self.cluster.committed_offsets(self.group) == input_end_offsets(self.cluster)

    def wait_for(self, what: str, predicate: Callable[[], bool], timeout: float = WAIT_S,
                 allow_errors: bool = False) -> None:
        with self.cond:
            ok = self.cond.wait_for(lambda: (bool(self.errors) and not allow_errors) or predicate(),
                                    timeout=timeout)
            assert allow_errors or not self.errors, f"a processor failed: {self.errors!r}"
            committed = self.cluster.committed_offsets(self.group)
            assert ok, f"timed out waiting until {what}; committed={committed}"

    def stop_all(self) -> None:
        stoppers = [threading.Thread(target=p.stop, args=(20.0,)) for p in self.processors.values()]
        for s in stoppers:
            s.start()
        for s in stoppers:
            s.join(30)
        for t in self.threads.values():
            t.join(30)
            assert not t.is_alive(), f"{t.name} did not stop"


def transform(record: Any) -> list[OutputRecord]:
    """One output per input, on the output partition of the same number (keeps per-input order),
    carrying where it came from so the test can check exactly-once."""
    origin = f"{record.partition}:{record.offset}"
    return [
        OutputRecord(
            OUT,
            value=f"{origin}:{record.value.decode()}".encode(),
            partition=record.partition,
            headers=[("origin", origin.encode())],
        )
    ]


def produce_inputs(cluster: MockCluster, start: int, stop: int) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=5, acks="all")
    try:
        for i in range(start, stop):
            producer.send(IN, value=str(i).encode(), partition=i % PARTITIONS)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)


def input_end_offsets(cluster: MockCluster) -> dict[tuple[str, int], int]:
    """High watermarks of the input (inputs are written without transactions: no markers)."""
    with cluster.state.lock:
        return {(IN, p): cluster.state.partition_log(IN, p).high_watermark for p in range(PARTITIONS)}


def read_committed_output(cluster: MockCluster) -> dict[int, list[tuple[str, bytes, list[Any]]]]:
    """Every record a read_committed kafka-python consumer sees in the output, per partition."""
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        isolation_level="read_committed",
        enable_auto_commit=False,
        fetch_max_wait_ms=50,
    )
    try:
        parts = [TopicPartition(OUT, p) for p in range(PARTITIONS)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        seen: dict[int, list[tuple[str, bytes, list[Any]]]] = {p: [] for p in range(PARTITIONS)}
        done = threading.Event()
        deadline = threading.Timer(WAIT_S, done.set)
        deadline.start()
        try:
            while not done.is_set() and any(consumer.position(tp) < ends[tp] for tp in parts):
                for tp, records in consumer.poll(timeout_ms=200).items():
                    seen[tp.partition].extend((r.value.decode(), r.value, r.headers) for r in records)
        finally:
            deadline.cancel()
        assert not done.is_set(), f"output not fully read within {WAIT_S}s"
        return seen
    finally:
        consumer.close()


def assert_each_input_once_in_order(cluster: MockCluster, total: int) -> None:
    """The read_committed output holds every input exactly once, in input order per partition."""
    seen = read_committed_output(cluster)
    origins: dict[tuple[int, int], int] = {}
    for out_partition, records in seen.items():
        last_offset = -1
        for text, _raw, headers in records:
            in_partition, in_offset, number = (int(x) for x in text.split(":"))
            assert in_partition == out_partition
            assert number % PARTITIONS == in_partition, text
            assert dict(headers)["origin"] == f"{in_partition}:{in_offset}".encode()
            assert in_offset > last_offset, f"order broken or duplicate in partition {out_partition}: {text}"
            last_offset = in_offset
            origins[(in_partition, in_offset)] = origins.get((in_partition, in_offset), 0) + 1
    assert len(origins) == total, f"lost inputs: {total - len(origins)}"
    assert set(origins.values()) == {1}


@pytest.fixture(params=[1, 2], ids=["tv1", "tv2"])
def cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3, transaction_version=request.param) as c:
        c.create_topic(IN, PARTITIONS)
        c.create_topic(OUT, PARTITIONS)
        yield c


def test_each_input_exactly_once_across_crash_restart_and_rebalance(cluster: MockCluster) -> None:
    pipeline = Pipeline(cluster)
    try:
        produce_inputs(cluster, 0, 4000)
        a = pipeline.start("a")
        pipeline.start("b")
        pipeline.wait_for("the first 1000 inputs are committed", lambda: pipeline.committed_total() >= 1000)

        # Kill "a" at its next commit (more input guarantees there is one): outputs written,
        # offsets added to the transaction, nothing committed or aborted.
        a.simulate_crash("before_commit")
        produce_inputs(cluster, 4000, 8000)
        pipeline.wait_for("instance a died", lambda: not pipeline.threads["a"].is_alive())
        crashed_txn = cluster.describe_transaction(a.transactional_id)
        assert crashed_txn is not None and "Ongoing" in str(crashed_txn.get("state")), crashed_txn

        # Restart "a" with the same transactional id: init_transactions fences the dead instance
        # and the coordinator aborts its open transaction.
        pipeline.start("a")
        pipeline.wait_for("6000 inputs are committed", lambda: pipeline.committed_total() >= 6000)

        # More input, and a third instance joins while it is being processed: a rebalance mid-stream.
        produce_inputs(cluster, 8000, 10000)
        c = pipeline.start("c")
        pipeline.wait_for("instance c owns partitions", lambda: bool(c.assignment()))
        produce_inputs(cluster, 10000, TOTAL)
        pipeline.wait_for("every input is committed", pipeline.all_committed)
    finally:
        pipeline.stop_all()

    ends = input_end_offsets(cluster)
    assert sum(ends.values()) == TOTAL
    assert cluster.committed_offsets(GROUP) == ends
    assert c.metrics()["records_in"] > 0, "the joining instance never got partitions"
    assert_each_input_once_in_order(cluster, TOTAL)

    # The crash really left work in the log that had to be aborted: more data than was committed.
    uncommitted_view = sum(len(cluster.partition_records(OUT, p)) for p in range(PARTITIONS))
    assert uncommitted_view > TOTAL
