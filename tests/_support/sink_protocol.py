"""Driving the ``txnkafka`` sink's task and driver halves directly, without Spark.

Why: the orderings the sink's exactly-once argument is about (an attempt registering its id before
or after the driver's decision, a driver dying between the decision and the completions) are a
matter of milliseconds inside a real Spark job. Calling :func:`run_attempt` and the
:class:`Committer` from a test, with an explicit task identity, makes each ordering exact. The
checks go through the MockCluster's partition logs (what a read_committed consumer would see, and
whether the last stable offset lags the high watermark) and its transaction coordinator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from txnproducer.producer import TransactionalProducer
from txnproducer.spark.sink.committer import Committer
from txnproducer.spark.sink.options import SinkOptions
from txnproducer.spark.sink.records import send_batches
from txnproducer.spark.sink.state_topic import StateTopic
from txnproducer.spark.sink.task import TaskIdentity, TxnKafkaCommitMessage, run_attempt
from txnproducer.testing import MockCluster

__all__ = ["PREFIX", "TOPIC", "arrow_rows", "assert_settled", "attempt", "committed", "committer",
           "open_transactions", "sink_options", "transactional_ids"]

PREFIX = "q1"
TOPIC = "sink"  # the output topic of the protocol tests (tests/spark/conftest.py creates it)


def sink_options(cluster: MockCluster, topic: str, **overrides: Any) -> SinkOptions:
    """Options for ``topic``, with the state topic created (as the driver does before any task)."""
    settings = {"bootstrap.servers": cluster.bootstrap_servers, "max.block.ms": "10000"}
    options = SinkOptions(producer_settings=settings, topic=topic, transactional_id_prefix=PREFIX,
                          commit_timeout_s=10.0, **overrides)
    with StateTopic(settings, options.state_topic, timeout_s=10.0) as state:
        state.ensure()
    return options


def arrow_rows(values: list[bytes], partition: int | None = None) -> pa.RecordBatch:
    columns: dict[str, Any] = {"key": pa.array([b"k" + v for v in values], pa.binary()),
                               "value": pa.array(values, pa.binary())}
    if partition is not None:
        columns["partition"] = pa.array([partition] * len(values), pa.int32())
    return pa.record_batch(list(columns.values()), names=list(columns))


def attempt(options: SinkOptions, batch: int, partition: int, attempt_number: int, values: list[bytes],
            query: str = "query-1", during: Callable[[TransactionalProducer], None] | None = None,
            kafka_partition: int | None = 0) -> TxnKafkaCommitMessage:
    """One task attempt writing ``values`` (to Kafka partition ``kafka_partition``); ``during`` runs
    inside the open transaction before the rows are sent."""
    topic = options.topic

    def write(producer: TransactionalProducer) -> int:
        if during is not None:
            during(producer)
        return send_batches(producer, [arrow_rows(values, kafka_partition)], topic)

    who = TaskIdentity(batch, query, partition, attempt_number)
    return run_attempt(options, 0, who, write)


@contextmanager
def committer(options: SinkOptions) -> Iterator[Committer]:
    with StateTopic(options.producer_settings, options.state_topic,
                    timeout_s=options.commit_timeout_s) as state:
        state.ensure()
        yield Committer(options, state)


def committed(cluster: MockCluster, topic: str, partitions: int = 1) -> list[bytes]:
    return [r.value for p in range(partitions)
            for r in cluster.partition_records(topic, p, read_committed=True)]


def open_transactions(cluster: MockCluster, topic: str, partitions: int = 1) -> list[str]:
    """``topic-p`` of every partition whose last stable offset lags its high watermark."""
    with cluster.state.lock:
        lagging = []
        for p in range(partitions):
            log = cluster.state.partition_log(topic, p)
            assert log is not None
            if log.last_stable_offset != log.high_watermark:
                lagging.append(f"{topic}-{p}")
        return lagging


def transactional_ids(cluster: MockCluster, prefix: str = PREFIX) -> list[str]:
    """The coordinator's transactional ids of the sink's prefix."""
    with cluster.state.lock:
        return sorted(t for t in cluster.state.txn.transactional_ids() if t.startswith(prefix + "-"))


def assert_settled(cluster: MockCluster, topic: str, expected: list[bytes], partitions: int = 1) -> None:
    """``expected`` is committed exactly once (in order) and no transaction holds the topic back."""
    assert committed(cluster, topic, partitions) == expected
    assert open_transactions(cluster, topic, partitions) == []
