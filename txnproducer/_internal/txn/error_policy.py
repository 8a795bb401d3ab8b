"""How the transaction manager turns failures into the KIP-1050 error classes users catch.

Why a module of its own: the same broker code means different things on different paths
(INVALID_PRODUCER_EPOCH from the coordinator means "fenced", on a produce response it means "the
coordinator already bumped the epoch, abort"), and the application must always get a class that
tells it what to do (``AbortableError``: abort and retry; ``FatalError``: close). These helpers
keep those decisions and the wording of the messages in one place.
"""

from __future__ import annotations

from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.protocol.error_codes import (
    CLUSTER_AUTHORIZATION_FAILED,
    GROUP_AUTHORIZATION_FAILED,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    PRODUCER_FENCED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    UNSUPPORTED_VERSION,
    error_name,
)

# Produce errors that end the producer (the Java client's maybeTransitionToErrorState list);
# every other failed batch only makes the open transaction abortable.
_FATAL_PRODUCE_CODES = frozenset(
    {
        CLUSTER_AUTHORIZATION_FAILED,
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        PRODUCER_FENCED,
        UNSUPPORTED_VERSION,
        INVALID_PRODUCER_ID_MAPPING,  # Java 4.0+ (KAFKA-18019)
    }
)
_FATAL_PRODUCE_CLASSES = (
    errors.ProducerFencedError,
    errors.TransactionalIdAuthorizationError,
    errors.ClusterAuthorizationError,
    errors.UnsupportedVersionError,
    errors.InvalidProducerIdMappingError,
)


def code_of(exc: BaseException) -> int | None:
    """The Kafka error code carried by ``exc`` (txnproducer or kafka-python error), if any."""
    code = getattr(exc, "error_code", None)
    if isinstance(code, int):
        return code
    errno = getattr(exc, "errno", None)  # kafka-python's BrokerResponseError
    return errno if isinstance(errno, int) and errno > 0 else None


def is_fatal_produce_error(exc: BaseException, code: int | None) -> bool:
    """Does a failed produce batch end the producer? (Otherwise the transaction is abortable.)

    INVALID_PRODUCER_EPOCH and INVALID_TXN_STATE are abortable on the produce path whatever class
    carries them (KIP-588; INVALID_TXN_STATE is what Produce <= v10 answers for an un-added
    partition).
    """
    if code in _FATAL_PRODUCE_CODES or isinstance(exc, _FATAL_PRODUCE_CLASSES):
        return True
    return (
        isinstance(exc, errors.FatalError)
        and not isinstance(exc, errors.InvalidTxnStateError)
        and code != INVALID_PRODUCER_EPOCH
    )


def fenced_error(
    transactional_id: str, producer_id: int, epoch: int, code: int, api: str, *,
    open_ms: int | None = None, transaction_timeout_ms: int | None = None,
) -> errors.ProducerFencedError:
    """ProducerFencedError; with ``open_ms`` (the transaction had been open longer than
    ``transaction_timeout_ms``) it names the timeout first: the coordinator's abort of a timed-out
    transaction bumps the epoch and fences this producer exactly as a newer instance would."""
    who = f"producer with transactional_id {transactional_id!r} and producer id {producer_id}, epoch {epoch}"
    if open_ms is not None:
        return errors.ProducerFencedError(
            f"{who} was fenced ({error_name(code)} on {api}) after its transaction had been open for "
            f"{open_ms} ms, longer than transaction_timeout_ms={transaction_timeout_ms}: the coordinator "
            "most likely aborted it at its timeout and bumped the epoch (or another producer with the "
            "same transactional_id has started). Close this producer and create a new one; keep "
            "transactions shorter than transaction_timeout_ms, or raise it",
            error_code=PRODUCER_FENCED,
        )
    return errors.ProducerFencedError(
        f"{who} was fenced ({error_name(code)} on {api}): another producer with the same transactional_id"
        " has started. Close this producer",
        error_code=PRODUCER_FENCED,
    )


def group_authorization_error(group_id: str) -> errors.GroupAuthorizationError:
    return errors.GroupAuthorizationError(
        f"not authorized to commit offsets for consumer group {group_id!r}: call abort_transaction(),"
        " grant READ on the group, then retry the transaction",
        error_code=GROUP_AUTHORIZATION_FAILED,
    )


def transactional_id_authorization_error(
    transactional_id: str, api: str, *, init: bool = False
) -> errors.TransactionalIdAuthorizationError:
    what = ("call init_transactions() again" if init else "create a new producer")
    return errors.TransactionalIdAuthorizationError(
        f"the principal is not allowed to use transactional_id {transactional_id!r} ({api}): grant it"
        f" WRITE and DESCRIBE on the TransactionalId, then {what}",
        error_code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    )


def cluster_authorization_error(api: str, *, init: bool = False) -> errors.ClusterAuthorizationError:
    what = ("call init_transactions() again" if init else "create a new producer")
    return errors.ClusterAuthorizationError(
        f"the principal lacks a cluster permission ({api}; IDEMPOTENT_WRITE on old brokers): fix the"
        f" ACLs, then {what}",
        error_code=CLUSTER_AUTHORIZATION_FAILED,
    )


def as_fatal_produce_error(
    exc: BaseException, code: int | None, fenced: errors.ProducerFencedError
) -> BaseException:
    """A FatalError for a fatal produce failure (``fenced`` is used for PRODUCER_FENCED)."""
    if isinstance(exc, errors.FatalError):
        return exc
    if code == PRODUCER_FENCED:
        return fenced
    fresh = errors.FatalError(f"fatal error on produce: {exc}; close the producer", error_code=code)
    fresh.__cause__ = exc
    return fresh


def as_abortable_produce_error(exc: BaseException, code: int | None, tp: TopicPartition, *,
                               open_ms: int | None = None,
                               transaction_timeout_ms: int | None = None) -> BaseException:
    """An AbortableError for a failed batch, keeping an AbortableError as it is.

    INVALID_PRODUCER_EPOCH always gets an explanation (it is the one produce error whose cause the
    application can act on): the coordinator bumped the epoch, because the transaction ran past
    ``transaction_timeout_ms`` - said first when ``open_ms`` (how long it has been open) is past it -
    or because another producer with the same transactional id started, which is then the likelier
    cause (a second instance, a pool with the same prefix).
    """
    if code == INVALID_PRODUCER_EPOCH:
        taken = ("another producer with the same transactional_id has started (then abort_transaction()"
                 " raises ProducerFencedError)")
        if open_ms is not None:  # open past the timeout: the likeliest cause
            why = (f"most likely because the transaction was open for {open_ms} ms, longer than"
                   f" transaction_timeout_ms={transaction_timeout_ms}, and the coordinator aborted it (or"
                   f" {taken})")
        elif transaction_timeout_ms is not None:  # not past it: it cannot have timed out
            why = f"most likely because {taken}, or an operator aborted the transaction"
        else:
            why = ("most likely because the transaction ran longer than transaction_timeout_ms and the"
                   f" coordinator aborted it (or {taken})")
        epoch_error = errors.InvalidProducerEpochError(
            f"the broker rejected a batch for {tp.topic}-{tp.partition} with INVALID_PRODUCER_EPOCH: the"
            f" coordinator bumped the epoch, {why}. Call abort_transaction() and start a new transaction",
            error_code=code,
        )
        epoch_error.__cause__ = exc
        return epoch_error
    if isinstance(exc, errors.AbortableError):
        return exc
    name = error_name(code) if code is not None else type(exc).__name__
    message = (
        f"a batch for {tp.topic}-{tp.partition} failed ({name}: {exc}): the transaction cannot commit."
        " Call abort_transaction() and start a new transaction"
    )
    fresh = errors.TransactionAbortableError(message, error_code=code)
    fresh.__cause__ = exc
    return fresh


def reraisable(last: BaseException, state_name: str, fatal: bool, call: str) -> BaseException:
    """A fresh exception of the stored error's class (so ``except ProducerFencedError`` works),
    whose message says which call hit it, chained to the original."""
    what = "a fatal error" if fatal else "an abortable error"
    message = f"{call}() called in state {state_name} after {what}: {last}"
    if isinstance(last, errors.TxnProducerError):
        try:
            fresh: BaseException = type(last)(message, error_code=last.error_code)
        except TypeError:
            return last
        fresh.__cause__ = last
        return fresh
    return last
