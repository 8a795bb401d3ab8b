"""The ``txnkafka`` PySpark sink against the MockCluster: exactly once through failures.

Each scenario runs a real Spark application (``local[2,4]``: two task threads, a task may be
retried) in a subprocess - ``spark_app.py`` - so that "the driver is killed" is literally true:
the sink's fault hook SIGKILLs every process of that application at the named point, and the
test starts it again from the same checkpoint. The MockCluster lives in the test process. (The
same scenarios on a standalone cluster with private executor directories: tests/cluster.)

What a user relies on, checked with a read_committed view of the partitions: every input row
is visible exactly once, and no transaction is left open (last stable offset = high watermark).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4 not installed (the [spark] extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (PySpark's data source writes need it)")
if shutil.which("java") is None:
    pytest.skip("no java on PATH (PySpark needs a JVM)", allow_module_level=True)

from tests._support.spark_runner import run_spark_app
from txnproducer.spark.decision import Decision
from txnproducer.spark.options import default_prefix
from txnproducer.spark.state_topic import StateTopic
from txnproducer.testing import MockCluster

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).with_name("spark_app.py")
PARTITIONS = 3
FILES, LINES = 4, 150  # four micro-batches of 150 rows


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3, transaction_version=2) as c:
        yield c


@pytest.fixture(scope="module")
def cluster_tv1() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3, transaction_version=1) as c:
        yield c


def run_app(cluster: MockCluster, *args: str,
            crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the Spark application as a session leader; with ``crash_at`` expect it to be killed."""
    return run_spark_app(APP, cluster.bootstrap_servers, *args, crash_at=crash_at)


def committed_values(cluster: MockCluster, topic: str) -> list[bytes]:
    return [r.value for p in range(PARTITIONS)
            for r in cluster.partition_records(topic, p, read_committed=True)]


def assert_no_open_transaction(cluster: MockCluster, topic: str) -> None:
    with cluster.state.lock:
        for p in range(PARTITIONS):
            log = cluster.state.partition_log(topic, p)
            assert log is not None
            assert log.last_stable_offset == log.high_watermark, f"{topic}-{p}: a transaction is open"


def make_input(directory: Path) -> list[bytes]:
    directory.mkdir()
    rows: list[bytes] = []
    for f in range(FILES):
        lines = [f"f{f}-r{i}" for i in range(LINES)]
        path = directory / f"part-{f}.txt"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))  # the file source goes by mtime
        rows += [line.encode() for line in lines]
    return sorted(rows)


def stream_args(tmp: Path, topic: str) -> list[str]:
    return ["--topic", topic, "--checkpoint", str(tmp / "ckpt"), "--input", str(tmp / "in")]


def latest_decision(cluster: MockCluster, tmp: Path) -> Decision | None:
    """The sink's latest decision for the query checkpointed in ``tmp``."""
    settings = {"bootstrap.servers": cluster.bootstrap_servers}
    with StateTopic(settings, "txnkafka-state", timeout_s=30) as state:
        return state.latest_decision(default_prefix(str(tmp / "ckpt")))


@pytest.fixture(scope="module")
def batch_and_retry(cluster: MockCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One application: a 50,000-row batch write, then a streaming query in which one task fails
    on its first attempt (after it already sent part of its rows)."""
    tmp = tmp_path_factory.mktemp("retry")
    for topic in ("batch50k", "retry"):
        cluster.create_topic(topic, partitions=PARTITIONS)
    expected = make_input(tmp / "in")
    result = run_app(cluster, *stream_args(tmp, "retry"), "--batch-topic", "batch50k", "--rows", "50000",
                     "--fail-value", f"f1-r{LINES // 2}")
    # the stream's ids: one per partition and attempt slot, whatever the number of micro-batches
    return {"expected": expected, "stderr": result.stderr, "tmp": tmp}


@pytest.mark.timeout(420)
def test_batch_write_of_50000_rows_lands_exactly_once(
        cluster: MockCluster, batch_and_retry: dict[str, object]) -> None:
    values = committed_values(cluster, "batch50k")
    assert len(values) == 50_000
    assert sorted(values) == sorted(str(i).encode() for i in range(50_000))
    assert_no_open_transaction(cluster, "batch50k")


@pytest.mark.timeout(420)
def test_stream_with_a_task_failing_on_its_first_attempt_is_exactly_once(
        cluster: MockCluster, batch_and_retry: dict[str, object]) -> None:
    assert sorted(committed_values(cluster, "retry")) == batch_and_retry["expected"]
    assert_no_open_transaction(cluster, "retry")
    # the failure really happened: a second attempt took the partition's second id, and the four
    # micro-batches reused the ids instead of adding some per batch
    prefix = default_prefix(str(batch_and_retry["tmp"] / "ckpt"))  # type: ignore[operator]
    ids = sorted(t for t in cluster.state.txn.transactional_ids() if t.startswith(prefix))
    assert len(ids) == 3 and any(t.endswith("-1") for t in ids), ids


@pytest.mark.timeout(420)
def test_driver_killed_after_the_decision_then_restart_is_exactly_once(
        cluster: MockCluster, tmp_path: Path) -> None:
    cluster.create_topic("after_entry", partitions=PARTITIONS)
    expected = make_input(tmp_path / "in")
    args = stream_args(tmp_path, "after_entry")
    run_app(cluster, *args, crash_at="after_first_commit:1")
    # the crash left batch 1 decided but only partly committed
    decision = latest_decision(cluster, tmp_path)
    assert decision is not None and (decision.batch, decision.stage) == (1, "decided")
    coordinator_states = sorted(str(cluster.describe_transaction(s.transactional_id)["state"])
                                for s in decision.states)
    assert coordinator_states == ["CompleteCommit", "Ongoing"]
    # (whether the committed half is readable yet depends on where the open one holds the LSO)
    assert LINES <= len(committed_values(cluster, "after_entry")) < 2 * LINES

    result = run_app(cluster, *args)
    assert "txn.spark_recovering_batch" in result.stderr
    assert "txn.spark_replay_skipped" in result.stderr  # Spark re-ran batch 1: not written twice
    assert "txn.spark_attempt_superseded" in result.stderr  # ... its tasks saw the decision
    assert sorted(committed_values(cluster, "after_entry")) == expected
    assert_no_open_transaction(cluster, "after_entry")
    decision = latest_decision(cluster, tmp_path)
    assert decision is not None and (decision.batch, decision.stage) == (FILES - 1, "done")


@pytest.mark.timeout(420)
def test_driver_killed_before_the_decision_then_restart_is_exactly_once(
        cluster_tv1: MockCluster, tmp_path: Path) -> None:
    cluster = cluster_tv1  # the transaction version 1 path (AddPartitionsToTxn, EndTxn v4)
    cluster.create_topic("before_entry", partitions=PARTITIONS)
    expected = make_input(tmp_path / "in")
    args = stream_args(tmp_path, "before_entry")
    run_app(cluster, *args, crash_at="before_decision:1")
    # batch 1 was prepared by the executors but never decided: invisible, transactions open
    assert len(committed_values(cluster, "before_entry")) == LINES  # batch 0 only
    decision = latest_decision(cluster, tmp_path)
    assert decision is not None and (decision.batch, decision.stage) == (0, "done")
    with cluster.state.lock:
        logs = [cluster.state.partition_log("before_entry", p) for p in range(PARTITIONS)]
        assert any(log is not None and log.last_stable_offset < log.high_watermark for log in logs)

    run_app(cluster, *args)
    # the crashed run's transactions were ended (fenced by the replay's commit, or by the replay's
    # attempts taking their ids, or by the coordinator's timeout if the restart was slow)
    assert sorted(committed_values(cluster, "before_entry")) == expected
    assert_no_open_transaction(cluster, "before_entry")
