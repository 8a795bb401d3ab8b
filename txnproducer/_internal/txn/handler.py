"""The base of every coordinator request handler, its send priority, and the interface it sees.

Why: the Java client's ``TransactionManager`` decides what every coordinator error means per
request type (KIP-98, KIP-360, KIP-588, KIP-890, KIP-1050), in one inner handler class per request.
Here each request has its own module named after it (``end_txn.py``, ``init_producer_id.py``, ...)
whose handler builds the request and maps each error code of the answer; this module holds what
they share: retry bookkeeping, the errors every coordinator request treats alike
(:meth:`TxnRequestHandler.handle_common`), and :class:`TxnContext`, the narrow, named interface
through which a handler reads and changes the transaction manager's state (the manager implements
it; handlers never import the manager, so there is no import circle).

Life of a handler: the manager creates it and queues it by :class:`Priority`; the Sender takes it
with ``next_request()``, builds the request with :meth:`prepare` (so the version follows the
transaction version and broker versions known at that moment), sends it, and completes it with
:meth:`handle_response` or :meth:`fail`. Every handler method runs under the manager's lock.
"""

from __future__ import annotations

import enum
import threading
from typing import Any, Protocol

from txnproducer import errors
from txnproducer._internal.protocol.error_codes import (
    CLUSTER_AUTHORIZATION_FAILED,
    CONCURRENT_TRANSACTIONS,
    COORDINATOR_NOT_AVAILABLE,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TXN_STATE,
    NOT_COORDINATOR,
    PRODUCER_FENCED,
    TRANSACTION_ABORTABLE,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    UNKNOWN_PRODUCER_ID,
    UNSUPPORTED_VERSION,
    error_name,
    is_retriable,
)
from txnproducer._internal.txn.error_policy import (
    cluster_authorization_error,
    transactional_id_authorization_error,
)
from txnproducer._internal.txn.producer_id import ProducerIdAndEpoch
from txnproducer._internal.txn.result import TransactionalRequestResult

__all__ = ["COORDINATOR_MOVED", "Priority", "TxnContext", "TxnRequestHandler"]


class Priority(enum.IntEnum):
    """Send order: find the coordinator first, then the producer id, ... EndTxn last, except a
    KIP-360 epoch bump, which must follow the EndTxn(abort) it recovers from."""

    FIND_COORDINATOR = 0
    INIT_PRODUCER_ID = 1
    ADD_PARTITIONS_OR_OFFSETS = 2
    END_TXN = 3
    EPOCH_BUMP = 4


COORDINATOR_MOVED = frozenset({COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR})


class TxnContext(Protocol):
    """What a handler may read and change of the transaction manager; every call is made with
    :attr:`lock` held (the handler's methods take it).

    Reading: the identity and settings the request is built from. Queue: re-sending a handler,
    rediscovering a coordinator. Outcomes: one method per thing an answer can tell the manager,
    so that every state change stays in the manager and its transitions table.
    """

    transactional_id: str
    transaction_timeout_ms: int
    retry_backoff_ms: int
    transaction_retry_backoff_ms: int
    enable_2pc: bool

    @property
    def lock(self) -> threading.RLock: ...
    @property
    def closed(self) -> bool: ...
    @property
    def producer_id_and_epoch(self) -> ProducerIdAndEpoch: ...
    def version_for(self, request_cls: Any) -> int: ...
    def broker_max_version(self, api_key: int) -> int | None: ...
    def prepared_identity(self) -> tuple[int, int] | None: ...
    def log(self, level: str, event: str, **fields: Any) -> None: ...
    def log_debug(self, event: str, **fields: Any) -> None: ...

    # queue
    def request_finished(self, handler: TxnRequestHandler) -> None: ...
    def reenqueue(self, handler: TxnRequestHandler, backoff_ms: float | None = None) -> None: ...
    def lookup_coordinator(self, coordinator_type: str, key: str) -> None: ...
    def enqueue(self, handler: TxnRequestHandler) -> None: ...

    # outcomes
    def handler_failed_fatally(self, handler: TxnRequestHandler, exc: BaseException) -> None: ...
    def handler_failed_abortably(
        self, handler: TxnRequestHandler, exc: BaseException, *, bump_epoch: bool
    ) -> None: ...
    def init_refused(self, handler: TxnRequestHandler, exc: BaseException) -> None: ...
    def fenced_error(self, code: int, api: str) -> errors.ProducerFencedError: ...
    def coordinator_found(self, key_type: str, key: str, node_id: int, host: str, port: int) -> None: ...
    def producer_id_received(
        self, producer_id: int, epoch: int, result: TransactionalRequestResult, *, reason: str,
        ongoing: tuple[int, int] = (-1, -1),
    ) -> bool: ...
    def partitions_added(self, partitions: set[Any], *, success: bool) -> None: ...
    def offsets_added(self, handler: TxnRequestHandler) -> None: ...
    def offsets_committed(self, group_id: str) -> None: ...
    def transaction_ended(self, producer_id: int, epoch: int, result: TransactionalRequestResult) -> bool: ...


class TxnRequestHandler:
    """Base: one queued transactional request, its result, and its retry bookkeeping."""

    priority: Priority = Priority.ADD_PARTITIONS_OR_OFFSETS
    is_end_txn: bool = False
    api_name: str = "?"

    def __init__(self, tm: TxnContext, result: TransactionalRequestResult) -> None:
        self._tm = tm
        self.result = result
        self.is_retry = False
        self.attempts = 0
        # monotonic seconds before which the Sender must not send this handler (retry backoff)
        self.not_before = 0.0
        self.retry_backoff_ms = 0
        # the destination broker's highest version of this request, when lower than the cluster's
        self.version_cap: int | None = None
        self._request: Any = None

    # --- what the Sender reads ---------------------------------------------------------------

    @property
    def coordinator_type(self) -> str | None:
        """``"transaction"``, ``"group"`` or ``None`` (any broker will do)."""
        return "transaction"

    @property
    def coordinator_key(self) -> str:
        return self._tm.transactional_id

    @property
    def request(self) -> Any:
        """The kafka-python request object, version already chosen (built by ``prepare``)."""
        if self._request is None:
            self.prepare()
        return self._request

    def prepare(self, version_cap: int | None = None) -> None:
        """(Re)build the request for the current transaction version and broker versions;
        ``version_cap`` is the destination broker's highest version (an older broker during a
        rolling upgrade), below which it is built. Raises UnsupportedVersionError when that broker
        does not speak the request at all."""
        self.version_cap = version_cap
        self._request = self.build_request()

    def version(self, request_cls: Any) -> int:
        """The version to build ``request_cls`` with: the manager's choice for the transaction
        version and the cluster, capped by the destination broker's own maximum."""
        chosen = self._tm.version_for(request_cls)
        cap = self.version_cap
        if cap is None or cap >= chosen:
            return chosen
        if cap < int(request_cls.min_version):
            raise errors.UnsupportedVersionError(
                f"the broker speaks {self.api_name} only up to v{cap}, older than this client's"
                f" v{request_cls.min_version}: upgrade the broker",
                error_code=UNSUPPORTED_VERSION,
            )
        return cap

    def build_request(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def reset_request(self) -> None:
        """Forget the built request: a retry rebuilds it (versions may have changed)."""
        self._request = None

    def looks_up(self, coordinator_type: str, key: str) -> bool:
        """Whether this handler is the FindCoordinator for (``coordinator_type``, ``key``)."""
        return False

    # --- completion (Sender thread) ----------------------------------------------------------

    def handle_response(self, response: Any) -> None:
        """Process the decoded response; may re-enqueue this handler or enqueue follow-ups."""
        with self._tm.lock:
            self._tm.request_finished(self)
            if self._tm.closed:
                return
            try:
                self.on_response(response)
            except Exception as exc:  # a malformed answer must not leave callers waiting forever
                self.fatal_error(
                    errors.FatalError(
                        f"could not process the {self.api_name} response ({type(exc).__name__}: {exc});"
                        " close the producer"
                    )
                )

    def fail(self, exc: BaseException, *, moved_to: tuple[int, str, int] | None = None,
             ask_elsewhere: bool = False) -> None:
        """The request could not be completed on the wire (disconnect, timeout, no node).

        A FatalError (e.g. the broker does not support the version) ends the producer. A request given
        up because another broker coordinates its key now (``moved_to``: (node, host, port); its broker
        stopped answering and the cluster moved on, ``network/grey_failures.py``) goes there at once,
        as it was built: the Java client's rule after a disconnect - look the coordinator up, send
        again - with the lookup already answered. A lookup its broker left unanswered
        (``ask_elsewhere``) goes to another broker at once. Anything else is retried after the
        backoff, rediscovering the coordinator first.
        """
        with self._tm.lock:
            self._tm.request_finished(self)
            if self._tm.closed:
                return
            if isinstance(exc, errors.FatalError):
                self.fatal_error(exc)
                return
            self._tm.log_debug("txn.request_failed", api=self.api_name, error=repr(exc))
            ctype = self.coordinator_type
            if moved_to is not None and ctype is not None:
                self._tm.coordinator_found(ctype, self.coordinator_key, *moved_to)
                self.reenqueue(0)
                return
            if ctype is not None:
                self._tm.lookup_coordinator(ctype, self.coordinator_key)
            self.reenqueue(0 if ask_elsewhere else None)

    def on_response(self, response: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # --- helpers for subclasses --------------------------------------------------------------

    def reenqueue(self, backoff_ms: float | None = None) -> None:
        self._tm.reenqueue(self, backoff_ms)

    def retry_for(self, code: int) -> None:
        """Re-send after the right backoff: CONCURRENT_TRANSACTIONS uses the short one."""
        if code == CONCURRENT_TRANSACTIONS:
            self.reenqueue(self._tm.transaction_retry_backoff_ms)
        else:
            self.reenqueue()

    def fatal_error(self, exc: errors.TxnProducerError | BaseException) -> None:
        self._tm.handler_failed_fatally(self, exc)

    def abortable_error(self, exc: BaseException, *, bump_epoch: bool = False) -> None:
        self._tm.handler_failed_abortably(self, exc, bump_epoch=bump_epoch)

    def fenced(self, code: int) -> None:
        self.fatal_error(self._tm.fenced_error(code, self.api_name))

    def unexpected(self, code: int, message: str | None = None) -> None:
        detail = f": {message}" if message else ""
        self.fatal_error(
            errors.FatalError(
                f"unexpected error {error_name(code)} ({code}) in the {self.api_name} response"
                f"{detail}; close the producer",
                error_code=code,
            )
        )

    def handle_common(self, code: int, message: str | None = None) -> None:
        """The errors every transaction-coordinator request treats alike (after its own cases)."""
        tm = self._tm
        if code in COORDINATOR_MOVED:
            tm.lookup_coordinator("transaction", tm.transactional_id)
            self.reenqueue()
        elif is_retriable(code):
            self.retry_for(code)
        elif code in (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED):
            # Java maps INVALID_PRODUCER_EPOCH from the coordinator to PRODUCER_FENCED (KIP-588)
            self.fenced(code)
        elif code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            self.fatal_error(transactional_id_authorization_error(tm.transactional_id, self.api_name))
        elif code == CLUSTER_AUTHORIZATION_FAILED:
            self.fatal_error(cluster_authorization_error(self.api_name))
        elif code == UNSUPPORTED_VERSION:
            self.fatal_error(
                errors.UnsupportedVersionError(
                    f"the broker does not support {self.api_name} version"
                    f" {getattr(self._request, 'version', '?')}: transactions need Kafka >= 0.11"
                    " (TV2 needs transaction.version=2); close the producer",
                    error_code=code,
                )
            )
        elif code == INVALID_TXN_STATE:
            self.fatal_error(
                errors.InvalidTxnStateError(
                    f"the coordinator answered INVALID_TXN_STATE to {self.api_name}: it has no"
                    " matching transaction (it may have been aborted after transaction_timeout_ms);"
                    " close the producer",
                    error_code=code,
                )
            )
        elif code == INVALID_PRODUCER_ID_MAPPING:
            # fatal, as in the Java client since 4.0 (KAFKA-18019): recovering with a new producer id
            # could let a zombie that outlived transactional.id.expiration.ms process input twice
            self.fatal_error(
                errors.InvalidProducerIdMappingError(
                    f"the coordinator no longer maps transactional_id {tm.transactional_id!r} to"
                    f" producer id {tm.producer_id_and_epoch.producer_id} (INVALID_PRODUCER_ID_MAPPING,"
                    " e.g. transactional.id.expiration.ms passed); close the producer and create a"
                    " new one",
                    error_code=code,
                )
            )
        elif code == UNKNOWN_PRODUCER_ID:
            self.abortable_error(
                errors.UnknownProducerIdError(
                    f"the coordinator does not know this producer ({self.api_name}): call"
                    " abort_transaction(); the producer recovers with a new epoch",
                    error_code=code,
                ),
                bump_epoch=True,
            )
        elif code == TRANSACTION_ABORTABLE:
            self.abortable_error(
                errors.TransactionAbortableError(
                    f"the coordinator answered TRANSACTION_ABORTABLE to {self.api_name}: call"
                    " abort_transaction() and start a new transaction",
                    error_code=code,
                )
            )
        else:
            self.unexpected(code, message)
