"""Phase two on the driver: decide a batch, complete its transactions, fence the other attempts.

Spark runs the sink's ``commit``/``abort`` in a Python worker next to the driver (on Spark Connect,
next to the Connect server), a fresh object each time, so everything the driver knows between
batches is in the state topic (:mod:`txnproducer.spark.sink.state_topic`). Per batch:

1. **recover**: if the prefix's latest decision is not ``done``, a driver died while finishing it:
   finish it first (below). This also runs when Spark creates the writer for a new batch, before
   any task starts, so no task can register an id whose decided transaction is still prepared.
2. **decide** - the commit point: write ``decided`` (acks=all) naming the tasks' prepared
   transactions. From here on the batch *is* committed: a driver that dies is replaced by one that
   completes it in step 1. If the latest decision already committed this micro-batch, Spark is
   replaying a batch whose commit it did not record: its tasks wrote nothing (they saw the decision),
   and nothing is decided again.
3. **complete** every decided transaction (EndTxn with the recorded producer id/epoch;
   idempotent, concurrent up to ``commit.parallelism``).
4. **fence** every id announced since the previous decision's clean-up that did not win: failed,
   killed, speculative or superseded attempts, and a crashed run's. ``init_transactions()`` aborts
   what they left open and fences any that is still running (why this order suffices:
   :mod:`txnproducer.spark.sink.task`).
5. write ``done``, recording where the announcement scan stopped.

An abort decides ``abort`` and does the same with nothing to commit - unless the latest decision
committed the batch: ``commit()`` raised after its commit point and Spark aborts what is committed
(:meth:`Committer._aborts_a_committed_batch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from txnproducer._internal.log import get_logger

from ...otel import names
from ._faults import crash_point
from .completion import SinkCommitError, complete_states, fence_transactional_ids
from .decision import ABORT, COMMIT, DECIDED, Decision
from .options import SinkOptions
from .state_topic import StateTopic
from .task import TxnKafkaCommitMessage
from .tracing import sink_telemetry

__all__ = ["Committer"]

_log = get_logger("txnproducer.spark")


class Committer:
    """The driver's half of the protocol for one prefix (module docstring)."""

    def __init__(self, options: SinkOptions, state: StateTopic, announce_floor: int = 0) -> None:
        self.options = options
        self.state = state
        self.prefix = options.transactional_id_prefix
        self.announce_floor = announce_floor  # where a prefix's first clean-up starts reading
        # the decision's span, linked to the tasks' (tracing.py): off unless the sink is traced
        self.telemetry = sink_telemetry(options.otel_providers)

    def _complete(self, decision: Decision, states: Sequence[Any]) -> None:
        opts = self.options
        complete_states(states, commit=decision.committed, settings=opts.producer_settings,
                        parallelism=opts.commit_parallelism, timeout_s=opts.commit_timeout_s,
                        producer_kwargs=self.telemetry.producer_kwargs)

    def _announce_from(self, latest: Decision | None) -> int:
        """Where this decision's announcement scan starts: where the last one stopped."""
        if latest is None:
            return self.announce_floor
        return max(latest.announce_to, latest.announce_from)

    def _finish(self, decision: Decision) -> Decision:
        """Steps 4 and 5 for a decision whose transactions are complete."""
        announced, end = self.state.announcements(self.prefix, decision.announce_from)
        winners = {s.transactional_id for s in decision.states} if decision.committed else set()
        losers = sorted({a.transactional_id for a in announced} - winners)
        opts = self.options
        with self.telemetry.fence(losers):
            fence_transactional_ids(losers, settings=opts.producer_settings,
                                    parallelism=opts.commit_parallelism, timeout_s=opts.commit_timeout_s,
                                    producer_kwargs=self.telemetry.producer_kwargs)
        return self.state.write_decision(decision.finished(end))

    def recover(self) -> Decision | None:
        """Finish the latest decision if a driver died before it was done; return the latest
        decision (done), or None when the prefix has none."""
        latest = self.state.latest_decision(self.prefix)
        if latest is None or latest.done:
            return latest
        _log.warning("txn.spark_recovering_batch", prefix=self.prefix, batch=latest.batch,
                     outcome=latest.outcome, transactions=len(latest.states))
        with self.telemetry.batch(names.SPAN_SPARK_RECOVER, latest.batch, latest.query, self.prefix,
                                  latest.outcome) as span:
            _set(span, names.SPARK_TRANSACTION_COUNT, len(latest.states))
            self._complete(latest, latest.states)
            return self._finish(latest)

    def commit(self, messages: Sequence[Any], batch: int, job: str | None = None) -> None:
        """Commit a micro-batch (``batch`` >= 0) or a batch ``job``: steps 1-5."""
        latest = self.recover()
        reports = [m for m in messages if isinstance(m, TxnKafkaCommitMessage)]
        query = job if job is not None else _query_of(reports)
        with self.telemetry.batch(names.SPAN_SPARK_BATCH, batch, query, self.prefix, COMMIT, reports) as span:
            self._commit(reports, batch, job, query, latest, span)

    def _commit(self, reports: list[TxnKafkaCommitMessage], batch: int, job: str | None, query: str,
                latest: Decision | None, span: Any) -> None:
        states = [s for s in (m.state for m in reports) if s is not None]
        _set(span, names.SPARK_TRANSACTION_COUNT, len(states))
        if job is None and latest is not None and latest.query in ("", query):
            if latest.batch > batch:
                raise SinkCommitError(
                    f"txnkafka: the state topic {self.state.topic!r} records batch {latest.batch} of"
                    f" this query ({self.prefix}) as {latest.outcome}ed, but Spark is committing"
                    f" batch {batch}: was the checkpoint reset, or does another query use the prefix"
                    f" {self.prefix!r}? Give this query its own transactional.id.prefix")
            if latest.batch == batch and latest.committed:
                _log.warning("txn.spark_replay_skipped", prefix=self.prefix, batch=batch,
                             written=len(states))
                _set(span, names.SPARK_DECISION, "replay_skipped")
                # its tasks saw the decision and wrote nothing; anything else is aborted
                self._complete(Decision(self.prefix, batch, ABORT, DECIDED), states)
                return
        decision = Decision(self.prefix, batch, COMMIT, DECIDED, tuple(states), query,
                            announce_from=self._announce_from(latest))
        crash_point("before_decision", batch, self.prefix)
        decision = self.state.write_decision(decision)  # the commit point
        crash_point("after_decision", batch, self.prefix)
        self._complete(decision, states[:1])
        crash_point("after_first_commit", batch, self.prefix)
        self._complete(decision, states[1:])
        self._finish(decision)

    def abort(self, messages: Sequence[Any], batch: int, job: str | None = None) -> None:
        """Abort a micro-batch or a batch job whose tasks failed - unless this sink committed it
        already (see :meth:`_aborts_a_committed_batch`)."""
        latest = self.recover()
        reports = [m for m in messages if isinstance(m, TxnKafkaCommitMessage)]
        states = tuple(s for s in (m.state for m in reports) if s is not None)
        query = job if job is not None else _query_of(reports)
        if self._aborts_a_committed_batch(latest, batch, job, query, states):
            return
        with self.telemetry.batch(names.SPAN_SPARK_BATCH, batch, query, self.prefix, ABORT, reports) as span:
            _set(span, names.SPARK_TRANSACTION_COUNT, len(states))
            decision = self.state.write_decision(Decision(self.prefix, batch, ABORT, DECIDED, states, query,
                                                          announce_from=self._announce_from(latest)))
            self._complete(decision, states)
            self._finish(decision)


    def _aborts_a_committed_batch(self, latest: Decision | None, batch: int, job: str | None, query: str,
                                  states: tuple[Any, ...]) -> bool:
        """Whether Spark is aborting the batch the latest decision committed: ``commit()`` passed
        its commit point (the decision) and then raised - a completion or a fence that timed out -
        and Spark calls ``abort()`` after a failed ``commit()`` with the same messages. The decision
        stands (``recover()`` has just finished it): an ``abort`` decision naming its committed
        transactions could never be finished (the coordinator refuses to abort a committed one),
        and every later batch's ``recover()`` would fail on it. Spark replays the batch, whose
        tasks see the decision and write nothing. A state the decision does not name (none is
        expected: they are the same messages) is aborted."""
        if latest is None or not latest.committed or latest.batch != batch:
            return False
        if latest.query != query and not (job is None and latest.query == ""):
            return False
        _log.warning("txn.spark_abort_after_commit", prefix=self.prefix, batch=batch, query=query,
                     transactions=len(latest.states))
        decided = set(latest.states)
        self._complete(Decision(self.prefix, batch, ABORT, DECIDED), [s for s in states if s not in decided])
        return True


def _set(span: Any, key: str, value: Any) -> None:
    if span is not None:
        span.set_attribute(key, value)


def _query_of(reports: Sequence[TxnKafkaCommitMessage]) -> str:
    queries = {m.query for m in reports}
    if len(queries) > 1:
        raise SinkCommitError(f"txnkafka: commit messages of several queries in one batch: {sorted(queries)}")
    return queries.pop() if queries else ""
