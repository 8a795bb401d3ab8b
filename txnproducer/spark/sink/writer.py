"""The ``txnkafka`` sink's writers: exactly-once Kafka writes from PySpark batch and streaming.

Two-phase commit across Spark's task/driver split, with all shared state in Kafka:

1. **Executors** (``write``, :mod:`txnproducer.spark.sink.task`): each task attempt takes a
   transactional id from the query's bounded pool (``<prefix>-<partition>-<slot>``,
   :mod:`txnproducer.spark.sink.id_pool`), sends its rows in one transaction and *prepares* it; the
   prepared state is its commit message. An attempt whose batch is already decided writes nothing.
2. **Driver** (``commit``/``abort``, :mod:`txnproducer.spark.sink.committer`): records the decision in
   the state topic (the commit point), completes the prepared transactions, fences every other
   attempt's id, and records the batch done.

Spark creates the writer on the driver once per micro-batch (and per commit); each time, the sink
first finishes a decision a dead driver left (:meth:`Committer.recover`), so no task of the next
batch can register an id whose decided transaction is still waiting.

Guarantee: each row of a committed batch is visible to read_committed consumers exactly once,
whatever tasks fail or the driver dies, provided every prepared transaction is completed within the
transaction timeout (``kafka.transaction.timeout.ms``, default 60 s, at most the broker's
``transaction.max.timeout.ms``) counted from the task's first record. Past it the coordinator
aborts the transaction and the driver's commit raises, naming the lost records
(:class:`~txnproducer.errors.PreparedTransactionLostError` inside :class:`SinkCommitError`): the
query stops instead of silently losing data.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter
from pyspark.sql.types import StructType

from ._faults import task_fault
from .committer import Committer
from .legacy import finish_legacy_log
from .options import SinkOptions
from .records import check_columns, send_batches
from .state_topic import ANNOUNCEMENTS, DECISIONS, StateTopic, shared_state_topic
from .task import TxnKafkaCommitMessage, run_attempt, task_identity

__all__ = ["TxnKafkaBatchWriter", "TxnKafkaStreamWriter", "batch_writer", "stream_writer"]


def _state_topic(options: SinkOptions) -> contextlib.AbstractContextManager[StateTopic]:
    return shared_state_topic(options.producer_settings, options.state_topic,
                              timeout_s=options.commit_timeout_s,
                              replication_factor=options.state_replication_factor)


class _SinkWriter:
    """Shared by the batch and the streaming writer. ``scan_floor``: the decisions offset at or
    after which the prefix's latest decision lies; ``announce_floor``: where a first decision's
    announcement scan starts; ``job``: a batch job's id (None when streaming)."""

    def __init__(self, options: SinkOptions, scan_floor: int, announce_floor: int, job: str | None) -> None:
        self.options = options
        self.scan_floor = scan_floor
        self.announce_floor = announce_floor
        self.job = job

    def _write(self, batches: Iterator[Any]) -> TxnKafkaCommitMessage:
        topic = self.options.topic
        who = task_identity(self.job)
        fault = task_fault(who.batch, who.partition, who.attempt)
        return run_attempt(self.options, self.scan_floor, who,
                           lambda producer: send_batches(producer, batches, topic, fault))

    def _decide(self, messages: list[Any], batch: int, commit: bool) -> None:
        with _state_topic(self.options) as state:
            committer = Committer(self.options, state, announce_floor=self.announce_floor)
            if commit:
                committer.commit(messages, batch, self.job)
            else:
                committer.abort(messages, batch, self.job)


class TxnKafkaBatchWriter(_SinkWriter, DataSourceArrowWriter):
    """``df.write.format("txnkafka")``: one job, committed as one decision."""

    def write(self, iterator: Iterator[Any]) -> TxnKafkaCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[Any]) -> None:
        self._decide(messages, -1, commit=True)

    def abort(self, messages: list[Any]) -> None:
        self._decide(messages, -1, commit=False)


class TxnKafkaStreamWriter(_SinkWriter, DataSourceStreamArrowWriter):
    """``df.writeStream.format("txnkafka")``: one decision per micro-batch."""

    def write(self, iterator: Iterator[Any]) -> TxnKafkaCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:
        self._decide(messages, batchId, commit=True)

    def abort(self, messages: list[Any], batchId: int) -> None:
        self._decide(messages, batchId, commit=False)


def _prepare(options: Any, schema: StructType, streaming: bool) -> tuple[SinkOptions, int, int]:
    """Parse the options, make sure the state topic exists, migrate an old commit log, and finish
    any decision a dead driver left - all on the driver, before a task runs."""
    opts = SinkOptions.parse(options, streaming=streaming)
    check_columns([f.name for f in schema.fields], opts.topic)
    with _state_topic(opts) as state:
        state.ensure()
        finish_legacy_log(opts, state)
        if opts.prefix_is_ephemeral:  # a fresh prefix has no records: nothing to look back at
            return opts, state.end_offset(DECISIONS), state.end_offset(ANNOUNCEMENTS)
        latest = Committer(opts, state).recover()
        return opts, latest.offset if latest else state.end_offset(DECISIONS), 0


def batch_writer(options: Any, schema: StructType) -> TxnKafkaBatchWriter:
    """The writer of ``df.write.format("txnkafka")``: one job, one decision."""
    opts, scan_floor, announce_floor = _prepare(options, schema, streaming=False)
    return TxnKafkaBatchWriter(opts, scan_floor, announce_floor, job=uuid.uuid4().hex)


def stream_writer(options: Any, schema: StructType) -> TxnKafkaStreamWriter:
    """The writer of ``df.writeStream.format("txnkafka")``: a decision per micro-batch."""
    opts, scan_floor, announce_floor = _prepare(options, schema, streaming=True)
    return TxnKafkaStreamWriter(opts, scan_floor, announce_floor, job=None)
