"""The ``txnkafka`` Python data source: an exactly-once Kafka sink for PySpark batch and streaming.

Protocol (two-phase commit across Spark's task/driver split):

1. **Executors** (``write``): each task attempt opens its own transactional producer
   (``<prefix>-<run>-<stage>-<partition>-<attempt>``), records the transaction as pending in the
   commit log, sends its rows in one transaction and *prepares* it (flush, every record acked,
   transaction frozen). The :class:`~txnproducer.PreparedTxnState` is the task's commit message.
   A task that fails aborts its transaction; one that is killed leaves it pending.
2. **Driver** (``commit``): first finish what a dead driver left (commit-log entries without a
   done marker are committed), then - if this batch was already committed (Spark replays a
   micro-batch whose commit it did not record) - abort the replayed transactions; otherwise write
   the batch's states to the commit log (the commit point, atomic), commit each with EndTxn
   (no InitProducerId), and mark the entry done. Then it marks the stage decided, so that an
   attempt starting later opens no transaction, and finally every other pending transaction
   (failed, killed or speculative attempts, or a crashed run's) is aborted by fencing its id.
3. **Driver** (``abort``): abort the prepared transactions of the failed batch, mark the stage
   decided, abort the orphans.

Guarantee: each row of a committed batch is visible to read_committed consumers exactly once,
whatever tasks fail or the driver dies, provided every prepared transaction is committed within
the transaction timeout (``kafka.transaction.timeout.ms``, default 60 s, at most the broker's
``transaction.max.timeout.ms``) counted from the task's first record. Past it the coordinator
aborts the transaction and the driver's commit raises, naming the lost records
(:class:`~txnproducer.errors.PreparedTransactionLostError`): the query stops instead of silently
losing data.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from txnproducer._internal.log import get_logger

from ..config import ProducerConfig
from ..errors import TxnProducerError
from ..prepared import PreparedTxnState
from ..producer import TransactionalProducer
from ._faults import crash_point
from .commit_log import CommitLog
from .completion import complete_states, fence_transactional_ids
from .options import SinkOptions
from .records import check_columns, row_to_record

__all__ = ["SupersededAttemptError", "TxnKafkaCommitMessage", "TxnKafkaDataSource"]

_log = get_logger("txnproducer.spark")


class SupersededAttemptError(TxnProducerError):
    """A task attempt started after the driver had decided its stage (a late speculative or
    retried attempt). It wrote nothing and opened no transaction; Spark already has the stage's
    outcome, so this failure of a redundant attempt changes nothing."""


@dataclass
class TxnKafkaCommitMessage(WriterCommitMessage):
    """What a task reports: its prepared transaction (JSON) and how many rows it holds."""

    state_json: str
    records: int
    partition_id: int
    attempt: int
    stage: str = ""  # Spark's stage id: the driver marks the stage decided (commit_log.py)

    @property
    def state(self) -> PreparedTxnState:
        return PreparedTxnState.from_json(self.state_json)


def _task_identity() -> tuple[str, int, int]:
    """(stage, partition, attempt) of the running task, from Spark's TaskContext."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:  # not inside a task (unit use): unique anyway
        return uuid.uuid4().hex[:8], 0, 0
    return str(ctx.stageId()), ctx.partitionId(), ctx.attemptNumber()


class _Writer:
    """Shared by the batch and the streaming writer (see the module docstring)."""

    def __init__(self, options: SinkOptions, commit_log: str, run_id: str) -> None:
        self.options = options
        self.commit_log_path = commit_log
        self.run_id = run_id

    # --- executors --------------------------------------------------------------------------------

    def _write(self, rows: Iterator[Any]) -> TxnKafkaCommitMessage:
        opts = self.options
        stage, partition_id, attempt = _task_identity()
        transactional_id = "-".join(
            (opts.transactional_id_prefix, self.run_id, stage, str(partition_id), str(attempt)))
        log = CommitLog(self.commit_log_path)
        # pending first: if this attempt dies from here on, the driver can find and abort it
        log.record_pending(transactional_id, None)
        if log.stage_decided(self._stage_key(stage)):
            # a late speculative or retried attempt: the driver has committed (or aborted) this
            # stage and will not look at our transaction, so open none (commit_log.py: decided/)
            log.remove_pending(transactional_id)
            raise SupersededAttemptError(
                f"task attempt {transactional_id!r} started after the driver decided its stage; "
                "another attempt's output was committed (or the stage aborted), so this one wrote "
                "nothing")
        producer = TransactionalProducer(
            ProducerConfig.from_mapping({**opts.producer_settings, "transactional.id": transactional_id}))
        count = 0
        try:
            producer.init_transactions()
            producer.begin_transaction()
            for row in rows:
                topic, key, value, partition, headers = row_to_record(row, opts.topic)
                producer.send(topic, value, key=key, partition=partition, headers=headers or None)
                count += 1
            state = producer.prepare_transaction()
            log.record_pending(transactional_id, state)
        except BaseException:
            try:
                producer.abort_transaction(timeout=opts.commit_timeout_s)
            except Exception as exc:  # the driver fences it later; keep the original error
                _log.warning("txn.spark_task_abort_failed", transactional_id=transactional_id,
                             error=repr(exc))
            raise
        finally:
            producer.close(opts.commit_timeout_s)  # a prepared transaction outlives its producer
        _log.info("txn.spark_task_prepared", transactional_id=transactional_id, records=count)
        return TxnKafkaCommitMessage(state.to_json(), count, partition_id, attempt, stage)

    def _stage_key(self, stage: str) -> str:
        return f"{self.run_id}-{stage}"

    def _mark_decided(self, log: CommitLog, messages: list[Any]) -> None:
        """Before the clean-up: late attempts of these stages must not open transactions."""
        for stage in {m.stage for m in messages if isinstance(m, TxnKafkaCommitMessage) and m.stage}:
            log.mark_stage_decided(self._stage_key(stage))

    # --- driver -----------------------------------------------------------------------------------

    def _complete(self, states: list[PreparedTxnState], commit: bool) -> None:
        opts = self.options
        complete_states(states, commit=commit, settings=opts.producer_settings,
                        parallelism=opts.commit_parallelism, timeout_s=opts.commit_timeout_s)

    def recover(self) -> None:
        """Commit every batch whose commit was recorded but not seen to finish (idempotent)."""
        log = CommitLog(self.commit_log_path).ensure()
        for entry in log.undone():
            _log.warning("txn.spark_recovering_batch", key=entry.key, transactions=len(entry.states))
            self._complete(list(entry.states), commit=True)
            log.mark_done(entry.key)
            for state in entry.states:
                log.remove_pending(state.transactional_id)

    def _commit(self, messages: list[Any], key: str, batch_id: int) -> None:
        log = CommitLog(self.commit_log_path).ensure()
        self.recover()
        states = [m.state for m in messages if isinstance(m, TxnKafkaCommitMessage)]
        entry = log.entry(key)
        if entry is not None:
            # Spark replays a batch whose sink commit it did not record: it is in Kafka already
            _log.warning("txn.spark_replay_aborted", key=key, transactions=len(states))
            self._complete(states, commit=False)
        else:
            crash_point("before_log_entry", batch_id)
            log.record_commit(key, states)  # the commit point
            crash_point("after_log_entry", batch_id)
            self._complete(states[:1], commit=True)
            crash_point("after_first_commit", batch_id)
            self._complete(states[1:], commit=True)
            log.mark_done(key)
        self._mark_decided(log, messages)
        self._cleanup(log, completed={s.transactional_id for s in states})

    def _abort(self, messages: list[Any]) -> None:
        log = CommitLog(self.commit_log_path).ensure()
        self.recover()
        states = [m.state for m in messages if isinstance(m, TxnKafkaCommitMessage)]
        self._complete(states, commit=False)
        self._mark_decided(log, messages)
        self._cleanup(log, completed={s.transactional_id for s in states})

    def _cleanup(self, log: CommitLog, completed: set[str]) -> None:
        """Abort every pending transaction nobody will commit, then forget it.

        Called once this batch is decided and every recorded batch is complete, so any pending
        transaction not in ``completed`` (this batch's, just committed or aborted) is an orphan:
        a failed, killed or speculative attempt, or a crashed run's. Fencing one that did commit
        is harmless (nothing is open under its id).
        """
        for transactional_id in completed:
            log.remove_pending(transactional_id)
        pending = log.pending()
        opts = self.options
        fence_transactional_ids([p.transactional_id for p in pending], settings=opts.producer_settings,
                                parallelism=opts.commit_parallelism, timeout_s=opts.commit_timeout_s)
        for p in pending:
            log.remove_pending(p.transactional_id)


class TxnKafkaBatchWriter(_Writer, DataSourceWriter):
    """``df.write.format("txnkafka")``: one job, committed atomically per task transaction."""

    def __init__(self, options: SinkOptions, commit_log: str, run_id: str) -> None:
        super().__init__(options, commit_log, run_id)
        self.job_key = f"job-{run_id}"

    def write(self, iterator: Iterator[Any]) -> TxnKafkaCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[Any]) -> None:
        self._commit(messages, self.job_key, -1)

    def abort(self, messages: list[Any]) -> None:
        self._abort(messages)


class TxnKafkaStreamWriter(_Writer, DataSourceStreamWriter):
    """``df.writeStream.format("txnkafka")``: one commit-log entry per micro-batch."""

    def write(self, iterator: Iterator[Any]) -> TxnKafkaCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:
        self._commit(messages, f"batch-{batchId:020d}", batchId)

    def abort(self, messages: list[Any], batchId: int) -> None:
        self._abort(messages)


class TxnKafkaDataSource(DataSource):
    """The ``txnkafka`` data source; register it with ``spark.dataSource.register(...)``."""

    @classmethod
    def name(cls) -> str:
        return "txnkafka"

    def schema(self) -> str:
        return "key binary, value binary, topic string, partition int"

    def _make(self, schema: StructType, streaming: bool) -> tuple[SinkOptions, str, str]:
        opts = SinkOptions.parse(self.options, streaming=streaming)
        check_columns([f.name for f in schema.fields], opts.topic)
        commit_log = opts.commit_log
        if commit_log is None:  # batch without a configured log: a fresh local directory
            import tempfile

            commit_log = tempfile.mkdtemp(prefix="txnkafka-")
        return opts, commit_log, uuid.uuid4().hex[:12]

    def writer(self, schema: StructType, overwrite: bool) -> TxnKafkaBatchWriter:
        opts, commit_log, run_id = self._make(schema, streaming=False)
        writer = TxnKafkaBatchWriter(opts, commit_log, run_id)
        writer.recover()
        return writer

    def streamWriter(self, schema: StructType, overwrite: bool) -> TxnKafkaStreamWriter:
        opts, commit_log, run_id = self._make(schema, streaming=True)
        writer = TxnKafkaStreamWriter(opts, commit_log, run_id)
        writer.recover()  # finish batches a dead driver recorded, before new work starts
        return writer
