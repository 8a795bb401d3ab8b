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

from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.eos_pipeline import ProcessorThreads, origin_columns_transform, origin_transform
from tests._support.eos_pipeline import assert_each_input_once_in_order as assert_once_in_order
from tests._support.eos_pipeline import produce_inputs as shared_produce_inputs
from tests._support.readers import read_all
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


class Pipeline(ProcessorThreads):
    """Processor threads on a MockCluster, where what the group committed is read from the cluster.

    Shared with the other tests/mock/test_eos_*.py modules.
    """

    cluster: MockCluster

    def __init__(self, cluster: MockCluster, group: str = GROUP) -> None:
        super().__init__(cluster.bootstrap_servers, IN, OUT, group, CONSUMER, PRODUCER, WAIT_S)
        self.cluster = cluster

    def committed_total(self) -> int:
        return sum(self.cluster.committed_offsets(self.group).values())

    def all_committed(self) -> bool:
        return self.cluster.committed_offsets(self.group) == input_end_offsets(self.cluster)


transform = origin_transform(OUT)


def produce_inputs(cluster: MockCluster, start: int, stop: int) -> None:
    shared_produce_inputs(cluster.bootstrap_servers, IN, start, stop, PARTITIONS)


def input_end_offsets(cluster: MockCluster) -> dict[tuple[str, int], int]:
    """High watermarks of the input (inputs are written without transactions: no markers)."""
    with cluster.state.lock:
        return {(IN, p): cluster.state.partition_log(IN, p).high_watermark for p in range(PARTITIONS)}


def read_committed_output(cluster: MockCluster) -> dict[int, list[Any]]:
    """Every record a read_committed kafka-python consumer sees in the output, per partition."""
    return read_all(cluster.bootstrap_servers, OUT, PARTITIONS, "read_committed", WAIT_S)


def assert_each_input_once_in_order(cluster: MockCluster, total: int) -> None:
    """The read_committed output holds every input exactly once, in input order per partition."""
    assert_once_in_order(read_committed_output(cluster), PARTITIONS, total)


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


def test_a_column_transform_writes_each_input_once_across_a_crash_and_restart() -> None:
    """transform_columns (a PartitionBatch per partition chunk, no record objects) on the same path:
    progress tracked from the columns, the crash's transaction aborted, every input once."""
    with MockCluster(num_brokers=3, transaction_version=2) as cluster:
        cluster.create_topic(IN, PARTITIONS)
        cluster.create_topic(OUT, PARTITIONS)
        pipeline = Pipeline(cluster, group="eos-columns")
        columns = origin_columns_transform(OUT)
        try:
            produce_inputs(cluster, 0, 3000)
            a = pipeline.start("a", transform_columns=columns)
            pipeline.start("b", transform_columns=columns)
            pipeline.wait_for("1000 inputs are committed", lambda: pipeline.committed_total() >= 1000)
            a.simulate_crash("before_commit")
            produce_inputs(cluster, 3000, 6000)
            pipeline.wait_for("instance a died", lambda: not pipeline.threads["a"].is_alive())
            pipeline.start("a", transform_columns=columns)
            pipeline.wait_for("every input is committed", pipeline.all_committed)
        finally:
            pipeline.stop_all()
        assert cluster.committed_offsets("eos-columns") == input_end_offsets(cluster)
        assert_each_input_once_in_order(cluster, 6000)
