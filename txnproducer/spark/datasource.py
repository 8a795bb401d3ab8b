"""The ``txnkafka`` data source: the one class PySpark registers under that name.

Why one class for both directions: Spark maps a data source name to exactly one class, and a user
writes ``format("txnkafka")`` whether they read or write, as with Spark's own ``format("kafka")``.
The class only dispatches: the source's readers live in :mod:`txnproducer.spark.source`, the
sink's writers in :mod:`txnproducer.spark.sink`, each parsing its own options.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from .kafka_options import split_options
from .sink.writer import TxnKafkaBatchWriter, TxnKafkaStreamWriter, batch_writer, stream_writer
from .source.options import SourceOptions
from .source.reader import TxnKafkaBatchReader, check_schema
from .source.rows import spark_schema
from .source.stream import TxnKafkaStreamReader

__all__ = ["TxnKafkaDataSource"]


class TxnKafkaDataSource(DataSource):
    """The ``txnkafka`` data source; register it with ``spark.dataSource.register(...)``.

    Read: the schema is Spark's Kafka source's (``key``, ``value``, ``topic``, ``partition``,
    ``offset``, ``timestamp``, ``timestampType``, and ``headers`` with ``includeHeaders``). Write: a
    DataFrame with a ``value`` column and optionally ``key``, ``topic``, ``partition``, ``headers``.
    """

    @classmethod
    def name(cls) -> str:
        return "txnkafka"

    def schema(self) -> StructType:
        headers = split_options(self.options).own.get("includeheaders", "false").strip().lower() == "true"
        return spark_schema(headers)  # type: ignore[no-any-return]

    def reader(self, schema: StructType) -> TxnKafkaBatchReader:
        options = SourceOptions.parse(self.options, streaming=False)
        check_schema(schema, options)
        return TxnKafkaBatchReader(options, schema)

    def streamReader(self, schema: StructType) -> TxnKafkaStreamReader:
        options = SourceOptions.parse(self.options, streaming=True)
        check_schema(schema, options)
        return TxnKafkaStreamReader(options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> TxnKafkaBatchWriter:
        return batch_writer(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> TxnKafkaStreamWriter:
        return stream_writer(self.options, schema)
