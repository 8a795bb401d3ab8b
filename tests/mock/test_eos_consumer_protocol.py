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

from collections.abc import Iterator
from typing import Any

import pytest
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
