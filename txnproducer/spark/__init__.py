"""The ``txnkafka`` data source for PySpark (Spark 4.1+ Python Data Source API): an exactly-once Kafka sink.

    from txnproducer.spark import register
    register(spark)
    df.write.format("txnkafka").option("kafka.bootstrap.servers", "...").option("topic", "t").save()

Needs the ``[spark]`` extra (``pyspark>=4.1``), installed wherever Spark runs Python: the driver
and every executor. See :mod:`txnproducer.spark.sink.writer` for the protocol and the guarantees.

What the room holds: the registered data source class (``datasource``), which hands each direction
to its own folder: ``sink/`` - the writers (``writer``), one task attempt (``task``), the driver's
decisions (``committer``), phase two's Kafka calls (``completion``), the state topic
(``state_topic``) and its records (``decision``), the bounded id pool (``id_pool``), the sink's
options (``options``), Arrow batches to records (``records``), the migration from an older
version's commit log (``legacy``, ``commit_log``), tracing (``tracing``) and the fault hook its
tests kill processes with (``_faults``).

What it may import: the public producer API (``txnproducer.producer``, ``config``, ``errors``,
``prepared``), ``_internal.log``, ``_internal.network.redaction`` (the secret filter, for its own
kafka-python clients), ``txnproducer.otel``, kafka-python, pyarrow and PySpark - never the
producer's internals. Each direction's folder says what it may import.

PySpark is imported only by the data source and the sink's writers and task (``datasource``,
``sink.writer``, ``sink.task``): the state topic's readers (``sink.decision``, ``sink.state_topic``,
``sink.options``, ``sink.id_pool``) work without it, so that ``txnproducer spark status`` runs on a
machine that only watches the pipeline. ``TxnKafkaDataSource``, ``TxnKafkaCommitMessage`` and
:func:`register` raise an ImportError naming the extra when it is missing.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .sink.completion import SinkCommitError
from .sink.id_pool import PoolExhaustedError, pool_bound

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
    "TxnKafkaCommitMessage",
    "TxnKafkaDataSource",
    "pool_bound",
    "register",
]


def register(spark: Any) -> None:
    """Register the ``txnkafka`` data source with a SparkSession."""
    spark.dataSource.register(__getattr__("TxnKafkaDataSource"))
