"""Exactly-once consume-transform-produce under the consumer group protocol (KIP-848, issue 41).

The scenario of ``test_eos_pipeline.py`` with ``group_protocol="consumer"``: processors in one group,
one killed mid-transaction and restarted (static membership: its restart takes its partitions back),
instances joining and leaving while input flows. What users rely on: a read_committed reader of the
output sees every input exactly once, in input order per partition; the group's committed offsets
end at the input's end. And what the new protocol adds: a partition that stays with its member never
stops - a member that keeps its partitions commits no abort when another joins or leaves - and a
revoked partition's open transaction is committed before the partition moves (or aborted, with
``commit_on_revocation=False``), both exactly once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaProducer
from test_eos_pipeline import (
    CONSUMER,
    IN,
    OUT,
    PARTITIONS,
    Pipeline,
    assert_each_input_once_in_order,
    input_end_offsets,
    produce_inputs,
)

from tests._support.eos_pipeline import origin_transform
from txnproducer.testing import MockCluster

#: the consumer protocol's settings: the coordinator owns the session and the heartbeat interval
KIP848: dict[str, Any] = {k: v for k, v in CONSUMER.items()
                          if k not in ("session_timeout_ms", "heartbeat_interval_ms")}
KIP848["group_protocol"] = "consumer"
#: the mock coordinator's: heartbeats every 100 ms, a silent member is dropped after 2 s
GROUP_CONFIG = {"group.consumer.heartbeat.interval.ms": 100, "group.consumer.session.timeout.ms": 2000}


class ConsumerProtocolPipeline(Pipeline):
    def __init__(self, cluster: MockCluster, group: str) -> None:
        super().__init__(cluster, group)
        self.consumer = dict(KIP848)


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3, transaction_version=2, consumer_group_config=GROUP_CONFIG) as c:
        c.create_topic(IN, PARTITIONS)
        c.create_topic(OUT, PARTITIONS)
        yield c


def test_each_input_exactly_once_across_crash_restart_and_scaling(cluster: MockCluster) -> None:
    pipeline = ConsumerProtocolPipeline(cluster, "kip848-eos")
    try:
        produce_inputs(cluster, 0, 3000)
        a = pipeline.start("a")
        pipeline.start("b")
        pipeline.wait_for("1000 inputs are committed", lambda: pipeline.committed_total() >= 1000)
        a.simulate_crash("before_commit")
        produce_inputs(cluster, 3000, 6000)
        pipeline.wait_for("instance a died", lambda: not pipeline.threads["a"].is_alive())
        pipeline.start("a")  # same transactional id and group instance id: fences, takes its place back
        pipeline.wait_for("4000 inputs are committed", lambda: pipeline.committed_total() >= 4000)
        c = pipeline.start("c")  # scaling out while input flows
        produce_inputs(cluster, 6000, 8000)
        pipeline.wait_for("instance c owns partitions", lambda: bool(c.assignment()))
        pipeline.processors["b"].stop(leave_group=True)  # scaling in
        produce_inputs(cluster, 8000, 10000)
        pipeline.wait_for("every input is committed", pipeline.all_committed)
    finally:
        pipeline.stop_all()
    ends = input_end_offsets(cluster)
    assert cluster.committed_offsets("kip848-eos") == ends
    assert c.metrics()["records_in"] > 0, "the joining instance never got partitions"
    assert_each_input_once_in_order(cluster, 10_000)


class Feeder:
    """Writes input ``i`` to partition ``i % PARTITIONS``, one per partition every 20 ms, until stopped:
    the processors' polls are never empty, so a transaction stays open until something ends it."""

    def __init__(self, cluster: MockCluster) -> None:
        self.sent = 0
        self._stop = threading.Event()
        self._producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=2, acks="all")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):  # a pace, not a synchronisation
            for _ in range(PARTITIONS):
                self._producer.send(IN, value=str(self.sent).encode(), partition=self.sent % PARTITIONS)
                self.sent += 1

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(30)
        self._producer.close(10)
        return self.sent


def notifying(pipeline: Pipeline) -> Any:
    """The pipeline's transform, waking the test's waits after each record (progress without commits)."""
    transform = origin_transform(OUT)

    def wrapped(record: Any) -> Any:
        out = transform(record)
        with pipeline.cond:
            pipeline.cond.notify_all()
        return out

    return wrapped


@pytest.mark.parametrize("commit", [True, False], ids=["commit-first", "abort"])
def test_a_revocation_ends_the_open_transaction_that_read_the_revoked_partitions(
        cluster: MockCluster, commit: bool) -> None:
    """b joins while a's transaction has read every partition: a commits it (or aborts it) before it
    gives half of them up, and keeps the rest without an abort; every input once either way."""
    group = f"revoke-{'commit' if commit else 'abort'}"
    pipeline = ConsumerProtocolPipeline(cluster, group)
    feeder = Feeder(cluster)
    try:
        a = pipeline.start("a", max_txn_time_ms=60_000, max_records_per_txn=10**9, poll_timeout_ms=2000,
                           commit_on_revocation=commit, transform=notifying(pipeline))
        pipeline.wait_for("a's open transaction read every partition",
                          lambda: a.metrics()["records_polled"] >= 20 * PARTITIONS
                          and len(a.assignment()) == PARTITIONS)
        assert a.metrics()["transactions_committed"] == 0
        b = pipeline.start("b")
        pipeline.wait_for("b owns partitions", lambda: len(b.assignment()) == PARTITIONS // 2)
        total = feeder.stop()
        pipeline.wait_for("every input is committed", pipeline.all_committed)
    finally:
        feeder.stop()
        pipeline.stop_all()
    metrics = a.metrics()
    if commit:
        assert (metrics["commits_on_revocation"], metrics["aborts_on_revocation"]) == (1, 0)
        assert metrics["transactions_aborted"] == 0, f"the partitions a kept lost no work: {metrics}"
    else:
        assert (metrics["commits_on_revocation"], metrics["aborts_on_revocation"]) == (0, 1)
    assert cluster.committed_offsets(group) == input_end_offsets(cluster)
    assert_each_input_once_in_order(cluster, total)
