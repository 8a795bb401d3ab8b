"""The txnkafka sink's cluster scenario, paced micro-batch by micro-batch, with its checks.

Shared by the cluster tier on MockCluster (tests/cluster), on a real Kafka (tests/broker) and
through Spark Connect, so that all three check the same promises the same way - through
kafka-python readers, never through a MockCluster shortcut:

1. a batch write of ``batch_rows`` rows (one Spark job, the sink's ephemeral id prefix);
2. a streaming query over the counter source of ``tests/spark/spark_app.py``, one micro-batch at a
   time: the test allows batch n, waits until Spark records it committed in the checkpoint, and
   then checks, for every n:
   * a read_committed reader sees every row of batches 0..n exactly once;
   * the last stable offset equals the high watermark within ``LSO_WITHIN_S`` of the commit (no
     transaction of any attempt is left open);
   * the query's transactional ids (ListTransactions, the sink's prefix) stay within
     ``partitions x slots``.
   Faults on the way (``task_faults``): a task failing on its first attempt mid-write, an executor
   SIGKILLed mid-write; and the driver SIGKILLed after the commit point of ``crash_batch`` and
   restarted from its checkpoint.
3. with ``pipe_topic``, beside it all along, the Kafka -> Spark -> Kafka pipeline: a second query
   reads the counter stream's output with the ``txnkafka`` source (its transactions, and the aborted
   ones of the failed and killed attempts), prefixes each value with ``piped-`` and writes it with
   the sink - across the same task faults, the executor kill and the driver kill; at the end it is
   stopped and started again on its checkpoint to read what is left. Checked: every committed input
   exactly once in the pipe's output, nothing of an aborted transaction, no transaction left open.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import attrs
from kafka.admin import KafkaAdminClient

from tests._support import readers
from txnproducer.spark import pool_bound
from txnproducer.spark.sink.options import DEFAULT_SLOTS, default_prefix

__all__ = ["Driver", "ScenarioReport", "StreamScenario", "check_outcome", "check_pipe", "run_stream_scenario",
           "transactional_ids"]

LSO_WITHIN_S = 10.0
SPARK_PARTITIONS = 2  # the counter source's
BATCH_WAIT_S = 600.0  # a hang guard: a driver restart on a loaded 2-CPU machine took 3 minutes


class Driver(Protocol):
    """A running driver application (a SparkApp, or a Connect server plus its client)."""

    def poll(self) -> int | None: ...

    def wait(self, timeout_s: float) -> int: ...

    def stop(self) -> None: ...

    def stderr(self) -> str: ...


@attrs.define
class StreamScenario:
    bootstrap: str
    topic: str
    batch_topic: str
    workdir: Path
    start_driver: Callable[[list[str], str | None], Driver]  # (app arguments, crash_at) -> driver
    batches: int = 22
    rows_per_batch: int = 100
    batch_rows: int = 20_000
    task_faults: str = "fail@3:1,kill@7:0"  # see txnproducer/spark/sink/_faults.py
    crash_batch: int = 12
    pipe_topic: str | None = None

    @property
    def checkpoint(self) -> Path:
        return self.workdir / "checkpoint"

    @property
    def control(self) -> Path:
        return self.workdir / "control"

    def app_args(self, first: bool) -> list[str]:
        """The driver's arguments; the batch write runs in the first start only."""
        args = ["--topic", self.topic, "--checkpoint", str(self.checkpoint), "--control", str(self.control),
                "--rows-per-batch", str(self.rows_per_batch), "--task-faults", self.task_faults]
        if self.batch_rows and first:
            args += ["--batch-topic", self.batch_topic, "--rows", str(self.batch_rows)]
        if self.pipe_topic:
            args += ["--pipe-topic", self.pipe_topic,
                     "--pipe-checkpoint", str(self.workdir / "pipe-checkpoint")]
        return args

    @property
    def crash_at(self) -> str:
        """The driver crash, of the counter query only (the pipe's sink counts its own batches)."""
        return f"after_first_commit:{self.crash_batch}@{default_prefix(str(self.checkpoint))}"


@attrs.define
class ScenarioReport:
    lso_lag_s: list[float] = attrs.field(factory=list)  # per batch: commit recorded -> LSO == HW
    ids: list[int] = attrs.field(factory=list)  # per batch: the query's transactional ids
    restarts: int = 0
    driver_stderr: list[str] = attrs.field(factory=list)
    batch_ids_before: list[str] = attrs.field(factory=list)  # batch jobs' ids already listed


def transactional_ids(bootstrap: str, prefix: str) -> list[str]:
    """Every transactional id the coordinators list (ListTransactions) that starts with ``prefix``."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        listed = admin.list_transactions()
    finally:
        admin.close()
    return sorted(t.transactional_id for rows in listed.values() for t in rows
                  if t.transactional_id.startswith(prefix))


def _value(n: int) -> bytes:
    return f"{n:010d}".encode()


def _wait_for_commit(s: StreamScenario, batch: int, driver: Driver,
                     report: ScenarioReport) -> tuple[Driver, float]:
    """Wait until Spark recorded ``batch`` committed; restart the driver if the fault hook killed
    it at ``crash_batch``. Returns the (possibly new) driver and when the commit was seen."""
    marker = s.checkpoint / "commits" / str(batch)
    deadline = time.monotonic() + BATCH_WAIT_S
    while not marker.exists():
        code = driver.poll()
        if code is not None:
            assert batch == s.crash_batch and report.restarts == 0 and code == -9, (
                f"the driver exited with {code} at batch {batch}:\n{driver.stderr()[-4000:]}")
            report.driver_stderr.append(driver.stderr())
            driver.stop()
            driver = s.start_driver(s.app_args(first=False), None)
            report.restarts += 1
            deadline = time.monotonic() + BATCH_WAIT_S
        assert time.monotonic() < deadline, f"batch {batch} not committed in {BATCH_WAIT_S}s"
        time.sleep(0.1)  # Spark writes the commit file; there is nothing to wait on but the file
    return driver, time.monotonic()


def _assert_lso_reaches_hw(s: StreamScenario, seen_at: float, batch: int) -> float:
    while True:
        lso = readers.end_offsets(s.bootstrap, s.topic, SPARK_PARTITIONS, "read_committed")
        hw = readers.end_offsets(s.bootstrap, s.topic, SPARK_PARTITIONS, "read_uncommitted")
        if lso == hw:
            return time.monotonic() - seen_at
        assert time.monotonic() - seen_at < LSO_WITHIN_S, (
            f"batch {batch}: a transaction is still open {LSO_WITHIN_S}s after the commit"
            f" (LSO {lso}, HW {hw})")
        time.sleep(0.2)  # offsets of another process's broker: nothing to wait on but asking again


def run_stream_scenario(s: StreamScenario) -> ScenarioReport:
    """Run the scenario (module docstring); fail on the first broken promise."""
    prefix = default_prefix(str(s.checkpoint))
    bound = pool_bound(SPARK_PARTITIONS, DEFAULT_SLOTS)
    report = ScenarioReport(batch_ids_before=transactional_ids(s.bootstrap, "txnkafka-batch-"))
    s.control.write_text("0")
    driver = s.start_driver(s.app_args(first=True), s.crash_at)
    try:
        for batch in range(s.batches):
            s.control.write_text(str(batch + 1))
            driver, seen_at = _wait_for_commit(s, batch, driver, report)
            report.lso_lag_s.append(_assert_lso_reaches_hw(s, seen_at, batch))
            values = readers.read_values(s.bootstrap, s.topic, SPARK_PARTITIONS)
            expected = [_value(n) for n in range((batch + 1) * s.rows_per_batch)]
            assert sorted(values) == expected, f"batch {batch}: not exactly once ({len(values)} rows)"
            ids = transactional_ids(s.bootstrap, prefix + "-")
            report.ids.append(len(ids))
            assert len(ids) <= bound, f"batch {batch}: {len(ids)} transactional ids > {bound}: {ids}"
        s.control.write_text("stop")
        driver.wait(120)
        report.driver_stderr.append(driver.stderr())
    finally:
        driver.stop()
    assert report.restarts == 1, "the driver was not killed after the commit point"
    return report


def check_batch_write(s: StreamScenario, report: ScenarioReport) -> None:
    """The batch job's rows exactly once, nothing open, its ids within the bound."""
    values = readers.read_values(s.bootstrap, s.batch_topic, SPARK_PARTITIONS)
    assert sorted(values) == sorted(str(i).encode() for i in range(s.batch_rows))
    readers.assert_no_open_transaction(s.bootstrap, s.batch_topic, SPARK_PARTITIONS)
    ids = set(transactional_ids(s.bootstrap, "txnkafka-batch-")) - set(report.batch_ids_before)
    assert 0 < len(ids) <= pool_bound(SPARK_PARTITIONS, DEFAULT_SLOTS), ids


def check_faults_struck_mid_write(s: StreamScenario) -> None:
    """The failed and the killed attempt had written records in an open transaction, which was
    aborted: more records than read_committed readers see."""
    written = sum(len(r) for r in readers.read_all(s.bootstrap, s.topic, SPARK_PARTITIONS,
                                                   "read_uncommitted").values())
    assert written > s.batches * s.rows_per_batch, "no attempt was interrupted mid-write"


def check_pipe(s: StreamScenario) -> None:
    """The pipeline's output: each committed input once, prefixed; nothing aborted; nothing open."""
    assert s.pipe_topic is not None
    committed = readers.read_values(s.bootstrap, s.topic, SPARK_PARTITIONS)
    piped = readers.read_values(s.bootstrap, s.pipe_topic, SPARK_PARTITIONS)
    assert sorted(piped) == sorted(b"piped-" + v for v in committed), (
        f"the pipe is not exactly once: {len(piped)} rows for {len(committed)} committed inputs")
    readers.assert_no_open_transaction(s.bootstrap, s.pipe_topic, SPARK_PARTITIONS)
    written = sum(len(r) for r in readers.read_all(s.bootstrap, s.pipe_topic, SPARK_PARTITIONS,
                                                   "read_uncommitted").values())
    print(f"pipe: {len(piped)} rows committed, {written - len(piped)} more written by attempts that were"
          " aborted (its own batches' task faults)")


def check_outcome(s: StreamScenario, report: ScenarioReport) -> None:
    """After :func:`run_stream_scenario`: the batch write, the faults, and the restart's recovery
    (and the pipe, when it ran). Prints a summary (``pytest -rP`` shows it)."""
    lags = sorted(report.lso_lag_s)
    print(f"{s.batches} micro-batches, {report.restarts} driver restart(s); commit -> LSO == HW:"
          f" max {lags[-1]:.2f}s, median {lags[len(lags) // 2]:.2f}s;"
          f" transactional ids of the query per batch: {report.ids}")
    check_batch_write(s, report)
    check_faults_struck_mid_write(s)
    assert max(report.lso_lag_s) < LSO_WITHIN_S
    restarted = report.driver_stderr[-1]
    assert "txn.spark_recovering_batch" in restarted and "txn.spark_replay_skipped" in restarted
    if s.pipe_topic:
        check_pipe(s)
