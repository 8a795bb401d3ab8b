"""Operating transactions: find what holds a partition, end hanging transactions, watch a pipeline.

    from txnproducer.admin import TransactionsAdmin

The Python side of ``txnproducer transactions list|describe|describe-producers|find-hanging|abort`` and
``txnproducer spark status`` (docs/operations.md), following Kafka's
``kafka-transactions.sh`` and Admin client (KIP-664, KIP-994, KIP-1152).

What the room holds: the facade (``client.py``: :class:`TransactionsAdmin`), one module per Kafka
request it speaks, named after it (``metadata.py``, ``find_coordinator.py``, ``list_transactions.py``,
``describe_transactions.py``, ``describe_producers.py``, ``list_offsets.py``, ``write_txn_markers.py``,
``init_producer_id.py``, and for the Spark sink's state topic and source, the demo and the benchmarks
``create_topics.py``, ``describe_configs.py``, ``produce.py``, ``fetch.py``), the two procedures built on
them (``hanging.py``: find-hanging; ``abort.py``: plans and aborts), the Spark sink's view
(``spark_view.py``) and a streaming query's Kafka input from its checkpoint (``spark_source_view.py``),
the one synchronous connection they share
(``connection.py``, over the producer's network client), settings (``settings.py``), typed results
(``results.py``) and errors (``errors.py``), and the command line (``cli.py``, ``render.py``).

What it may import: ``txnproducer.errors``, ``config``, ``prepared``, ``_internal.network`` (the
connection), ``_internal.protocol`` (error codes), ``_internal.log``, ``_internal.properties_file``,
the Spark sink's state readers (``spark.sink.decision``, ``spark.sink.state_topic``,
``spark.sink.options``, ``spark.sink.id_pool``, which need no PySpark) and kafka-python's protocol
classes - never the producer's transaction manager or Sender: the tools are a client of the cluster,
not of a producer.
"""

from __future__ import annotations

from .abort import AbortResult, FenceAbortPlan, MarkerAbortPlan
from .client import TransactionList, TransactionsAdmin
from .errors import (
    AdminAuthorizationError,
    AdminError,
    BrokerTooOldError,
    ClusterUnreachableError,
    LeaderNotAvailableError,
    LiveTransactionError,
    NothingToAbortError,
    TransactionalIdNotFoundError,
    UnexpectedBrokerError,
    UnknownPartitionError,
)
from .results import (
    HangingTransaction,
    PartitionProducers,
    ProducerState,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)

__all__ = [
    "AbortResult",
    "AdminAuthorizationError",
    "AdminError",
    "BrokerTooOldError",
    "ClusterUnreachableError",
    "FenceAbortPlan",
    "HangingTransaction",
    "LeaderNotAvailableError",
    "LiveTransactionError",
    "MarkerAbortPlan",
    "NothingToAbortError",
    "PartitionProducers",
    "ProducerState",
    "TopicPartition",
    "TransactionDescription",
    "TransactionList",
    "TransactionListing",
    "TransactionalIdNotFoundError",
    "TransactionsAdmin",
    "UnexpectedBrokerError",
    "UnknownPartitionError",
]
