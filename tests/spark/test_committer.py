"""The driver's half of the txnkafka sink: decisions, recovery, replays and lost transactions.

A driver that dies is simulated by an exception at the sink's named crash points (the Spark tier,
tests/spark/test_spark_sink.py, SIGKILLs real drivers there): what the next driver finds in the
state topic must let it finish the batch, and the tasks of Spark's replay must not write it again.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (the [spark] extra)")

from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

from tests._support import sink_protocol as protocol
from txnproducer.spark import SinkCommitError
from txnproducer.spark.datasource import TxnKafkaDataSource
from txnproducer.spark.sink import committer as committer_module
from txnproducer.spark.sink.commit_log import CommitLog
from txnproducer.spark.sink.options import SinkOptions
from txnproducer.spark.sink.state_topic import close_shared_state_topic
from txnproducer.testing import MockCluster

TOPIC = protocol.TOPIC
ROWS = [b"v%d" % i for i in range(4)]
SCHEMA = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                     StructField("partition", IntegerType())])


class DriverKilled(BaseException):
    """Stands for SIGKILL at a crash point: nothing after it runs."""


def kill_driver_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    def crash_point(name: str, batch: int, prefix: str = "") -> None:
        if name == point:
            raise DriverKilled(f"{name}:{batch}")

    monkeypatch.setattr(committer_module, "crash_point", crash_point)


def data_source(cluster: MockCluster, **extra: str) -> TxnKafkaDataSource:
    return TxnKafkaDataSource({"kafka.bootstrap.servers": cluster.bootstrap_servers, "topic": TOPIC,
                               "transactional.id.prefix": "q1", "commit.timeout.ms": "10000", **extra})


def test_driver_killed_after_the_decision_finishes_the_batch_before_any_task(
        cluster: MockCluster, options: SinkOptions, monkeypatch: pytest.MonkeyPatch) -> None:
    first = protocol.attempt(options, 3, 0, 0, ROWS[:2])
    second = protocol.attempt(options, 3, 1, 0, ROWS[2:])
    kill_driver_at(monkeypatch, "after_first_commit")
    with protocol.committer(options) as driver, pytest.raises(DriverKilled):
        driver.commit([first, second], 3)
    monkeypatch.undo()
    assert protocol.open_transactions(cluster, TOPIC), "the second transaction is still prepared"
    assert protocol.committed(cluster, TOPIC) == ROWS[:2]

    # the restarted query: Spark creates the writer for the replay of batch 3 - before any task
    writer = data_source(cluster).streamWriter(SCHEMA, overwrite=False)
    protocol.assert_settled(cluster, TOPIC, ROWS)

    replay = [protocol.attempt(writer.options, 3, p, 0, [b"again"]) for p in range(2)]
    assert all(m.superseded for m in replay)
    writer.commit(replay, 3)
    protocol.assert_settled(cluster, TOPIC, ROWS)


def test_spark_aborting_a_batch_whose_commit_raised_after_the_decision_keeps_it_committed(
        cluster: MockCluster, options: SinkOptions, monkeypatch: pytest.MonkeyPatch) -> None:
    """commit() can raise after its commit point (a completion or a fence that timed out under load);
    Spark then calls abort() with the same messages. The batch is committed (the decision is the
    commit point): abort() must finish it, not decide "abort" over committed transactions - that
    decision could never be finished (INVALID_TXN_STATE: already committed), and every later writer
    failed on it, the query stuck for good (seen in make test's cluster tier under load)."""
    first = protocol.attempt(options, 4, 0, 0, ROWS[:2])
    second = protocol.attempt(options, 4, 1, 0, ROWS[2:])

    def crash_point(name: str, batch: int, prefix: str = "") -> None:
        if name == "after_first_commit":
            raise SinkCommitError("completing the second transaction timed out")

    monkeypatch.setattr(committer_module, "crash_point", crash_point)
    with protocol.committer(options) as driver:
        with pytest.raises(SinkCommitError, match="timed out"):
            driver.commit([first, second], 4)
        monkeypatch.undo()
        driver.abort([first, second], 4)  # what Spark does after a failed commit()
    protocol.assert_settled(cluster, TOPIC, ROWS)

    # the query goes on: the next writer finds nothing to recover, the replay of batch 4 writes nothing
    writer = data_source(cluster).streamWriter(SCHEMA, overwrite=False)
    replay = [protocol.attempt(writer.options, 4, p, 0, [b"again"]) for p in range(2)]
    assert all(m.superseded for m in replay)
    writer.commit(replay, 4)
    protocol.assert_settled(cluster, TOPIC, ROWS)


def test_driver_killed_before_the_decision_leaves_orphans_the_replay_fences(
        cluster: MockCluster, options: SinkOptions, monkeypatch: pytest.MonkeyPatch) -> None:
    orphan = protocol.attempt(options, 5, 0, 0, [b"lost"])
    kill_driver_at(monkeypatch, "before_decision")
    with protocol.committer(options) as driver, pytest.raises(DriverKilled):
        driver.commit([orphan], 5)
    monkeypatch.undo()
    assert protocol.open_transactions(cluster, TOPIC)

    # slot 0 is busy with the orphan: the replay takes slot 1
    replay = protocol.attempt(options, 5, 0, 0, ROWS)
    assert replay.state is not None and replay.state.transactional_id == "q1-0-1"
    with protocol.committer(options) as driver:
        driver.commit([replay], 5)

    protocol.assert_settled(cluster, TOPIC, ROWS)


def test_coordinator_aborting_a_prepared_transaction_stops_the_query_naming_the_loss(
        cluster: MockCluster, options: SinkOptions) -> None:
    message = protocol.attempt(options, 0, 0, 0, ROWS)
    assert message.state is not None
    cluster.expire_transaction(message.state.transactional_id)  # the transaction timeout ran out

    lost_records = pytest.raises(SinkCommitError, match="RECORDS WERE LOST")
    with protocol.committer(options) as driver, lost_records as lost:
        driver.commit([message], 0)
    assert message.state.transactional_id in str(lost.value)

    # never silent: every restart reports the same loss instead of moving on
    with pytest.raises(SinkCommitError, match="RECORDS WERE LOST"):
        data_source(cluster).streamWriter(SCHEMA, overwrite=False)
    assert protocol.committed(cluster, TOPIC) == []


def test_a_batch_older_than_the_last_decision_of_the_same_query_is_refused(
        cluster: MockCluster, options: SinkOptions) -> None:
    with protocol.committer(options) as driver:
        driver.commit([protocol.attempt(options, 9, 0, 0, ROWS)], 9)
        with pytest.raises(SinkCommitError, match="checkpoint reset"):
            driver.commit([protocol.attempt(options, 2, 0, 0, [b"x"], query="query-1")], 2)


def test_batch_job_late_attempt_after_the_job_commit_writes_nothing(cluster: MockCluster) -> None:
    source = TxnKafkaDataSource({"kafka.bootstrap.servers": cluster.bootstrap_servers, "topic": TOPIC,
                                 "commit.timeout.ms": "10000"})
    writer = source.writer(SCHEMA, overwrite=False)
    assert writer.options.prefix_is_ephemeral and writer.job
    job = writer.job
    won = protocol.attempt(writer.options, -1, 0, 0, ROWS, query=job)
    writer.commit([won])

    late = protocol.attempt(writer.options, -1, 0, 1, [b"late"], query=job)
    assert late.superseded
    other_job = protocol.attempt(writer.options, -1, 0, 0, [b"next"], query="another-job")
    assert not other_job.superseded  # a decision settles only its own job
    writer.abort([other_job])
    protocol.assert_settled(cluster, TOPIC, ROWS)


def test_commit_log_of_an_older_version_is_finished_and_its_last_batch_not_written_again(
        cluster: MockCluster, options: SinkOptions, tmp_path: Path) -> None:
    # what the previous version left: batch 6 recorded as protocol.committed (its transaction still
    # prepared), and a pending transaction of an protocol.attempt nobody protocol.committed
    decided = protocol.attempt(options, 6, 0, 0, ROWS)
    orphan = protocol.attempt(options, 6, 0, 1, [b"orphan"])
    assert decided.state is not None and orphan.state is not None
    log = CommitLog(str(tmp_path)).ensure()
    log.record_commit(f"batch-{6:020d}", [decided.state])
    log.record_pending(orphan.state.transactional_id, orphan.state)
    (tmp_path / "commits" / f"batch-{5:020d}.json").write_text(json.dumps({"key": "b5", "states": []}))

    writer = data_source(cluster, **{"commit.log": str(tmp_path)}).streamWriter(SCHEMA, overwrite=False)

    protocol.assert_settled(cluster, TOPIC, ROWS)
    assert log.undone() == [] and log.pending() == []
    replay = protocol.attempt(writer.options, 6, 0, 0, ROWS, query="query-after-upgrade")
    assert replay.superseded  # Spark's replay of batch 6 is not written twice
    writer.commit([replay], 6)
    protocol.assert_settled(cluster, TOPIC, ROWS)


def test_two_phase_commit_brokers_work_the_same(tmp_path: Path) -> None:
    """KIP-939: with 2PC on the brokers and the producers, prepared transactions do not time out;
    the protocol is unchanged."""
    with MockCluster(num_brokers=1, enable_2pc=True) as kafka:
        kafka.create_topic(TOPIC, partitions=1)
        options = protocol.sink_options(kafka, TOPIC)
        options = attrs.evolve(options, producer_settings={
            **options.producer_settings, "transaction.two.phase.commit.enable": "true"})
        winner = protocol.attempt(options, 0, 0, 0, ROWS)
        loser = protocol.attempt(options, 0, 0, 1, [b"speculative"])
        assert winner.state is not None and loser.state is not None
        with protocol.committer(options) as driver:
            driver.commit([winner], 0)
        protocol.assert_settled(kafka, TOPIC, ROWS)
        close_shared_state_topic()
