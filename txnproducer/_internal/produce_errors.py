"""What a Produce answer's partition error code means: send the same bytes again, refresh the
metadata, and which exception a record's owner gets.

Why apart from the Sender: the classification is a table of Kafka error codes (the Java client's
``Sender.canRetry`` and ``Errors`` classes), read by the Sender's answer handling and by the tests
and the chaos tier's planted bugs; the Sender module keeps the loop.
"""

from __future__ import annotations

from txnproducer import errors
from txnproducer._internal.protocol import error_codes as ec

__all__ = ["ERROR_CLASSES", "LEADER_HINT_CODES", "RETRIABLE", "STALE_METADATA", "produce_error"]

# Errors after which the same bytes may be sent again (same producer id/epoch/sequence).
RETRIABLE = frozenset({
    ec.CORRUPT_MESSAGE,  # in transit
    ec.UNKNOWN_TOPIC_OR_PARTITION,
    ec.LEADER_NOT_AVAILABLE,
    ec.NOT_LEADER_OR_FOLLOWER,
    ec.REQUEST_TIMED_OUT,
    ec.NETWORK_EXCEPTION,
    ec.NOT_ENOUGH_REPLICAS,
    ec.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ec.KAFKA_STORAGE_ERROR,
    ec.FENCED_LEADER_EPOCH,
    ec.UNKNOWN_TOPIC_ID,
})
# Answers that may carry the current leader (KIP-951, Produce v10+).
LEADER_HINT_CODES = frozenset({ec.NOT_LEADER_OR_FOLLOWER, ec.FENCED_LEADER_EPOCH})
# ...of which these mean our leader information is stale.
STALE_METADATA = frozenset({
    ec.UNKNOWN_TOPIC_OR_PARTITION,
    ec.LEADER_NOT_AVAILABLE,
    ec.NOT_LEADER_OR_FOLLOWER,
    ec.KAFKA_STORAGE_ERROR,
    ec.FENCED_LEADER_EPOCH,
    ec.UNKNOWN_TOPIC_ID,
})

# Produce codes with a class of their own. Not INVALID_TXN_STATE: on a Produce it makes the transaction
# abortable (as in Java), and InvalidTxnStateError is a FatalError, which would tell the record's owner to
# close the producer; the code gets ProduceRejectedError, which names it.
ERROR_CLASSES: dict[int, type[errors.TxnProducerError]] = {
    ec.MESSAGE_TOO_LARGE: errors.RecordTooLargeError,
    ec.RECORD_LIST_TOO_LARGE: errors.RecordTooLargeError,
    ec.TOPIC_AUTHORIZATION_FAILED: errors.TopicAuthorizationError,
    ec.OUT_OF_ORDER_SEQUENCE_NUMBER: errors.OutOfOrderSequenceError,
    ec.INVALID_PRODUCER_EPOCH: errors.InvalidProducerEpochError,
    ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: errors.TransactionalIdAuthorizationError,
    ec.CLUSTER_AUTHORIZATION_FAILED: errors.ClusterAuthorizationError,
    ec.INVALID_PRODUCER_ID_MAPPING: errors.InvalidProducerIdMappingError,
    ec.UNKNOWN_PRODUCER_ID: errors.UnknownProducerIdError,
    ec.PRODUCER_FENCED: errors.ProducerFencedError,
    ec.TRANSACTION_ABORTABLE: errors.TransactionAbortableError,
}


def produce_error(code: int, message: str | None = None) -> errors.TxnProducerError:
    """The exception for a Produce partition error code (names as in Kafka's ``Errors``)."""
    name = ec.error_name(code)
    text = f"Produce failed: {name} (error code {code})" + (f": {message}" if message else "")
    # a code without its own class: the batch failed for good and the transaction cannot commit
    cls = ERROR_CLASSES.get(code, errors.ProduceRejectedError)
    return cls(text, error_code=code)
