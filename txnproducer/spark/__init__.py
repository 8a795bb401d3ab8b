"""Exactly-once Kafka sink for PySpark (Spark 4.x Python Data Source API), data source ``txnkafka``.

    from txnproducer.spark import register
    register(spark)
    df.write.format("txnkafka").option("kafka.bootstrap.servers", "...").option("topic", "t").save()

Needs the ``[spark]`` extra (``pyspark>=4``). See :mod:`txnproducer.spark.sink` for the protocol
and the guarantees.

What the room holds: the data source and its writers (``sink``), the commit log of decided
batches (``commit_log``), phase two on the driver (``completion``), the sink's options
(``options``), rows to records (``records``) and the fault hook its tests kill processes with
(``_faults``).

What it may import: the public producer API (``txnproducer.producer``, ``config``, ``errors``,
``prepared``), ``_internal.log`` and PySpark - never the producer's internals.
"""

from __future__ import annotations

from typing import Any

try:
    import pyspark.sql.datasource  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "txnproducer.spark needs PySpark 4.x: pip install 'txnproducer[spark]'"
    ) from exc

from .commit_log import CommitLog
from .completion import SinkCommitError
from .sink import SupersededAttemptError, TxnKafkaCommitMessage, TxnKafkaDataSource

__all__ = [
    "CommitLog",
    "SinkCommitError",
    "SupersededAttemptError",
    "TxnKafkaCommitMessage",
    "TxnKafkaDataSource",
    "register",
]


def register(spark: Any) -> None:
    """Register the ``txnkafka`` data source with a SparkSession."""
    spark.dataSource.register(TxnKafkaDataSource)
