"""txnproducer: exactly-once writes to Apache Kafka from Python.

The public API is what this module exports - every type a public call takes or returns is
importable from here (``RecordFuture``, ``RecordMetadata``, ``TransactionState``,
``TopicPartition``, ...), the asyncio ones from ``txnproducer.aio`` - and everything under
``txnproducer._internal`` may change without notice. ``txnproducer.testing`` (the in-process
mock cluster) is public but separate so that importing the producer never starts or imports test
machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    AbortableError,
    AuthenticationError,
    BatchEncodingError,
    BrokerError,
    ClosedError,
    ClusterAuthorizationError,
    CommitFailedError,
    ConfigError,
    CorruptRecordError,
    DeliveryTimeoutError,
    FatalError,
    FencedInstanceIdError,
    GroupAuthorizationError,
    GroupMaxSizeReachedError,
    IllegalStateError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidRecordError,
    InvalidRegularExpressionError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    LogTruncationError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    PreparedTransactionLostError,
    ProduceRejectedError,
    ProducerFencedError,
    RecordDeserializationError,
    RecordTooLargeError,
    RetriableError,
    SaslAuthenticationError,
    SerializationError,
    SslAuthenticationError,
    TimeoutError,
    TopicAuthorizationError,
    TransactionAbortableError,
    TransactionAbortedError,
    TransactionalIdAuthorizationError,
    TransformOutputError,
    TxnProducerError,
    UnknownProducerIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
)

if TYPE_CHECKING:
    from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

    from ._internal.txn.state import State as TransactionState
    from .config import ProducerConfig
    from .consumer import (
        BytesColumn,
        ConsumerRecord,
        PartitionBatch,
        RebalanceListener,
        SubscriptionPattern,
        TransactionalConsumer,
    )
    from .consumer_config import ConsumerConfig
    from .pool import TransactionalProducerPool
    from .prepared import PreparedTxnState
    from .producer import RecordFuture, RecordMetadata, TransactionalProducer

#: What is imported when first used (PEP 562), not by ``import txnproducer``: a producer process never
#: loads the consumer, a consumer process never loads the pool, and a tool that only reads the errors
#: loads neither (every Spark Python worker and CLI call pays the imports it makes).
_LAZY = {
    "ConsumerGroupMetadata": ("kafka.structs", "ConsumerGroupMetadata"),
    "OffsetAndMetadata": ("kafka.structs", "OffsetAndMetadata"),
    "TopicPartition": ("kafka.structs", "TopicPartition"),
    "TransactionState": ("txnproducer._internal.txn.state", "State"),
    "ProducerConfig": ("txnproducer.config", "ProducerConfig"),
    "BytesColumn": ("txnproducer.consumer", "BytesColumn"),
    "ConsumerRecord": ("txnproducer.consumer", "ConsumerRecord"),
    "PartitionBatch": ("txnproducer.consumer", "PartitionBatch"),
    "RebalanceListener": ("txnproducer.consumer", "RebalanceListener"),
    "SubscriptionPattern": ("txnproducer.consumer", "SubscriptionPattern"),
    "TransactionalConsumer": ("txnproducer.consumer", "TransactionalConsumer"),
    "ConsumerConfig": ("txnproducer.consumer_config", "ConsumerConfig"),
    "TransactionalProducerPool": ("txnproducer.pool", "TransactionalProducerPool"),
    "PreparedTxnState": ("txnproducer.prepared", "PreparedTxnState"),
    "RecordFuture": ("txnproducer.producer", "RecordFuture"),
    "RecordMetadata": ("txnproducer.producer", "RecordMetadata"),
    "TransactionalProducer": ("txnproducer.producer", "TransactionalProducer"),
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        import importlib.metadata

        try:
            version = importlib.metadata.version("txnproducer")
        except importlib.metadata.PackageNotFoundError:  # a source tree that is not installed
            version = "0.0.0+unknown"
        globals()["__version__"] = version
        return version
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'txnproducer' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AbortableError",
    "AuthenticationError",
    "BatchEncodingError",
    "BrokerError",
    "BytesColumn",
    "ClosedError",
    "ClusterAuthorizationError",
    "CommitFailedError",
    "ConfigError",
    "ConsumerConfig",
    "ConsumerGroupMetadata",
    "ConsumerRecord",
    "CorruptRecordError",
    "DeliveryTimeoutError",
    "FatalError",
    "FencedInstanceIdError",
    "GroupAuthorizationError",
    "GroupMaxSizeReachedError",
    "IllegalStateError",
    "InvalidProducerEpochError",
    "InvalidProducerIdMappingError",
    "InvalidRecordError",
    "InvalidRegularExpressionError",
    "InvalidTransactionTimeoutError",
    "InvalidTxnStateError",
    "LogTruncationError",
    "OffsetAndMetadata",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "PartitionBatch",
    "PreparedTransactionLostError",
    "PreparedTxnState",
    "ProduceRejectedError",
    "ProducerConfig",
    "ProducerFencedError",
    "RebalanceListener",
    "RecordDeserializationError",
    "RecordFuture",
    "RecordMetadata",
    "RecordTooLargeError",
    "RetriableError",
    "SaslAuthenticationError",
    "SerializationError",
    "SslAuthenticationError",
    "SubscriptionPattern",
    "TimeoutError",
    "TopicAuthorizationError",
    "TopicPartition",
    "TransactionAbortableError",
    "TransactionAbortedError",
    "TransactionState",
    "TransactionalConsumer",
    "TransactionalIdAuthorizationError",
    "TransactionalProducer",
    "TransactionalProducerPool",
    "TransformOutputError",
    "TxnProducerError",
    "UnknownProducerIdError",
    "UnreleasedInstanceIdError",
    "UnsupportedAssignorError",
    "UnsupportedVersionError",
    "__version__",
]
