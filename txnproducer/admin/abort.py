"""Ending a transaction from outside: first a plan that says exactly what will be done, then doing it.

Two kinds, because there are two kinds of stuck transaction and each has one safe way out:

* a **live** transaction - its coordinator still tracks it - is aborted by its coordinator:
  :class:`FenceAbortPlan` (``abort --transactional-id``) fences the transactional id (InitProducerId), and
  the coordinator writes the ABORT markers on every partition of the transaction. The producer using the
  id is fenced: its next call fails with ``ProducerFencedError``.
* a **hanging** transaction - open on a partition, forgotten by its coordinator - has nobody to end it:
  :class:`MarkerAbortPlan` (``abort --topic --partition`` with ``--start-offset`` or ``--producer-id``,
  ``--producer-epoch``, ``--coordinator-epoch``) writes the ABORT marker on that one partition through its
  leader (WriteTxnMarkers), as ``kafka-transactions.sh abort`` does.

The planning reads and checks; it writes nothing. What it refuses (:class:`NothingToAbortError`,
:class:`LiveTransactionError`): a partition with no open transaction matching what was named (so an abort
never lands on a transaction the user did not name); markers for a transaction its coordinator still
tracks on that partition (the coordinator would later write its own marker, and a producer still writing
would see its records aborted under it - the Java tool writes them anyway; here, abort it by its
transactional id instead); fencing an id without an open transaction, or one being committed.
"""

from __future__ import annotations

import time

import attrs

from .connection import AdminConnection, Deadline
from .describe_producers import describe_producers
from .describe_transactions import describe_transactions
from .errors import LiveTransactionError, NothingToAbortError
from .hanging import classify, transactional_ids_of
from .init_producer_id import fence_transactional_id
from .list_offsets import stable_and_end_offsets
from .metadata import leaders_of
from .results import HangingTransaction, TopicPartition
from .write_txn_markers import MOVED, write_abort_marker

__all__ = ["AbortResult", "FenceAbortPlan", "MarkerAbortPlan", "execute", "plan_fence", "plan_marker"]


def _age(ms: int) -> str:
    minutes, seconds = divmod(max(ms, 0) // 1000, 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


@attrs.frozen
class MarkerAbortPlan:
    """Write the ABORT marker of ``hanging`` (producer id, epoch, start offset on its partition) through
    the partition's leader, with ``coordinator_epoch`` (what the leader holds, -1 sent as 0)."""

    hanging: HangingTransaction
    leader_id: int
    coordinator_epoch: int

    def describe(self) -> str:
        h = self.hanging
        return (
            f"write an ABORT marker on {h.partition} through its leader, broker {self.leader_id},"
            " for producer"
            f" id {h.producer_id} (epoch {h.producer_epoch}, coordinator epoch {self.coordinator_epoch}):"
            f" ends its transaction that started at offset {h.start_offset}, last written"
            f" {_age(h.duration_ms)} ago; it is hanging because {h.reason}"
        )


@attrs.frozen
class FenceAbortPlan:
    """Fence ``transactional_id`` at its coordinator, which aborts its open transaction on ``partitions``."""

    transactional_id: str
    coordinator_id: int
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    partitions: tuple[TopicPartition, ...]
    duration_ms: int | None
    start_time_ms: int | None = None

    def describe(self) -> str:
        running = "" if self.duration_ms is None else f" (open for {_age(self.duration_ms)})"
        parts = ", ".join(str(p) for p in self.partitions) or "no partition yet"
        return (
            f"fence transactional id {self.transactional_id!r} at its coordinator,"
            f" broker {self.coordinator_id}"
            f" (producer id {self.producer_id}, epoch {self.producer_epoch}): the coordinator aborts its"
            f" {self.state} transaction on {parts}{running}; the producer using the id is fenced (its next"
            " call fails with ProducerFencedError)"
        )


AbortPlan = MarkerAbortPlan | FenceAbortPlan


@attrs.frozen
class AbortResult:
    """What an abort did: the plan, a sentence, and the partitions' (last stable offset, high
    watermark) afterwards (a marker abort; a fence reports the id's new producer epoch instead)."""

    plan: MarkerAbortPlan | FenceAbortPlan
    outcome: str
    offsets: dict[str, tuple[int, int]] = attrs.field(factory=dict)


def plan_marker(
    conn: AdminConnection,
    tp: TopicPartition,
    deadline: Deadline,
    *,
    start_offset: int | None = None,
    producer_id: int | None = None,
    producer_epoch: int | None = None,
    coordinator_epoch: int | None = None,
) -> MarkerAbortPlan:
    """Find the open transaction named on ``tp`` (by start offset, or by producer id and epoch) at its
    leader, check that its coordinator no longer tracks it there, and plan its ABORT marker."""
    if start_offset is None and (producer_id is None or producer_epoch is None):
        raise NothingToAbortError(
            "name the transaction to abort: --start-offset, or --producer-id with"
            " --producer-epoch (and --coordinator-epoch)"
        )
    found = describe_producers(conn, [tp], deadline)[tp]
    open_ones = found.open_transactions
    if start_offset is not None:
        match = [p for p in open_ones if p.txn_start_offset == start_offset]
        named = f"starting at offset {start_offset}"
    else:
        match = [p for p in open_ones if p.producer_id == producer_id]
        named = f"of producer id {producer_id}"
    if not match:
        others = (
            ", ".join(
                f"producer {p.producer_id} epoch {p.producer_epoch} from offset {p.txn_start_offset}"
                for p in open_ones
            )
            or "none"
        )
        raise NothingToAbortError(
            f"no open transaction {named} on {tp} (open there: {others}); nothing was written"
        )
    producer = match[0]
    if producer_epoch is not None and producer.producer_epoch != producer_epoch:
        raise NothingToAbortError(
            f"the leader of {tp} holds producer {producer.producer_id} at epoch"
            f" {producer.producer_epoch}, not"
            f" {producer_epoch}: the transaction named is not the open one; nothing was written"
        )
    now = int(time.time() * 1000)
    tid = transactional_ids_of(conn, [producer.producer_id], deadline).get(producer.producer_id)
    description = None if tid is None else describe_transactions(conn, [tid], deadline, missing_ok=True)[tid]
    hanging = classify(tp, producer, tid, description, now)
    if hanging is None:
        assert tid is not None and description is not None
        raise LiveTransactionError(
            f"the transaction of producer {producer.producer_id} on {tp} is live: its coordinator, broker"
            f" {description.coordinator_id}, tracks it for transactional id {tid!r}"
            f" ({description.state}); abort"
            f" it through the coordinator with --transactional-id {tid} (nothing was written)"
        )
    epoch = coordinator_epoch if coordinator_epoch is not None else (producer.coordinator_epoch or 0)
    return MarkerAbortPlan(hanging, found.broker_id, max(epoch, 0))


def plan_fence(conn: AdminConnection, transactional_id: str, deadline: Deadline) -> FenceAbortPlan:
    """Describe ``transactional_id`` and plan fencing it; refuses when it has nothing to abort."""
    d = describe_transactions(conn, [transactional_id], deadline)[transactional_id]
    assert d is not None
    if d.state == "PrepareCommit":
        raise NothingToAbortError(
            f"transactional id {transactional_id!r} is being committed (PrepareCommit): its"
            " coordinator is writing the COMMIT markers, fencing would not abort it"
        )
    if d.state in ("PrepareAbort", "PrepareEpochFence"):
        raise NothingToAbortError(
            f"transactional id {transactional_id!r} is already being aborted ({d.state})"
        )
    if d.state != "Ongoing":
        raise NothingToAbortError(
            f"transactional id {transactional_id!r} has no open transaction (state"
            f" {d.state}): nothing to abort"
        )
    return FenceAbortPlan(
        transactional_id,
        d.coordinator_id,
        d.producer_id,
        d.producer_epoch,
        d.state,
        d.timeout_ms,
        d.partitions,
        d.duration_ms(int(time.time() * 1000)),
        d.start_time_ms,
    )


def execute(conn: AdminConnection, plan: MarkerAbortPlan | FenceAbortPlan, deadline: Deadline) -> AbortResult:
    """Do what ``plan`` says (the plan's ``describe()``) and report what came of it."""
    if isinstance(plan, FenceAbortPlan):
        now = describe_transactions(conn, [plan.transactional_id], deadline)[plan.transactional_id]
        seen = None if now is None else (now.state, now.producer_id, now.producer_epoch, now.start_time_ms)
        if seen != ("Ongoing", plan.producer_id, plan.producer_epoch, plan.start_time_ms):
            raise NothingToAbortError(
                f"the transaction of {plan.transactional_id!r} that was planned is no longer the open one"
                f" (now: state, producer id, epoch, start time = {seen}); nothing was aborted: plan again"
            )
        pid, epoch = fence_transactional_id(conn, plan.transactional_id, plan.timeout_ms, deadline)
        after = describe_transactions(conn, [plan.transactional_id], deadline)[plan.transactional_id]
        state = "unknown" if after is None else after.state
        return AbortResult(
            plan,
            f"fenced {plan.transactional_id!r}: producer id {pid} epoch {epoch} now, state"
            f" {state}; its transaction was aborted by the coordinator",
        )
    h = plan.hanging
    # the planned transaction must still be the one open there (a producer may have moved on meanwhile)
    still = describe_producers(conn, [h.partition], deadline)[h.partition].open_transactions
    if not any(
        (p.producer_id, p.producer_epoch, p.txn_start_offset)
        == (h.producer_id, h.producer_epoch, h.start_offset)
        for p in still
    ):
        raise NothingToAbortError(
            f"the transaction of producer {h.producer_id} planned on {h.partition} (epoch {h.producer_epoch},"
            f" from offset {h.start_offset}) is no longer open there; nothing was written"
        )
    leader = plan.leader_id
    while True:
        code = write_abort_marker(
            conn, leader, h.partition, h.producer_id, h.producer_epoch, plan.coordinator_epoch, deadline
        )
        if code not in MOVED:
            break
        conn.backoff(deadline, f"finding the new leader of {h.partition}")
        leader = leaders_of(conn, [h.partition], deadline)[1][h.partition]
    lso, hw = stable_and_end_offsets(conn, [h.partition], deadline)[h.partition]
    held = "" if lso >= hw else f"; another open transaction still holds it at offset {lso}"
    return AbortResult(
        plan,
        f"wrote the ABORT marker of producer {h.producer_id} on {h.partition} (broker {leader}):"
        f" last stable offset {lso}, high watermark {hw}{held}",
        {str(h.partition): (lso, hw)},
    )
