"""InitProducerId (key 22): get a producer id and epoch, or bump the epoch (KIP-360).

Versions: v4 under TV1, v5 under TV2 (capped by the broker); v6 with ``enable_2pc`` (KIP-939:
Enable2Pc, KeepPreparedTxn), refused with UnsupportedVersionError when the broker does not offer
v6. Two uses: ``init_transactions()`` (producer id -1: the coordinator fences older instances and
aborts their open transaction) and, under TV1 after an abortable produce error, the client-side
epoch bump with the current id/epoch once the abort is written (priority EPOCH_BUMP: after the
EndTxn). Errors: INVALID_TRANSACTION_TIMEOUT is fatal; TRANSACTIONAL_ID_AUTHORIZATION_FAILED and
CLUSTER_AUTHORIZATION_FAILED leave the producer UNINITIALIZED, so that ``init_transactions()`` can
be called again once the ACLs allow it (the Java client's rule; fatal on a KIP-360 bump);
TRANSACTION_ABORTABLE and
UNKNOWN_PRODUCER_ID have no transaction to abort here and are fatal; the rest as
:meth:`~txnproducer._internal.txn.handler.TxnRequestHandler.handle_common`.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.producer.transaction import InitProducerIdRequest

from txnproducer import errors
from txnproducer._internal.protocol.error_codes import (
    CLUSTER_AUTHORIZATION_FAILED,
    INVALID_TRANSACTION_TIMEOUT,
    NONE,
    TRANSACTION_ABORTABLE,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    UNKNOWN_PRODUCER_ID,
    UNSUPPORTED_VERSION,
)
from txnproducer._internal.txn.error_policy import (
    cluster_authorization_error,
    transactional_id_authorization_error,
)
from txnproducer._internal.txn.handler import Priority, TxnContext, TxnRequestHandler
from txnproducer._internal.txn.result import TransactionalRequestResult

#: why an InitProducerId is sent: init_transactions(), or an epoch bump (KIP-360: with the current
#: producer id and epoch)
INIT = "init"
AFTER_ABORT = "kip360_after_abort"  # TV1: an abortable produce error, or a prepared transaction ended
EXHAUSTED = "epoch_exhausted"  # the producer holds the last epoch (32767): a new producer id first


class InitProducerIdHandler(TxnRequestHandler):
    """Gets (or, with the current id/epoch, bumps - KIP-360) the producer id and epoch."""

    api_name = "InitProducerId"

    def __init__(
        self,
        tm: TxnContext,
        result: TransactionalRequestResult,
        *,
        epoch_bump: bool,
        producer_id: int = -1,
        producer_epoch: int = -1,
        keep_prepared_txn: bool = False,
        reason: str = AFTER_ABORT,
    ) -> None:
        super().__init__(tm, result)
        self.epoch_bump = epoch_bump
        self.reason = reason if epoch_bump else INIT
        self.priority = Priority.EPOCH_BUMP if epoch_bump else Priority.INIT_PRODUCER_ID
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        # KIP-939: keep an ongoing (prepared) transaction instead of aborting it (never on a bump)
        self.keep_prepared_txn = keep_prepared_txn and not epoch_bump

    def build_request(self) -> Any:
        tm = self._tm
        if tm.enable_2pc:
            # KIP-939: Enable2Pc/KeepPreparedTxn exist only in v6, which brokers advertise only with
            # transaction.two.phase.commit.enable; silently dropping them would lose the semantics
            broker_max = tm.broker_max_version(InitProducerIdRequest.API_KEY)
            if self.version_cap is not None:
                broker_max = self.version_cap if broker_max is None else min(broker_max, self.version_cap)
            if broker_max is not None and broker_max < 6:
                raise errors.UnsupportedVersionError(
                    f"enable_2pc needs InitProducerId v6 (KIP-939) but the broker supports only up to"
                    f" v{broker_max}: enable transaction.two.phase.commit.enable on the brokers, or drop"
                    " enable_2pc and complete prepared transactions with complete_transaction(state)"
                    " on an uninitialized producer",
                    error_code=UNSUPPORTED_VERSION,
                )
            return InitProducerIdRequest(
                version=6,
                transactional_id=tm.transactional_id,
                transaction_timeout_ms=tm.transaction_timeout_ms,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                enable2_pc=True,
                keep_prepared_txn=self.keep_prepared_txn,
            )
        return InitProducerIdRequest(
            version=self.version(InitProducerIdRequest),
            transactional_id=tm.transactional_id,
            transaction_timeout_ms=tm.transaction_timeout_ms,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
        )

    def prepare(self, version_cap: int | None = None) -> None:
        try:
            super().prepare(version_cap)
        except errors.UnsupportedVersionError as exc:
            self._request = None
            self.fatal_error(exc)
            raise

    def on_response(self, response: Any) -> None:
        code = int(response.error_code)
        if code == NONE:
            ongoing = (-1, -1)
            if self.keep_prepared_txn:
                ongoing_pid = getattr(response, "ongoing_txn_producer_id", None)
                ongoing_epoch = getattr(response, "ongoing_txn_producer_epoch", None)
                if ongoing_pid is not None and ongoing_epoch is not None:
                    ongoing = (int(ongoing_pid), int(ongoing_epoch))
            if self._tm.producer_id_received(int(response.producer_id), int(response.producer_epoch),
                                             self.result, reason=self.reason, ongoing=ongoing):
                self.result.set_success()
        elif code == INVALID_TRANSACTION_TIMEOUT:
            self.fatal_error(
                errors.InvalidTransactionTimeoutError(
                    f"transaction_timeout_ms={self._tm.transaction_timeout_ms} was rejected by the"
                    " broker (INVALID_TRANSACTION_TIMEOUT): it must be > 0 and <="
                    " transaction.max.timeout.ms (default 900000); fix the config",
                    error_code=code,
                )
            )
        elif code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED and not self.epoch_bump:
            # As the Java client: the producer goes back to UNINITIALIZED and init_transactions()
            # may be called again once the ACL allows it (a bump's refusal stays fatal)
            self._tm.init_refused(self, transactional_id_authorization_error(
                self._tm.transactional_id, self.api_name, init=True))
        elif code == CLUSTER_AUTHORIZATION_FAILED and not self.epoch_bump:
            self._tm.init_refused(self, cluster_authorization_error(self.api_name, init=True))
        elif code in (TRANSACTION_ABORTABLE, UNKNOWN_PRODUCER_ID):
            # no transaction to abort while initializing: nothing the application can do but restart
            self.unexpected(code)
        else:
            self.handle_common(code)
