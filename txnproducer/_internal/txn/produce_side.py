"""What the produce path asks and reports: partitions a batch may go to, sequences, batch outcomes.

Why apart: these are the calls of ``send()`` (``maybe_add_partition``), the accumulator
(``is_send_to_partition_allowed``, ``has_broker_state``, ``assign_sequence``,
``release_sequence``: the ``TransactionGate`` it declares) and the Sender (batch completed,
split, failed; may a batch be retried), and the decisions behind them: which produce errors are
fatal and which only make the transaction abortable (the Java client's rule), when
OUT_OF_ORDER_SEQUENCE_NUMBER and UNKNOWN_PRODUCER_ID are retried, and when TV1 must bump the
epoch itself (KIP-360).
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.protocol.error_codes import (
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PRODUCER_FENCED,
    UNKNOWN_PRODUCER_ID,
    is_retriable,
)
from txnproducer._internal.txn.core import TxnCore
from txnproducer._internal.txn.error_policy import (
    as_fatal_produce_error,
    code_of,
    is_fatal_produce_error,
)
from txnproducer._internal.txn.state import State, illegal_call_message

__all__ = ["ProduceSide"]


class ProduceSide(TxnCore):
    """The produce path's view of the transaction (see the module docstring); thread-safe."""

    # -- send() ------------------------------------------------------------------------------------------

    def add_partition(self, tp: TopicPartition) -> None:
        """``send()`` put a record for ``tp`` into the accumulator: ``tp`` is part of the
        transaction (TV1: AddPartitionsToTxn goes out before its batch; TV2: the Produce adds it).

        Called only after the append succeeded, as the Java client does: a send() that raised
        queued nothing, and the coordinator must not hear of a transaction that has no record
        (under TV2 an EndTxn for it would be answered INVALID_TXN_STATE). Never raises: if the
        transaction is no longer open to records (another thread aborted it, an error made it
        abortable), the record's batch is failed by the abort that must follow.
        """
        with self._lock:
            if self.state is not State.IN_TRANSACTION and self.state is not State.COMMITTING_TRANSACTION:
                return
            if self._tv >= 2:
                self._partitions_in_txn.add(tp)
                self._transaction_started = True
            elif tp not in self._partitions_in_txn and tp not in self._pending_partitions:
                self._new_partitions.add(tp)

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """``send()``'s two steps at once, for callers with nothing to append in between: raise
        unless records may be sent now (:meth:`fail_if_not_ready_for_send`), then
        :meth:`add_partition`."""
        with self._lock:
            self._check_ready_for_send()
            self.add_partition(tp)

    def fail_if_not_ready_for_send(self, call: str = "send") -> None:
        """Raise unless records may be added to the open transaction; ``call`` names the API
        call in the message (``send``, ``prepare_transaction``, ...)."""
        with self._lock:
            self._check_ready_for_send(call)

    def _check_ready_for_send(self, call: str = "send") -> None:
        self._throw_if_pending(call)
        self._maybe_fail_with_error(call)
        if not self._pid.is_valid:
            raise errors.IllegalStateError(
                f"{call}() called before init_transactions() completed (state {self.state.name}):"
                " call init_transactions() first"
            )
        if self.state is not State.IN_TRANSACTION:
            raise errors.IllegalStateError(illegal_call_message(call, self.state, self.transactional_id))

    # -- the accumulator (TransactionGate) ---------------------------------------------------------------

    def state_lost_to_retention(self, tp: TopicPartition, log_start_offset: int | None) -> bool:
        """Did the broker drop this producer's state on ``tp`` because the log start moved past
        everything we wrote there (UNKNOWN_PRODUCER_ID with that log start offset)?"""
        with self._lock:
            return self._state_lost_to_retention(tp, log_start_offset)

    def _state_lost_to_retention(self, tp: TopicPartition, log_start_offset: int | None) -> bool:
        return (log_start_offset is not None and log_start_offset >= 0
                and self._sequences.last_acked_offset(tp) < log_start_offset)

    def restart_sequences(self, tp: TopicPartition, record_counts: list[int]) -> list[int]:
        """Start ``tp``'s sequences again at 0 for its in-flight batches (``record_counts`` in
        sequence order, the Java client's ``startSequencesAtBeginning``); returns their new base
        sequences, which the Sender stamps on them."""
        with self._lock:
            self._broker_state.discard(tp)
            bases = self._sequences.restart(tp, record_counts)
            self.log("info", "txn.sequences_restarted", topic=tp.topic, partition=tp.partition,
                     batches=len(record_counts))
            return bases

    def is_send_to_partition_allowed(self, tp: TopicPartition) -> bool:
        """May a batch for ``tp`` be drained now? TV1: once AddPartitionsToTxn succeeded for it;
        TV2: once ``send()`` added it to the open transaction (Produce v12 adds it implicitly)."""
        # No lock (the accumulator asks for every partition with data, in every ready() and drain()):
        # two reads, each atomic; an answer that changes right after is as stale with the lock.
        return self.state is not State.FATAL_ERROR and tp in self._partitions_in_txn

    def sequence_number(self, tp: TopicPartition) -> int:
        with self._lock:
            return self._sequences.next_sequence(tp)

    def assign_sequence(self, tp: TopicPartition, record_count: int) -> int:
        """The base sequence of a new batch of ``record_count`` records for ``tp``, and the partition's
        next sequence moved past it (the accumulator's drain, once per batch)."""
        with self._lock:
            return self._sequences.assign(tp, record_count)

    def release_sequence(self, tp: TopicPartition, base_sequence: int, record_count: int) -> None:
        """Take back the sequences ``assign_sequence`` just gave a batch that could not be encoded
        (it never leaves the client): the partition's next batch gets them, leaving no gap."""
        with self._lock:
            self._sequences.failed(tp, base_sequence, record_count, True)

    def has_broker_state(self, tp: TopicPartition) -> bool:
        """Has the broker acknowledged a batch of the current producer id on ``tp``? Until then it
        would take any sequence as the first (see RecordAccumulator._head_sendable).

        No lock (the accumulator asks on every drain): the Sender thread is the only one that
        writes the set (batch outcomes) and the only one that asks (ready/drain)."""
        return self._broker_state_pid == self._pid.producer_id and tp in self._broker_state

    # -- the Sender: batch outcomes ----------------------------------------------------------------------

    def last_acked_sequence(self, tp: TopicPartition) -> int:
        with self._lock:
            return self._sequences.last_acked_sequence(tp)

    def handle_completed_batches(self, outcomes: Iterable[tuple[TopicPartition, int, int, int, int]]) -> None:
        """The broker appended these batches: ``(tp, base_sequence, record_count, producer_epoch,
        base_offset)`` each, in the order of the Produce answer. One lock for an answer's batches (a
        transaction over six partitions completes six at once); a batch of an older epoch changes
        nothing (its sequences were reset with the epoch)."""
        with self._lock:
            epoch = self._pid.epoch
            pid = self._pid.producer_id
            completed = self._sequences.completed
            for tp, base_sequence, record_count, producer_epoch, base_offset in outcomes:
                if producer_epoch != epoch:
                    continue
                completed(tp, base_sequence, record_count, base_offset)
                if self._broker_state_pid != pid:
                    self._broker_state = set()
                    self._broker_state_pid = pid
                self._broker_state.add(tp)

    def handle_split_batch(self, tp: TopicPartition, base_sequence: int, record_counts: list[int]) -> None:
        """A batch refused as too large was split into parts that keep its sequence range."""
        with self._lock:
            self._sequences.split(tp, base_sequence, record_counts)

    def handle_failed_batch(
        self,
        tp: TopicPartition,
        base_sequence: int,
        record_count: int,
        producer_epoch: int,
        exc: BaseException,
        adjust_sequences: bool,
    ) -> None:
        """A produce batch failed for good: decide what it means for the transaction.

        Authorization of the transactional id/cluster, fencing and unsupported versions are fatal;
        anything else makes the open transaction abortable (the Java client's rule). Under TV1 the
        producer then bumps its epoch after the abort (KIP-360), because the partition's sequence
        state is no longer known; under TV2 the EndTxn(abort) bump does that. INVALID_PRODUCER_EPOCH
        on produce means the coordinator already bumped (e.g. the transaction timed out): abortable
        (KIP-588), unlike the same code from the coordinator, which means fenced.
        """
        with self._lock:
            code = code_of(exc)
            if is_fatal_produce_error(exc, code):
                fenced = self.fenced_error(PRODUCER_FENCED, "Produce")
                self.transition_to_fatal_error(as_fatal_produce_error(exc, code, fenced))
            elif self.state in (State.IN_TRANSACTION, State.COMMITTING_TRANSACTION, State.ABORTABLE_ERROR):
                if self._tv < 2:
                    self._epoch_bump_required = True
                self.transition_to_abortable_error(self.abortable_produce_error(exc, code, tp))
            elif (self.state is State.ABORTING_TRANSACTION and self._tv < 2 and base_sequence >= 0
                  and producer_epoch == self._pid.epoch):
                # A batch that was sent failed, or expired unanswered, while the transaction was
                # being aborted: the broker's sequence for the partition is unknown, and TV1 keeps
                # the epoch for the next transaction. Bump it after the abort (KIP-360), or the
                # next batch there would meet OUT_OF_ORDER_SEQUENCE_NUMBER until it expired.
                self._epoch_bump_required = True
            if self.state is State.FATAL_ERROR or producer_epoch != self._pid.epoch:
                return
            if code == UNKNOWN_PRODUCER_ID:
                # the broker has no state for us: it will accept sequence 0 again
                self._sequences.reset_partition(tp)
                self._broker_state.discard(tp)
            else:
                self._sequences.failed(tp, base_sequence, record_count, adjust_sequences)

    def can_retry(
        self,
        tp: TopicPartition,
        error_code: int,
        batch_epoch: int,
        batch_base_sequence: int,
        *,
        log_start_offset: int | None = None,
        sequence_reset: bool = False,
    ) -> bool:
        """May the Sender re-send a batch that got ``error_code``?

        UNKNOWN_PRODUCER_ID is retried only when the broker could not tell its log start offset
        (-1); OUT_OF_ORDER_SEQUENCE_NUMBER only when the batch is not the next expected one (an
        earlier batch failed and this one is collateral) and the transaction can still commit;
        otherwise the code's retriability.

        Why not once the transaction is doomed: then an earlier batch of the partition may have
        failed for good, and the broker keeps waiting for that batch's sequence, which never comes
        (this batch's bytes keep theirs). Retrying would last until ``delivery_timeout_ms`` and hold
        up ``abort_transaction()``; the records are aborted either way, and the abort's epoch bump
        (TV2: EndTxn; TV1: KIP-360) starts the partition's sequences again.
        """
        with self._lock:
            if self.state is State.FATAL_ERROR:
                return False
            if error_code == UNKNOWN_PRODUCER_ID:
                # the Java client's three cases: the partition moved (no log start offset yet), the
                # answer is to this batch's bytes from before its sequences started again, or
                # retention removed our state (the Sender then restarts the sequences at 0)
                return (log_start_offset == -1 or sequence_reset
                        or self._state_lost_to_retention(tp, log_start_offset))
            if error_code == OUT_OF_ORDER_SEQUENCE_NUMBER:
                if self.state is State.ABORTABLE_ERROR or self.state is State.ABORTING_TRANSACTION:
                    return False
                return batch_epoch == self._pid.epoch and not self._sequences.is_next_sequence(
                    tp, batch_base_sequence
                )
            return is_retriable(error_code)
