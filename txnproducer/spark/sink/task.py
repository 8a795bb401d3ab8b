"""One task attempt of the sink, on an executor: phase one of the two-phase commit.

The attempt needs nothing but Kafka. In order:

1. read the latest decision of its prefix (state topic); if its batch is already settled
   (:func:`~txnproducer.spark.sink.decision.attempt_superseded`: a late speculative copy, or Spark's
   replay of a batch the sink committed), write nothing and report ``superseded``;
2. pick a transactional id from the pool (:mod:`txnproducer.spark.sink.id_pool`) and *announce* it
   (acks=all) - from here on the driver will fence this id unless it commits it;
3. ``init_transactions()`` on that id: this fences every older holder of the id and aborts
   whatever they left open;
4. read the latest decision again; if the batch was settled meanwhile, close without writing;
5. send the rows in one transaction and *prepare* it; the prepared state is the commit message.

Why this order keeps "a late attempt never leaves a transaction open" (the driver's half is in
:mod:`txnproducer.spark.sink.committer`: it writes the decision, *then* reads the announcements, *then*
fences every announced id it did not commit). Take an attempt A of batch N and the driver D:

* A's announcement is among those D reads. D fences A's id after writing the decision. If A's
  ``init_transactions`` came first, D's fence bumps the epoch past A's: A's produce requests are
  refused and anything A opened is aborted. If A's init came after D's fence, it came after the
  decision was acknowledged, so A's second read (step 4) sees it and A writes nothing.
* A's announcement is not among them: it was acknowledged after D read the end of the
  announcements, which D did after its decision was acknowledged. A's init, and then its second
  read, come later still: A sees the decision and writes nothing.

Either way A has no open transaction once D has finished the batch. The first read (step 1) is not
needed for that argument; it keeps a late attempt from registering the id at all, because
registering aborts whatever is open under the id - by then possibly a *later* batch's transaction
(ids are reused). What is left of that hazard: an attempt that read "undecided" and then stalls
before its init while the driver decides, completes and moves on, and a later batch's attempt takes
the same id and prepares. The slot choice skips ids with an open transaction, which narrows this to
a stall between that check and the init; if it happens anyway, the driver's commit of the later
batch fails with PreparedTransactionLostError (docs/guide/spark.md, limits).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import attrs
from pyspark.sql.datasource import WriterCommitMessage

from txnproducer._internal.log import get_logger

from ...config import ProducerConfig
from ...otel import names
from ...prepared import PreparedTxnState
from ...producer import TransactionalProducer
from .decision import Announcement, Decision, attempt_superseded
from .id_pool import choose_slot
from .options import SinkOptions
from .state_topic import shared_state_topic
from .tracing import sink_telemetry

__all__ = ["TaskIdentity", "TxnKafkaCommitMessage", "run_attempt", "task_identity"]

_log = get_logger("txnproducer.spark")
BATCH_ID_PROPERTY = "streaming.sql.batchId"  # set by Spark's MicroBatchExecution for its jobs
QUERY_ID_PROPERTY = "sql.streaming.queryId"


@dataclass
class TxnKafkaCommitMessage(WriterCommitMessage):
    """What a task reports to the driver: its prepared transaction (JSON; None when the attempt
    was superseded and wrote nothing), how many rows it holds, and who wrote it; ``trace_context``: the
    W3C traceparent of the attempt's span when the sink is traced (``txnproducer.spark.sink.tracing``)."""

    state_json: str | None
    records: int
    partition_id: int
    attempt: int
    batch: int
    query: str
    trace_context: str | None = None

    @property
    def state(self) -> PreparedTxnState | None:
        return None if self.state_json is None else PreparedTxnState.from_json(self.state_json)

    @property
    def superseded(self) -> bool:
        return self.state_json is None


@attrs.frozen
class TaskIdentity:
    """``batch``: the micro-batch id (-1 for a batch job); ``query``: the streaming query's id or
    the batch job's; Spark's partition and attempt number."""

    batch: int
    query: str
    partition: int
    attempt: int


def task_identity(job: str | None) -> TaskIdentity:
    """The running task's identity, from Spark's TaskContext (``job``: a batch job's id)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("txnkafka: write() must run inside a Spark task")
    if job is not None:
        return TaskIdentity(-1, job, ctx.partitionId(), ctx.attemptNumber())
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY)
    query = ctx.getLocalProperty(QUERY_ID_PROPERTY)
    if batch is None or query is None:
        raise RuntimeError(
            f"txnkafka: the streaming task has no {BATCH_ID_PROPERTY!r}/{QUERY_ID_PROPERTY!r} local"
            " property; this Spark version runs micro-batches differently from the one the sink"
            " knows (Spark 4.1+ micro-batch mode; continuous processing is not supported)")
    return TaskIdentity(int(batch), str(query), ctx.partitionId(), ctx.attemptNumber())


def _producer(options: SinkOptions, transactional_id: str) -> TransactionalProducer:
    return TransactionalProducer(ProducerConfig.from_mapping(
        {**options.producer_settings, "transactional.id": transactional_id}),
        **sink_telemetry(options.otel_providers).producer_kwargs)


def run_attempt(options: SinkOptions, scan_floor: int, who: TaskIdentity,
                write: Callable[[TransactionalProducer], int]) -> TxnKafkaCommitMessage:
    """Run one attempt (module docstring). ``scan_floor``: the offset at or after which the
    prefix's latest decision lies (the driver found it when it created the writer). ``write``
    sends the rows in the open transaction and returns how many. Traced, the attempt is a
    ``txnkafka task`` span whose context the commit message carries."""
    telemetry = sink_telemetry(options.otel_providers)
    with telemetry.task(who, options.transactional_id_prefix) as span:
        message = _attempt(options, scan_floor, who, write, span)
        if span is not None:
            span.set_attribute(names.SPARK_SUPERSEDED, message.superseded)
            span.set_attribute(names.RECORD_COUNT, message.records)
            message = dataclasses.replace(message, trace_context=telemetry.traceparent(span))
        return message


def _attempt(options: SinkOptions, scan_floor: int, who: TaskIdentity,
             write: Callable[[TransactionalProducer], int], span: Any) -> TxnKafkaCommitMessage:
    prefix = options.transactional_id_prefix
    superseded = TxnKafkaCommitMessage(None, 0, who.partition, who.attempt, who.batch, who.query)
    with shared_state_topic(options.producer_settings, options.state_topic,
                            timeout_s=options.commit_timeout_s) as state:
        at_start = state.latest_decision(prefix, scan_floor)
        if attempt_superseded(at_start, who.batch, who.query):
            _superseded(who, at_start, registered=False)
            return superseded
        slot, transactional_id = choose_slot(prefix, who.partition, who.attempt, options.slots,
                                             state.transaction_open)
        producer = _producer(options, transactional_id)  # it connects while we announce
        if span is not None:
            span.set_attribute(names.TRANSACTIONAL_ID, transactional_id)
        try:
            state.announce(Announcement(prefix, who.batch, who.query, who.partition, slot, who.attempt,
                                        transactional_id))
            producer.init_transactions()
            latest = state.latest_decision(prefix, scan_floor if at_start is None else at_start.offset)
        except BaseException:
            producer.close(options.commit_timeout_s)
            raise
    if attempt_superseded(latest, who.batch, who.query, registered=True, at_start=at_start):
        producer.close(options.commit_timeout_s)
        _superseded(who, latest, registered=True)
        return superseded
    return _write_and_prepare(producer, options, who, write)


def _write_and_prepare(producer: TransactionalProducer, options: SinkOptions, who: TaskIdentity,
                       write: Callable[[TransactionalProducer], int]) -> TxnKafkaCommitMessage:
    transactional_id = producer.config.transactional_id
    try:
        producer.begin_transaction()
        count = write(producer)
        state = producer.prepare_transaction()
    except BaseException:
        try:
            producer.abort_transaction(timeout=options.commit_timeout_s)
        except Exception as exc:  # the driver fences the id later; keep the original error
            _log.warning("txn.spark_task_abort_failed", transactional_id=transactional_id, error=repr(exc))
        raise
    finally:
        producer.close(options.commit_timeout_s)  # a prepared transaction outlives its producer
    _log.info("txn.spark_task_prepared", transactional_id=transactional_id, records=count,
              batch=who.batch, attempt=who.attempt)
    return TxnKafkaCommitMessage(state.to_json(), count, who.partition, who.attempt, who.batch, who.query)


def _superseded(who: TaskIdentity, decision: Decision | Any, registered: bool) -> None:
    # warning: worth seeing in executor logs without any logging setup (Python workers have none)
    _log.warning("txn.spark_attempt_superseded", batch=who.batch, partition=who.partition,
                 attempt=who.attempt, decided_batch=getattr(decision, "batch", None),
                 outcome=getattr(decision, "outcome", None), registered=registered)
