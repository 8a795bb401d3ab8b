"""The ``txnkafka`` data source for PySpark (Spark 4.1+ Python Data Source API): Kafka in and out, no jars.

    from txnproducer.spark import register
    register(spark)
    df = (spark.readStream.format("txnkafka").option("kafka.bootstrap.servers", "...")
          .option("subscribe", "in").load())                     # read_committed by default
    (df.writeStream.format("txnkafka").option("kafka.bootstrap.servers", "...").option("topic", "out")
     .option("checkpointLocation", "/ckpt").start())              # exactly once

Needs the ``[spark]`` extra (``pyspark>=4.1``), installed wherever Spark runs Python: the driver
and every executor. The source: :mod:`txnproducer.spark.source` (Spark's Kafka source's options and
schema); the sink's protocol and guarantees: :mod:`txnproducer.spark.sink.writer`.

What the room holds: the registered data source class (``datasource``), which hands each direction
to its own folder - ``source/`` (the readers, on the driver and the executors) and ``sink/`` (the
writers, their tasks, the driver's decisions and the state topic) - and the one thing both share,
the split of the ``kafka.*`` options from the data source's own (``kafka_options``). Each folder's
docstring lists its files.

What it may import: the public producer API (``txnproducer.producer``, ``config``, ``errors``,
``prepared``), ``_internal.log``, ``_internal.network.redaction`` (the secret filter, for its own
kafka-python clients), ``txnproducer.otel``, kafka-python, pyarrow and PySpark - never the
producer's internals. Each direction's folder says what it may import besides.

PySpark is imported only by the data source, the readers and the sink's writers and task
(``datasource``, ``source.reader``, ``source.stream``, ``sink.writer``, ``sink.task``): the sink's
state readers (``sink.decision``, ``sink.state_topic``, ``sink.options``, ``sink.id_pool``) and the
source's offsets work without it, so that ``txnproducer spark status`` runs on a machine that only
watches the pipeline. ``TxnKafkaDataSource``, ``TxnKafkaCommitMessage`` and :func:`register` raise
an ImportError naming the extra when it is missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .sink.completion import SinkCommitError
from .sink.id_pool import PoolExhaustedError, pool_bound
from .source.data_loss import SourceDataLossError

if TYPE_CHECKING:  # pragma: no cover
    from .datasource import TxnKafkaDataSource
    from .sink.task import TxnKafkaCommitMessage

_NEEDS_PYSPARK = {"TxnKafkaDataSource": ".datasource", "TxnKafkaCommitMessage": ".sink.task"}


def __getattr__(name: str) -> Any:
    """The classes that need PySpark, imported on first use (module docstring)."""
    module = _NEEDS_PYSPARK.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        import pyspark.sql.datasource  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("txnproducer.spark needs PySpark 4.x: pip install 'txnproducer[spark]'") from exc
    return getattr(importlib.import_module(module, __name__), name)

__all__ = [
    "PoolExhaustedError",
    "SinkCommitError",
    "SourceDataLossError",
    "TxnKafkaCommitMessage",
    "TxnKafkaDataSource",
    "pool_bound",
    "register",
]


def register(spark: Any) -> None:
    """Register the ``txnkafka`` data source with a SparkSession."""
    spark.dataSource.register(__getattr__("TxnKafkaDataSource"))
