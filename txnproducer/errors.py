"""The exception hierarchy of txnproducer.

Every error a public call can raise derives from :class:`TxnProducerError`. The classes follow
the KIP-1050 vocabulary so that the *class* tells the caller what to do next:

* :class:`RetriableError` - the library already retried within its timeouts; the caller may retry.
* :class:`AbortableError` - the current transaction cannot commit; call ``abort_transaction()``
  and start a new one. The producer stays usable.
* :class:`FatalError` - the producer cannot continue (fenced, not authorized, ...); close it and,
  if appropriate, create a new one.
* :class:`IllegalStateError` - the API was called in a state that does not allow it.
* :class:`TimeoutError` - a bounded wait ran out; the message names the bound.
* :class:`ConfigError`, :class:`RecordTooLargeError`, :class:`SerializationError` - bad input,
  rejected before anything was sent.

Broker error codes (``_internal/protocol/error_codes.py``, the one catalogue) are mapped where
they are received - the coordinator request handlers (``_internal/txn/<request>.py``) and the
produce path (``_internal/sender.py`` with ``_internal/txn/error_policy.py``) - because the same
code means different things on different paths: INVALID_PRODUCER_EPOCH from the coordinator
means "fenced", on a produce response it means "the coordinator already bumped the epoch: abort".
"""

from __future__ import annotations

import builtins
from typing import Any

from txnproducer._internal.protocol import error_codes as ec

__all__ = [
    "AbortableError",
    "AuthenticationError",
    "BatchEncodingError",
    "BrokerError",
    "ClosedError",
    "ClusterAuthorizationError",
    "CommitFailedError",
    "ConfigError",
    "CorruptRecordError",
    "DeliveryTimeoutError",
    "FatalError",
    "FencedInstanceIdError",
    "GroupAuthorizationError",
    "GroupMaxSizeReachedError",
    "IllegalStateError",
    "InvalidProducerEpochError",
    "InvalidProducerIdMappingError",
    "InvalidRegularExpressionError",
    "InvalidTransactionTimeoutError",
    "InvalidTxnStateError",
    "LogTruncationError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "PreparedTransactionLostError",
    "ProduceRejectedError",
    "ProducerFencedError",
    "RecordDeserializationError",
    "RecordTooLargeError",
    "RetriableError",
    "SaslAuthenticationError",
    "SerializationError",
    "SslAuthenticationError",
    "TimeoutError",
    "TopicAuthorizationError",
    "TransactionAbortableError",
    "TransactionAbortedError",
    "TransactionalIdAuthorizationError",
    "TransformOutputError",
    "TxnProducerError",
    "UnknownProducerIdError",
    "UnreleasedInstanceIdError",
    "UnsupportedAssignorError",
    "UnsupportedVersionError",
]


class TxnProducerError(Exception):
    """Base class of every error raised by txnproducer.

    ``error_code`` is the Kafka protocol error code when the error came from a broker answer,
    otherwise ``None``.
    """

    error_code: int | None = None

    def __init__(self, message: str = "", *, error_code: int | None = None) -> None:
        super().__init__(message)
        if error_code is not None:
            self.error_code = error_code


# --- bad input -------------------------------------------------------------------------------


class ConfigError(TxnProducerError, ValueError):
    """A setting is unknown or has an invalid value; the message names the key and what is allowed."""


class InvalidRecordError(ConfigError):
    """A ``send()`` argument is invalid (topic name, partition, timestamp, headers, a partitioner's
    answer); the record was not queued and the transaction is unaffected.

    A subclass of :class:`ConfigError` (and ``ValueError``): it is the same kind of mistake, made
    per record instead of per producer, so code that catches ConfigError keeps working.
    """


class TransformOutputError(TxnProducerError, TypeError):
    """A ``TransactionalProcessor`` transform returned something that is not its output: one
    :class:`~txnproducer.eos.OutputRecord`, an iterable of them, or None (nothing). The message names
    what it returned; the transaction was aborted and its input rewound, as for an exception of the
    transform. A ``TypeError`` too, for code that caught the type error this used to be."""


class RecordTooLargeError(TxnProducerError, ValueError):
    """A record is larger than ``max_request_size`` or ``buffer_memory`` (raised by ``send()``;
    nothing was sent), or alone larger than the topic's ``max.message.bytes`` (the error of the
    record's future; the broker answered MESSAGE_TOO_LARGE and the transaction must abort)."""

    error_code = ec.MESSAGE_TOO_LARGE


class SerializationError(TxnProducerError, ValueError):
    """A key or value serializer failed or returned something other than bytes; nothing was sent."""


# --- the read side (TransactionalConsumer) -----------------------------------------------------


class CorruptRecordError(TxnProducerError):
    """A fetched record batch failed its CRC-32C check or could not be read.

    The message names the topic, partition and offset; ``topic``, ``partition`` and ``offset`` hold
    them. Nothing was skipped: the consumer's position stays at that offset, and the records before
    it were returned. Every later ``poll()`` raises the same error until the application decides:
    ``seek(tp, offset + 1)`` skips the damaged data knowingly (the Java client's advice), or stop.
    """

    error_code = ec.CORRUPT_MESSAGE

    def __init__(self, message: str, *, topic: str, partition: int, offset: int) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset


class RecordDeserializationError(TxnProducerError):
    """A fetched record's key or value deserializer raised (the Java client's
    ``RecordDeserializationException``).

    ``topic``, ``partition`` and ``offset`` name the record, ``origin`` is ``"key"`` or ``"value"``; the
    deserializer's exception is the ``__cause__``. Nothing was skipped: the records before it were
    returned and the position stays before it, so every later ``poll()`` tries the record again (a
    deserializer that recovers goes on from there) and raises this while it fails. ``seek(tp, offset + 1)``
    skips the record knowingly.
    """

    def __init__(self, message: str, *, topic: str, partition: int, offset: int, origin: str) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.origin = origin


class OffsetOutOfRangeError(TxnProducerError):
    """A partition's position is outside its log and ``auto_offset_reset`` is ``"none"``.

    ``offsets`` maps each such ``TopicPartition`` to the position the broker refused. Nothing was
    read from those partitions; ``seek()`` them (or ``seek_to_beginning`` / ``seek_to_end``), then
    poll again.
    """

    error_code = ec.OFFSET_OUT_OF_RANGE

    def __init__(self, message: str, *, offsets: dict[Any, int]) -> None:
        super().__init__(message)
        self.offsets = offsets


class LogTruncationError(OffsetOutOfRangeError):
    """A partition's log was truncated below the consumer's position after a leader change (KIP-320)
    and ``auto_offset_reset`` is ``"none"``.

    ``offsets`` maps each partition to the position that is no longer in the log and
    ``divergent_offsets`` to the first offset known to diverge (the end of the last leader epoch both
    logs share): records from there on were replaced. ``seek()`` the partition, typically to its
    divergent offset, to read the new log; with ``"earliest"`` or ``"latest"`` the consumer seeks to
    the divergent offset itself, as the Java client does, and logs ``txn.consumer_log_truncated``.
    """

    def __init__(self, message: str, *, offsets: dict[Any, int], divergent_offsets: dict[Any, int]) -> None:
        super().__init__(message, offsets=offsets)
        self.divergent_offsets = divergent_offsets


# --- API misuse and waits --------------------------------------------------------------------


class IllegalStateError(TxnProducerError):
    """The call is not allowed in the producer's current state (the message names both)."""


class ClosedError(IllegalStateError):
    """The producer was closed; create a new one."""


class TimeoutError(TxnProducerError, builtins.TimeoutError):
    """A bounded wait ran out (``max_block_ms``, ``delivery_timeout_ms``, a call's ``timeout``).

    For ``init_transactions``/``commit_transaction``/``abort_transaction`` the operation keeps
    running in the background: calling the same method again waits for the same result.
    """


# --- the three KIP-1050 classes --------------------------------------------------------------


class RetriableError(TxnProducerError):
    """A transient broker condition outlasted the library's own retries; the caller may retry."""


class AbortableError(TxnProducerError):
    """The current transaction cannot be committed: call ``abort_transaction()`` and start again."""


class FatalError(TxnProducerError):
    """The producer cannot continue: close it. Any open transaction is aborted by the broker."""


class BrokerError(RetriableError):
    """A broker error code without a more specific class (the message includes its name)."""


# abortable


class TransactionAbortableError(AbortableError):
    """The broker answered TRANSACTION_ABORTABLE (KIP-890): abort and retry the transaction."""

    error_code = ec.TRANSACTION_ABORTABLE


class TransactionAbortedError(AbortableError):
    """A record was not delivered because its transaction is being aborted."""


class DeliveryTimeoutError(AbortableError):
    """A batch was not acknowledged within ``delivery_timeout_ms``; the transaction must abort."""


class TopicAuthorizationError(AbortableError):
    """The principal may not write to a topic; abort, fix the ACLs, retry."""

    error_code = ec.TOPIC_AUTHORIZATION_FAILED


class OutOfOrderSequenceError(AbortableError):
    """The broker saw a sequence gap (KIP-360): abort; the producer bumps its epoch and continues."""

    error_code = ec.OUT_OF_ORDER_SEQUENCE_NUMBER


class UnknownProducerIdError(AbortableError):
    """The broker lost the producer's state (KIP-360): abort; the producer recovers with a new epoch."""

    error_code = ec.UNKNOWN_PRODUCER_ID


class InvalidProducerEpochError(AbortableError):
    """A produce was rejected for a stale epoch (KIP-588): abort the transaction.

    Under TV2 this is what a transaction the coordinator timed out looks like; the abort succeeds
    with the coordinator's new epoch. If another producer took over, the abort itself raises
    :class:`ProducerFencedError`.
    """

    error_code = ec.INVALID_PRODUCER_EPOCH


class GroupAuthorizationError(AbortableError):
    """The principal may not commit offsets for the consumer group (GROUP_AUTHORIZATION_FAILED on
    FindCoordinator, AddOffsetsToTxn or TxnOffsetCommit): abort, grant READ on the group, retry.

    Abortable, as in the Java client: the producer stays usable for transactions that do not
    send offsets for this group, and for this one once the ACL is fixed.
    """

    error_code = ec.GROUP_AUTHORIZATION_FAILED


class ProduceRejectedError(AbortableError):
    """The broker refused a batch for good with an error code that has no more specific class
    (the message names it, e.g. INVALID_RECORD): the record's future fails with this and the
    transaction cannot commit. Abort, fix what the message names, retry."""


class BatchEncodingError(AbortableError):
    """A batch could not be encoded when the Sender was about to send it (a compression library
    failed, or a bug): its records were not sent and fail with this error; the transaction cannot
    commit. Abort it and try again; the message names the cause (please report it)."""


class CommitFailedError(AbortableError):
    """The consumer group fenced the offsets of this transaction (rebalance, stale generation).

    Abort, rejoin the group (poll the consumer) and reprocess from the last committed offsets.
    """


# fatal


class ProducerFencedError(FatalError):
    """Another producer with the same ``transactional_id`` took over; close this one."""

    error_code = ec.PRODUCER_FENCED


class FencedInstanceIdError(FatalError):
    """Another consumer with the same ``group_instance_id`` (KIP-345 static membership) joined the
    group and took this member's place (FENCED_INSTANCE_ID): two instances share one id. Close this
    consumer; give every instance its own ``group_instance_id``. As in the Java client, fatal."""

    error_code = ec.FENCED_INSTANCE_ID


class GroupMaxSizeReachedError(FatalError):
    """The consumer group already has as many members as the broker allows (GROUP_MAX_SIZE_REACHED:
    ``group.consumer.max.size`` for the consumer protocol, ``group.max.size`` for the classic one).
    Fatal for this member, as in the Java client: close it; run fewer members or raise the limit."""

    error_code = ec.GROUP_MAX_SIZE_REACHED


class UnreleasedInstanceIdError(FatalError):
    """Another member of the consumer group (KIP-848 consumer protocol) still uses this
    ``group_instance_id`` and has not left: a new member cannot take it (UNRELEASED_INSTANCE_ID). Two
    running instances share one id, or the previous one is still shutting down. Fatal, as in the
    Java client: close; give each instance its own id, or start the new one once the old one closed."""

    error_code = ec.UNRELEASED_INSTANCE_ID


class UnsupportedAssignorError(FatalError):
    """The group coordinator does not have the server-side assignor ``group_remote_assignor`` names
    (UNSUPPORTED_ASSIGNOR; Kafka ships ``uniform`` and ``range``, the broker's
    ``group.consumer.assignors`` lists them). Fatal, as in the Java client: fix the setting."""

    error_code = ec.UNSUPPORTED_ASSIGNOR


class InvalidRegularExpressionError(FatalError):
    """The group coordinator refused the subscription's regular expression (INVALID_REGULAR_EXPRESSION:
    KIP-848 patterns are RE2/J, which has no lookaround and no backreferences). Fatal, as in the Java
    client: subscribe with a pattern RE2/J accepts."""

    error_code = ec.INVALID_REGULAR_EXPRESSION


class AuthenticationError(FatalError):
    """A connection to a broker could not be authenticated: TLS (:class:`SslAuthenticationError`)
    or SASL (:class:`SaslAuthenticationError`). The message names the broker, the mechanism and
    user (never a secret), the cause and what to change.

    Fatal, as in the Java client (KAFKA-5947): retrying with the same credentials cannot succeed,
    and waiting out ``max_block_ms`` would only hide the cause. The error is raised by the call
    that needed the connection (``init_transactions``, ``send``, ``partitions_for``,
    ``commit_transaction``, ...) as soon as the broker refused us; close the producer, fix the
    setting the message names, and create a new one.
    """


class SaslAuthenticationError(AuthenticationError):
    """SASL authentication failed: wrong user name or password, an unknown or expired OAuth token, a
    mechanism the broker does not enable, or a token provider that failed."""

    error_code = ec.SASL_AUTHENTICATION_FAILED


class SslAuthenticationError(AuthenticationError):
    """The TLS handshake failed: the broker's certificate is not trusted (``ssl_cafile``) or does
    not name the host, the broker wants a client certificate it trusts (``ssl_certfile``), or the
    listener does not speak TLS at all."""



class TransactionalIdAuthorizationError(FatalError):
    """The principal may not use this ``transactional_id``: fix the ACLs, then create a new producer.

    As in the Java client: when InitProducerId is refused (the principal may DESCRIBE the id but
    not WRITE it), the producer stays uninitialized - fix the ACLs and call ``init_transactions()``
    again. When the coordinator lookup itself is refused (no ACL on the id at all), or the error
    comes later, the producer is done: create a new one once the ACL is in place.
    """

    error_code = ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


class ClusterAuthorizationError(FatalError):
    """The principal lacks a cluster permission the request needs (IDEMPOTENT_WRITE, or an old
    broker's cluster-wide check). From ``init_transactions()`` the producer stays uninitialized and
    ``init_transactions()`` may be called again once the ACLs are fixed; anywhere else it is fatal."""

    error_code = ec.CLUSTER_AUTHORIZATION_FAILED


class InvalidProducerIdMappingError(FatalError):
    """The coordinator does not know this producer id for the transactional id; create a new producer."""

    error_code = ec.INVALID_PRODUCER_ID_MAPPING


class InvalidTransactionTimeoutError(FatalError):
    """``transaction_timeout_ms`` exceeds the broker's ``transaction.max.timeout.ms`` (or is <= 0)."""

    error_code = ec.INVALID_TRANSACTION_TIMEOUT


class UnsupportedVersionError(FatalError):
    """The broker does not support a request this client needs (transactions need Kafka >= 0.11; the
    consumer group protocol, ``group_protocol="consumer"``, Kafka >= 4.0); the message names the
    request and what the broker offers."""

    error_code = ec.UNSUPPORTED_VERSION


class InvalidTxnStateError(FatalError):
    """The coordinator answered INVALID_TXN_STATE: client and broker disagree on the transaction."""

    error_code = ec.INVALID_TXN_STATE


class PreparedTransactionLostError(FatalError):
    """A prepared transaction could not be committed because the coordinator no longer has it open:
    it was aborted (transaction timeout, or fenced by a producer that called ``init_transactions()``
    without ``keep_prepared_txn``), so its records are lost and will never become visible. The
    message names the transactional id, producer id/epoch and the broker's answer.

    Why fatal and separate: the caller handed the outcome of the transaction to someone else (a
    commit log, a coordinator); a lost prepared transaction means that party must redo the work,
    which no retry inside the producer can do.
    """

    error_code = ec.INVALID_TXN_STATE
