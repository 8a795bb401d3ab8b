"""The ``txnkafka`` data source: the one class PySpark registers under that name.

Why one class for both directions: Spark maps a data source name to exactly one class, and a user
writes ``format("txnkafka")`` whether they read or write, as with Spark's own ``format("kafka")``.
The class only dispatches: the sink's writers live in :mod:`txnproducer.spark.sink`, each parsing
its own options.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .sink.writer import TxnKafkaBatchWriter, TxnKafkaStreamWriter, batch_writer, stream_writer

__all__ = ["TxnKafkaDataSource"]


class TxnKafkaDataSource(DataSource):
    """The ``txnkafka`` data source; register it with ``spark.dataSource.register(...)``."""

    @classmethod
    def name(cls) -> str:
        return "txnkafka"

    def schema(self) -> str:
        return "key binary, value binary, topic string, partition int"

    def writer(self, schema: StructType, overwrite: bool) -> TxnKafkaBatchWriter:
        return batch_writer(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> TxnKafkaStreamWriter:
        return stream_writer(self.options, schema)
