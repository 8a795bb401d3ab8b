"""EndTxn (key 26): commit or abort the transaction, or complete a recorded prepared one.

Versions: v4 under TV1 (the epoch stays), v5 under TV2: the answer carries the producer id and
epoch to use next (the coordinator bumps the epoch at every transaction end; at exhaustion it
issues a new producer id with epoch 0), which the manager adopts, resetting sequences. A retry
repeats the pre-bump epoch it was built with: the coordinator recognises it as a retry of a lost
answer (conformance ``errors.json`` case e). Sent only once every batch of the transaction is
complete (``next_request``). Two handlers: :class:`EndTxnHandler` for the producer's own
transaction, :class:`CompletePreparedHandler` for a prepared transaction recorded elsewhere (phase
two of a two-phase commit on brokers without KIP-939), which never changes the producer's state.
"""

from __future__ import annotations

from typing import Any

from txnproducer import errors
from txnproducer._internal.protocol.end_txn import EndTxnRequestData
from txnproducer._internal.protocol.error_codes import (
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TXN_STATE,
    NONE,
    PRODUCER_FENCED,
    TRANSACTION_ABORTABLE,
    error_name,
)
from txnproducer._internal.txn.handler import Priority, TxnContext, TxnRequestHandler
from txnproducer._internal.txn.result import TransactionalRequestResult


def _end_txn_request(tm: TxnContext, version: int, producer_id: int, epoch: int,
                     committed: bool) -> EndTxnRequestData:
    """EndTxn for (producer id, epoch): the producer's own transaction or a recorded prepared one
    (our codec's request: ``protocol/end_txn.py``)."""
    return EndTxnRequestData(
        version=version,
        transactional_id=tm.transactional_id,
        producer_id=producer_id,
        producer_epoch=epoch,
        committed=committed,
    )


class EndTxnHandler(TxnRequestHandler):
    """Commits or aborts; under TV2 (v5) the answer carries the producer id/epoch to use next."""

    priority = Priority.END_TXN
    is_end_txn = True
    api_name = "EndTxn"

    def __init__(self, tm: TxnContext, result: TransactionalRequestResult, committed: bool) -> None:
        super().__init__(tm, result)
        self.committed = committed
        pid = tm.producer_id_and_epoch
        # captured now: a TV2 retry must repeat the pre-bump epoch (the coordinator answers a
        # retried EndTxn with the bumped id/epoch - conformance errors.json case e)
        self.producer_id = pid.producer_id
        self.producer_epoch = pid.epoch
        # the identity of the prepared transaction this EndTxn completes (None: an ordinary one)
        self.prepared: tuple[int, int] | None = tm.prepared_identity()

    def build_request(self) -> Any:
        return _end_txn_request(self._tm, self.version(EndTxnRequestData), self.producer_id,
                                self.producer_epoch, self.committed)

    def on_response(self, response: Any) -> None:
        code = int(response.error_code)
        if code == NONE:
            new_pid = int(getattr(response, "producer_id", -1))
            new_epoch = int(getattr(response, "producer_epoch", -1))
            if self._tm.transaction_ended(new_pid, new_epoch, self.result):
                self.result.set_success()
        elif self.committed and self.prepared is not None and code in LOST_PREPARED_CODES:
            pid, epoch = self.prepared
            self.fatal_error(prepared_lost_error(self._tm.transactional_id, pid, epoch, code))
        elif code == TRANSACTION_ABORTABLE and not self.committed:
            # An abort answered "abort": the Java client (4.1, KAFKA-19250) makes this fatal, as
            # an application that aborts again would loop; the coordinator ends the transaction.
            self.fatal_error(
                errors.FatalError(
                    "the coordinator answered TRANSACTION_ABORTABLE to EndTxn(abort): the transaction"
                    " cannot be ended by this producer; close it and create a new one (the new"
                    " instance's init_transactions() aborts what is left)",
                    error_code=code,
                )
            )
        else:
            self.handle_common(code)


# What the coordinator answers to a commit of a prepared transaction it no longer has open.
LOST_PREPARED_CODES = frozenset(
    {INVALID_TXN_STATE, PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING}
)


def prepared_lost_error(
    transactional_id: str, producer_id: int, epoch: int, code: int
) -> errors.PreparedTransactionLostError:
    """The error for a commit of a prepared transaction the coordinator already ended.

    The broker keeps no history, so the answer code is what tells why: INVALID_TXN_STATE (TV2) -
    the transaction was aborted; PRODUCER_FENCED / INVALID_PRODUCER_EPOCH - a newer epoch exists
    (the coordinator aborted it on timeout, or a producer initialized without keep_prepared_txn);
    INVALID_PRODUCER_ID_MAPPING - the transactional id now maps to another producer id (expired).
    """
    what = (
        f"prepared transaction of transactional_id {transactional_id!r} (producer id {producer_id},"
        f" epoch {epoch})"
    )
    if code == INVALID_TXN_STATE:
        why = (
            "the coordinator already aborted it (INVALID_TXN_STATE): it ran past transaction_timeout_ms"
            " or was aborted explicitly"
        )
    elif code == INVALID_PRODUCER_ID_MAPPING:
        why = (
            "the coordinator no longer maps the transactional id to that producer id"
            " (INVALID_PRODUCER_ID_MAPPING: the id expired or was re-created), so the transaction was aborted"
        )
    else:
        why = (
            f"the coordinator has moved past that epoch ({error_name(code)}): it aborted the transaction"
            " when it ran past transaction_timeout_ms, or when another producer with this"
            " transactional id called init_transactions() without keep_prepared_txn (or it was"
            " committed earlier and the transactional id has been used since)"
        )
    return errors.PreparedTransactionLostError(
        f"cannot commit the {what}: {why}. Its records were lost and will never become visible to"
        " read_committed consumers; the data must be written again",
        error_code=code,
    )


class CompletePreparedHandler(TxnRequestHandler):
    """Commits or aborts a prepared transaction recorded elsewhere, by its producer id/epoch.

    This is phase two of a two-phase commit on brokers without KIP-939 (or without it enabled): no
    InitProducerId - that would abort the transaction - just EndTxn with the recorded id/epoch to
    the coordinator. The producer's own state does not change. A repeated commit of a committed
    transaction succeeds (TV1: same epoch, CompleteCommit -> NONE; TV2: the pre-bump epoch is taken
    as a retry -> NONE), which makes phase two idempotent.
    """

    priority = Priority.END_TXN
    api_name = "EndTxn"

    def __init__(
        self, tm: TxnContext, result: TransactionalRequestResult, producer_id: int, epoch: int,
        committed: bool,
    ) -> None:
        super().__init__(tm, result)
        self.producer_id = producer_id
        self.producer_epoch = epoch
        self.committed = committed

    def build_request(self) -> Any:
        return _end_txn_request(self._tm, self.version(EndTxnRequestData), self.producer_id,
                                self.producer_epoch, self.committed)

    def on_response(self, response: Any) -> None:
        code = int(response.error_code)
        tm = self._tm
        if code == NONE:
            tm.log_debug("txn.prepared_completed", committed=self.committed,
                          prepared_producer_id=self.producer_id, prepared_epoch=self.producer_epoch)
            self.result.set_success()
        elif code in LOST_PREPARED_CODES and self.committed:
            self.result.set_error(
                prepared_lost_error(tm.transactional_id, self.producer_id, self.producer_epoch, code)
            )
        elif code == INVALID_TXN_STATE:
            self.result.set_error(
                errors.InvalidTxnStateError(
                    f"cannot abort the prepared transaction of transactional_id {tm.transactional_id!r}"
                    f" (producer id {self.producer_id}, epoch {self.producer_epoch}): the coordinator"
                    " answered INVALID_TXN_STATE - it was already committed",
                    error_code=code,
                )
            )
        elif code in LOST_PREPARED_CODES:
            # abort: the coordinator moved past this transaction, so nothing of it can still commit
            tm.log("info", "txn.prepared_already_ended", code=error_name(code),
                    prepared_producer_id=self.producer_id, prepared_epoch=self.producer_epoch)
            self.result.set_success()
        else:
            self.handle_common(code)
