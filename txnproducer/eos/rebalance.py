"""What a consume-transform-produce loop does when its group moves partitions: :class:`Rebalances`, the
consumer's rebalance listener of :class:`~txnproducer.eos.TransactionalProcessor`.

The invariant (DESIGN, "Read side"): no offsets of this loop's transaction may be committed for a
partition another member already reads, and nothing this loop read may be skipped. The callbacks run
on the loop's own thread, inside its ``poll``, before the partitions can reach another member, so the
open transaction can be ended first - how depends on the group protocol:

- **classic** (eager): every partition is revoked before the member rejoins. The open transaction is
  aborted and the partitions it read that come back are rewound to where it started.
- **consumer** (KIP-848, incremental): only the partitions that move are revoked, and the coordinator
  gives them to another member only after this member's next heartbeat stops listing them; its epoch
  - the fencing identity of the transaction's offsets - stays valid until then. A transaction that
  read nothing of them goes on: the partitions kept never stop. One that did is **committed** before
  the release (``commit_on_revocation``, the default) or aborted. Both keep exactly-once: the new
  owner reads the committed offsets with require_stable, so it starts right after what this
  transaction committed (or where it started, after an abort), never before, never after. Committing
  is the default because it costs one EndTxn where aborting costs the work of the whole transaction
  on the partitions this member keeps - processed again, their output delayed
  (``benchmarks/README.md``, "Rebalance pauses").
- **lost** partitions (the member was fenced or dropped; either protocol): another member may own
  them already and the epoch is gone, so the transaction is aborted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer.eos.positions import InputPositions
from txnproducer.eos.progress import TxnProgress
from txnproducer.otel import set_abort_reason

__all__ = ["AssignCallback", "Rebalances"]

#: ``on_assigned(partitions)``: called with the partitions the loop owns after each rebalance.
AssignCallback = Callable[[set[TopicPartition]], None]


class Rebalances:
    """The processor's consumer listener (see the module docstring). ``clients()``: the producer and
    the consumer (made when the loop starts); ``commit()``: the loop's commit of the open transaction
    (it aborts and rewinds itself if the commit fails); ``count(**increments)``: its metrics."""

    def __init__(self, *, progress: TxnProgress, positions: InputPositions,
                 clients: Callable[[], tuple[Any, Any]], commit: Callable[[], None],
                 count: Callable[..., None], closed: Callable[[], bool], log: Any,
                 incremental: bool, commit_on_revocation: bool, on_assigned: AssignCallback | None,
                 op_timeout_s: float) -> None:
        self._progress = progress
        self._positions = positions
        self._clients = clients
        self._commit = commit
        self._count = count
        self._closed = closed
        self._log = log
        self._incremental = incremental
        self._commit_on_revocation = commit_on_revocation
        self._on_assigned = on_assigned
        self._op_s = op_timeout_s
        #: the input partitions the loop owns now
        self.assigned: frozenset[TopicPartition] = frozenset()

    # -- RebalanceListener -------------------------------------------------------------------------

    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        self._taken(set(revoked), lost=False)

    def on_partitions_lost(self, lost: list[TopicPartition]) -> None:
        self._taken(set(lost), lost=True)

    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        """The whole new assignment (classic) or the partitions added to it (consumer protocol)."""
        self.assigned = self.assigned | set(assigned)
        self._count(rebalances=1)
        self._log.info("eos.assigned", added=sorted(f"{tp.topic}-{tp.partition}" for tp in assigned),
                       partitions=len(self.assigned))
        if self._on_assigned is not None:
            try:
                self._on_assigned(set(self.assigned))
            except Exception as exc:  # a user callback must not break a rebalance half-way
                self._log.warning("eos.on_assigned_failed", error=repr(exc))

    # -- ending the transaction ----------------------------------------------------------------------

    def _taken(self, partitions: set[TopicPartition], lost: bool) -> None:
        self.assigned = self.assigned - partitions
        try:
            if not self._progress.open or self._closed():
                return
            if self._incremental and not lost:
                if not partitions & self._progress.partitions():
                    return  # the transaction read nothing of them: it goes on
                if self._commit_on_revocation:
                    self._log.info("eos.committing_before_revocation", partitions=len(partitions))
                    self._count(commits_on_revocation=1)
                    self._commit()
                    return
            self._abort(partitions, lost)
        finally:
            self._positions.forget(partitions)

    def _abort(self, partitions: set[TopicPartition], lost: bool) -> None:
        """Abort while the partitions are still ours; a partition of the transaction the group leaves
        with us goes back to where the transaction started on it."""
        producer, consumer = self._clients()
        start = dict(self._progress.start)
        self._progress.reset()
        reason = "lost" if lost else "revoked"
        self._log.info("eos.aborting", reason=reason, partitions=len(partitions))
        set_abort_reason(producer, reason)
        try:
            producer.abort_transaction(timeout=self._op_s)
        except errors.TimeoutError as exc:
            raise errors.FatalError(f"abort on revocation did not complete within operation_timeout_ms: "
                                    f"{exc}") from exc
        self._count(transactions_aborted=1, aborts_on_revocation=1)
        for tp, offset in start.items():
            if tp not in partitions and tp in self.assigned:
                consumer.seek(tp, offset)
