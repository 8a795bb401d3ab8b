"""txnproducer: exactly-once writes to Apache Kafka from Python.

The public API is what this module exports - every type a public call takes or returns is
importable from here (``RecordFuture``, ``RecordMetadata``, ``TransactionState``,
``TopicPartition``, ...), the asyncio ones from ``txnproducer.aio`` - and everything under
``txnproducer._internal`` may change without notice. ``txnproducer.testing`` (the in-process
mock cluster) is public but separate so that importing the producer never starts or imports test
machinery.
"""

from __future__ import annotations

import importlib.metadata

from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

from ._internal.txn.state import State as TransactionState
from .config import ProducerConfig
from .consumer import (
    BytesColumn,
    ConsumerRecord,
    PartitionBatch,
    RebalanceListener,
    TransactionalConsumer,
)
from .consumer_config import ConsumerConfig
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
    IllegalStateError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidRecordError,
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
    UnsupportedVersionError,
)
from .pool import TransactionalProducerPool
from .prepared import PreparedTxnState
from .producer import RecordFuture, RecordMetadata, TransactionalProducer

try:
    __version__ = importlib.metadata.version("txnproducer")
except importlib.metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

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
    "IllegalStateError",
    "InvalidProducerEpochError",
    "InvalidProducerIdMappingError",
    "InvalidRecordError",
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
    "UnsupportedVersionError",
    "__version__",
]
