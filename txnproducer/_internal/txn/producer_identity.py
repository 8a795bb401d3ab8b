"""The producer's identity across the coordinator's answers: its producer id and epoch.

Why apart: every answer that changes (producer id, epoch) - InitProducerId, a TV2 EndTxn - and the
epoch bumps that must follow before the next transaction are one concern with one invariant: **no
transaction begins at the last epoch** (Short.MAX_VALUE, :data:`~.producer_id.LAST_EPOCH`). Under
TV2 each transaction end bumps the epoch, so a transaction begun at 32767 has no epoch left to end
with; Kafka 4.0/4.1 then leave it Ongoing for good (KAFKA-20090: UNKNOWN_SERVER_ERROR to EndTxn and
to every later InitProducerId, the partitions' last stable offset stuck). The coordinator hands out
32767 only as the answer to a retry after its own abort (a transaction timeout) at 32766; this
layer then asks for a new producer id (InitProducerId with the current id and epoch, the KIP-360
path) before the producer is READY again. The other bump is TV1's after an abortable produce error
(KIP-360). Both complete the application's waiting result only when the producer is ready.

Read after :mod:`.core` and :mod:`.produce_side` (its bases); :mod:`.manager` builds on it.
"""

from __future__ import annotations

from typing import cast

from txnproducer import errors
from txnproducer._internal.txn.handler import TxnContext, TxnRequestHandler
from txnproducer._internal.txn.init_producer_id import AFTER_ABORT, EXHAUSTED, INIT, InitProducerIdHandler
from txnproducer._internal.txn.produce_side import ProduceSide
from txnproducer._internal.txn.producer_id import ProducerIdAndEpoch
from txnproducer._internal.txn.result import TransactionalRequestResult
from txnproducer._internal.txn.state import State, is_transition_valid

__all__ = ["ProducerIdentity"]


class ProducerIdentity(ProduceSide):
    """Producer id and epoch updates and the bumps that follow them (see the module docstring)."""

    def _as_context(self) -> TxnContext:
        # what handlers see of the manager: always a TransactionManager, which this layer is part of
        return cast(TxnContext, self)

    def enqueue(self, handler: TxnRequestHandler) -> None:
        self._requests.push(handler)

    def _fail_fatally(self, result: TransactionalRequestResult, exc: BaseException) -> None:
        self.transition_to_fatal_error(exc)
        result.set_error(exc)

    def producer_id_received(
        self,
        producer_id: int,
        epoch: int,
        result: TransactionalRequestResult,
        *,
        reason: str,
        ongoing: tuple[int, int] = (-1, -1),
    ) -> bool:
        """InitProducerId (sent for ``reason``) answered NONE. True if ``result`` is complete; False
        if another InitProducerId follows first and completes it: the answer left the producer at
        the last epoch (:data:`~.producer_id.LAST_EPOCH`), where no transaction may begin."""
        old = self._pid
        self._pid = ProducerIdAndEpoch(producer_id, epoch)
        self._sequences.reset()
        if reason != INIT:
            self.log("info", "txn.epoch_bumped", reason=reason, old_producer_id=old.producer_id,
                     old_epoch=old.epoch)
            if producer_id != old.producer_id:  # epoch exhausted: the coordinator gave a new id
                self.log("info", "txn.producer_id_assigned", reason="epoch_exhausted")
        else:
            self.log("info", "txn.producer_id_assigned")
        if ongoing[0] >= 0 and ongoing[1] >= 0 and self.state is State.INITIALIZING:
            # KIP-939: a prepared transaction survived the init; our new epoch completes it
            self._prepared = ProducerIdAndEpoch(ongoing[0], ongoing[1])
            self._transaction_started = True
            self._transition(State.PREPARED_TRANSACTION)
            self.log("info", "txn.prepared_transaction_kept", prepared_producer_id=ongoing[0],
                      prepared_epoch=ongoing[1])
            return True
        if self._pid.is_exhausted:
            if reason == EXHAUSTED:
                # we asked with the last epoch and got it back: a coordinator that will not rotate
                self._fail_fatally(result, errors.FatalError(
                    f"the coordinator answered InitProducerId({producer_id}, {epoch}) with the same"
                    f" exhausted epoch for transactional_id {self.transactional_id!r}: no transaction"
                    " can end at that epoch; close the producer and report this broker behaviour"))
                return False
            self._bump_exhausted_epoch(result)
            return False
        if is_transition_valid(self.state, State.READY):
            self._transition(State.READY)
            self._apply_requested_tv()
        return True

    def transaction_ended(self, producer_id: int, epoch: int, result: TransactionalRequestResult) -> bool:
        """EndTxn succeeded. True if ``result`` (what the application waits on) is complete; False
        if a TV1 epoch bump (KIP-360) follows first and completes it."""
        if producer_id >= 0 and epoch >= 0:
            # TV2 (EndTxn v5): the coordinator bumped the epoch - or, at epoch exhaustion, issued a
            # new producer id with epoch 0. Either way sequences restart at 0.
            new = ProducerIdAndEpoch(producer_id, epoch)
            old = self._pid
            if new != old:
                self._pid = new
                self._sequences.reset()
                reason = "end_txn" if new.producer_id == old.producer_id else "end_txn_epoch_exhausted"
                self.log(
                    "info",
                    "txn.epoch_bumped",
                    reason=reason,
                    old_producer_id=old.producer_id,
                    old_epoch=old.epoch,
                )
                if new.producer_id != old.producer_id:
                    self.log("info", "txn.producer_id_assigned", reason=reason)
            if new.is_exhausted:
                # the answer to a retried abort after the coordinator's own (timeout) abort at
                # 32766: a new producer id before READY (KAFKA-20090)
                self._epoch_bump_required = True
        return self._transaction_completed(result)

    def _transaction_completed(self, result: TransactionalRequestResult) -> bool:
        """The transaction is over: READY, or, when a bump is due (TV1, KIP-360: a produce error,
        also one that came in while the transaction was ending, or a prepared transaction),
        INITIALIZING until InitProducerId(pid, epoch) answers and completes ``result``."""
        bump = self._epoch_bump_required
        self._complete_transaction()
        if not bump:
            return True
        if self._pid.is_exhausted:
            self._bump_exhausted_epoch(result)
        else:
            self._bump_epoch(result, AFTER_ABORT)
        return False

    def _bump_exhausted_epoch(self, result: TransactionalRequestResult) -> None:
        """The producer holds the last epoch: InitProducerId with it (KIP-360) gets a new producer
        id at epoch 0 (the coordinator rotates an exhausted epoch), and ``result`` completes then.
        Under TV2 the alternative is worse than a round trip: a transaction begun at 32767 cannot
        end on Kafka 4.0/4.1 (KAFKA-20090) - the id stays Ongoing and its partitions' last stable
        offset stops. The state stays INITIALIZING meanwhile: the commit or abort (or
        init_transactions) that brought the last epoch returns once the new id is there."""
        self.log("info", "txn.epoch_exhausted", reason="new producer id before the next transaction")
        self._bump_epoch(result, EXHAUSTED)

    def _bump_epoch(self, result: TransactionalRequestResult, reason: str) -> None:
        self.enqueue(InitProducerIdHandler(self._as_context(), result, epoch_bump=True, reason=reason,
                                           producer_id=self._pid.producer_id, producer_epoch=self._pid.epoch))

    def _complete_transaction(self) -> None:
        target = State.INITIALIZING if self._epoch_bump_required else State.READY
        self._transition(target)
        self._prepared = None
        self._epoch_bump_required = False
        self._transaction_started = False
        self._new_partitions.clear()
        self._pending_partitions.clear()
        self._partitions_in_txn.clear()
        if target is State.READY:
            self._apply_requested_tv()
