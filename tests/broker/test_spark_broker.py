"""The ``txnkafka`` PySpark sink against a real Apache Kafka broker (issue 6, criterion 2).

The scenarios of tests/spark/test_spark_sink.py, run through the same Spark application
(tests/spark/spark_app.py, in a subprocess that the sink's fault hook SIGKILLs) but writing to the
session's real broker: a batch write, a streaming query whose task fails on its first attempt,
and the driver killed after / before the decision of a micro-batch, then restarted from its
checkpoint (on a standalone cluster with private executor directories:
test_spark_cluster_broker.py). In every case a read_committed consumer sees each input row exactly
once, and no transaction stays open: ListOffsets under read_committed (the last stable offset) equals
ListOffsets under read_uncommitted (the high watermark). The transaction version is the broker's.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4 not installed (the [spark] extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (PySpark's data source writes need it)")
if shutil.which("java") is None:
    pytest.skip("no java on PATH (PySpark needs a JVM)", allow_module_level=True)

from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.admin.transactions import DescribeTransactionsRequest, ListTransactionsRequest

from tests._support import readers
from tests._support.spark_runner import run_spark_app
from tests._support.spark_sink_app import (
    APP,
    FILES,
    LINES,
    PARTITIONS,
    latest_decision,
    make_input,
    stream_args,
)
from txnproducer.spark.sink.options import default_prefix

pytestmark = [pytest.mark.slow]

BATCH_ROWS = 5_000
READ_WAIT_S = 60.0


@pytest.fixture
def make_topic(kafka_bootstrap: str) -> Iterator[Callable[[str], str]]:
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)

    def make(prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)])
        return name

    yield make
    admin.close()


def run_app(bootstrap: str, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the Spark application as a session leader; with ``crash_at`` expect it to be killed."""
    return run_spark_app(APP, bootstrap, *args, crash_at=crash_at)


def committed_values(bootstrap: str, topic: str) -> list[bytes]:
    """Every value a read_committed consumer sees in ``topic`` (up to the last stable offset)."""
    return readers.read_values(bootstrap, topic, PARTITIONS, READ_WAIT_S)


def assert_no_open_transaction(bootstrap: str, topic: str) -> None:
    readers.assert_no_open_transaction(bootstrap, topic, PARTITIONS)



def transaction_states(bootstrap: str, txn_ids: list[str]) -> list[str]:
    with readers.wire_to(bootstrap) as wire:
        response = wire.send(DescribeTransactionsRequest[0](transactional_ids=txn_ids))
    return [str(s.transaction_state) for s in response.transaction_states]


def transactional_ids(bootstrap: str) -> set[str]:
    with readers.wire_to(bootstrap) as wire:
        response = wire.send(ListTransactionsRequest[0](state_filters=[], producer_id_filters=[]))
    return {str(s.transactional_id) for s in response.transaction_states}


@pytest.mark.timeout(420)
def test_batch_write_and_a_task_failing_on_its_first_attempt_are_exactly_once(
        kafka_bootstrap: str, make_topic: Callable[[str], str], tmp_path: Path) -> None:
    batch_topic, stream_topic = make_topic("spark-batch"), make_topic("spark-retry")
    expected = make_input(tmp_path / "in")
    before = transactional_ids(kafka_bootstrap)
    run_app(kafka_bootstrap, *stream_args(tmp_path, stream_topic), "--batch-topic", batch_topic,
            "--rows", str(BATCH_ROWS), "--fail-value", f"f1-r{LINES // 2}")

    values = committed_values(kafka_bootstrap, batch_topic)
    assert len(values) == BATCH_ROWS
    assert sorted(values) == sorted(str(i).encode() for i in range(BATCH_ROWS))
    assert_no_open_transaction(kafka_bootstrap, batch_topic)

    assert sorted(committed_values(kafka_bootstrap, stream_topic)) == expected
    assert_no_open_transaction(kafka_bootstrap, stream_topic)
    # the failure really happened: a second attempt took the partition's second id; the four
    # micro-batches reused the stream's ids instead of adding some per batch
    prefix = default_prefix(str(tmp_path / "ckpt"))
    ids = sorted(t for t in transactional_ids(kafka_bootstrap) - before if t.startswith(prefix))
    assert len(ids) == 3 and any(t.endswith("-1") for t in ids), ids


@pytest.mark.timeout(420)
def test_driver_killed_after_the_decision_then_restart_is_exactly_once(
        kafka_bootstrap: str, make_topic: Callable[[str], str], tmp_path: Path) -> None:
    topic = make_topic("spark-after-entry")
    expected = make_input(tmp_path / "in")
    args = stream_args(tmp_path, topic)
    run_app(kafka_bootstrap, *args, crash_at="after_first_commit:1")
    # the crash left batch 1 decided but only partly committed
    decision = latest_decision(kafka_bootstrap, tmp_path)
    assert decision is not None and (decision.batch, decision.stage) == (1, "decided")
    states = transaction_states(kafka_bootstrap, [s.transactional_id for s in decision.states])
    # the committed one may still be writing its markers (PrepareCommit) on a real coordinator
    assert sorted(s.replace("PrepareCommit", "CompleteCommit") for s in states) == [
        "CompleteCommit", "Ongoing"], states
    assert LINES <= len(committed_values(kafka_bootstrap, topic)) < 2 * LINES

    result = run_app(kafka_bootstrap, *args)
    assert "txn.spark_recovering_batch" in result.stderr
    assert "txn.spark_replay_skipped" in result.stderr  # Spark re-ran batch 1: not written twice
    assert sorted(committed_values(kafka_bootstrap, topic)) == expected
    assert_no_open_transaction(kafka_bootstrap, topic)
    decision = latest_decision(kafka_bootstrap, tmp_path)
    assert decision is not None and (decision.batch, decision.stage) == (FILES - 1, "done")


@pytest.mark.timeout(420)
def test_driver_killed_before_the_decision_then_restart_is_exactly_once(
        kafka_bootstrap: str, make_topic: Callable[[str], str], tmp_path: Path) -> None:
    topic = make_topic("spark-before-entry")
    expected = make_input(tmp_path / "in")
    args = stream_args(tmp_path, topic)
    before = transactional_ids(kafka_bootstrap)
    run_app(kafka_bootstrap, *args, crash_at="before_decision:1")
    # batch 1 was prepared by the executors but never decided: invisible, transactions open
    assert len(committed_values(kafka_bootstrap, topic)) == LINES  # batch 0 only
    prefix = default_prefix(str(tmp_path / "ckpt"))
    orphans = sorted(t for t in transactional_ids(kafka_bootstrap) - before if t.startswith(prefix))
    assert "Ongoing" in transaction_states(kafka_bootstrap, orphans)
    lso = readers.end_offsets(kafka_bootstrap, topic, PARTITIONS, "read_committed")
    hw = readers.end_offsets(kafka_bootstrap, topic, PARTITIONS, "read_uncommitted")
    assert any(lso[p] < hw[p] for p in range(PARTITIONS)), (lso, hw)

    run_app(kafka_bootstrap, *args)
    # the crashed run's transactions were ended: none is open or half-ended
    states = transaction_states(kafka_bootstrap, orphans)
    ended = {"Empty", "CompleteAbort", "CompleteCommit"}
    assert set(states) <= ended, dict(zip(orphans, states, strict=True))
    assert sorted(committed_values(kafka_bootstrap, topic)) == expected
    assert_no_open_transaction(kafka_bootstrap, topic)
