"""Extra task attempts of the txnkafka sink never leave a transaction open, driven without Spark.

What a pipeline relies on (issue: "retried or speculative task attempts must neither duplicate
records nor leave an open transaction holding the last stable offset after the batch commits"):
an attempt that prepared but lost is fenced by the driver's clean-up; an attempt that starts after
the driver decided its stage opens no transaction at all. The writer's task and driver halves are
called directly (Spark's TaskContext replaced by a fixed identity), so each ordering is exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4 not installed (the [spark] extra)")

from pyspark.sql import Row

from txnproducer.spark import CommitLog, SupersededAttemptError
from txnproducer.spark import sink as sink_module
from txnproducer.spark.options import SinkOptions
from txnproducer.spark.sink import TxnKafkaStreamWriter
from txnproducer.testing import MockCluster

TOPIC = "attempts"
ROWS = [Row(key=b"k%d" % i, value=b"v%d" % i, partition=0) for i in range(5)]


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1) as mock:
        mock.create_topic(TOPIC, partitions=1)
        yield mock


def _writer(cluster: MockCluster, log_dir: Path) -> TxnKafkaStreamWriter:
    options = SinkOptions(producer_settings={"bootstrap.servers": cluster.bootstrap_servers,
                                             "max.block.ms": "10000"},
                          topic=TOPIC, commit_log=str(log_dir), commit_timeout_s=10.0)
    writer = TxnKafkaStreamWriter(options, str(log_dir), "run1")
    writer.recover()
    return writer


def _as_attempt(monkeypatch: pytest.MonkeyPatch, attempt: int) -> None:
    monkeypatch.setattr(sink_module, "_task_identity", lambda: ("7", 0, attempt))


def _committed(cluster: MockCluster) -> list[bytes]:
    return [r.value for r in cluster.partition_records(TOPIC, 0, read_committed=True)]


def _assert_no_open_transaction(cluster: MockCluster) -> None:
    with cluster.state.lock:
        log = cluster.state.partition_log(TOPIC, 0)
        assert log is not None
        assert log.last_stable_offset == log.high_watermark, "a transaction is still open"


def _assert_rows_committed_once_and_settled(cluster: MockCluster, log_dir: Path) -> None:
    """ROWS are committed exactly once, no transaction is left open, no attempt is left pending."""
    assert _committed(cluster) == [r.value for r in ROWS]
    _assert_no_open_transaction(cluster)
    assert CommitLog(str(log_dir)).pending() == []


def test_attempt_that_prepared_but_lost_is_fenced_by_the_commit(
        cluster: MockCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = _writer(cluster, tmp_path)
    _as_attempt(monkeypatch, 0)
    winner = writer.write(iter(ROWS))
    _as_attempt(monkeypatch, 1)
    loser = writer.write(iter(ROWS))  # a speculative copy that also finished
    assert loser.state.transactional_id != winner.state.transactional_id

    writer.commit([winner], 0)  # Spark reports one message per partition: the winner's

    _assert_rows_committed_once_and_settled(cluster, tmp_path)


def test_attempt_starting_after_the_commit_opens_no_transaction(
        cluster: MockCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = _writer(cluster, tmp_path)
    _as_attempt(monkeypatch, 0)
    winner = writer.write(iter(ROWS))
    writer.commit([winner], 0)
    since = cluster.requests.next_seq()

    _as_attempt(monkeypatch, 1)  # a late speculative attempt of the same stage and partition
    with pytest.raises(SupersededAttemptError, match="after the driver decided its stage"):
        writer.write(iter(ROWS))

    late = [e for e in cluster.request_log if e.seq >= since and e.api == "InitProducerId"]
    assert late == [], "the late attempt registered a transaction"
    _assert_rows_committed_once_and_settled(cluster, tmp_path)


def test_attempt_starting_after_an_abort_opens_no_transaction(
        cluster: MockCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = _writer(cluster, tmp_path)
    _as_attempt(monkeypatch, 0)
    first = writer.write(iter(ROWS))
    writer.abort([first], 0)
    _as_attempt(monkeypatch, 1)
    with pytest.raises(SupersededAttemptError):
        writer.write(iter(ROWS))
    assert _committed(cluster) == []
    _assert_no_open_transaction(cluster)


def test_next_stage_is_not_affected(
        cluster: MockCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = _writer(cluster, tmp_path)
    _as_attempt(monkeypatch, 0)
    writer.commit([writer.write(iter(ROWS))], 0)
    monkeypatch.setattr(sink_module, "_task_identity", lambda: ("8", 0, 0))  # micro-batch 1
    writer.commit([writer.write(iter(ROWS[:2]))], 1)
    assert _committed(cluster) == [r.value for r in ROWS + ROWS[:2]]
    _assert_no_open_transaction(cluster)
