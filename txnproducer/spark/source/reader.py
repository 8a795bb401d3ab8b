"""``spark.read.format("txnkafka")``: a batch read of offset ranges, and the read of one range on an executor.

The driver (``partitions``, in the planning Python worker) resolves ``startingOffsets`` and
``endingOffsets`` (or their timestamp forms) to an offset per partition - "latest" being the last
stable offset under read_committed, so a batch read never waits for an open transaction - and makes
one task per partition range, more with ``minPartitions`` / ``maxRecordsPerPartition``. The reader
object, options included, is what Spark sends to the executors; each task reads its range with a
consumer its Python worker keeps (:mod:`.consumers`, :mod:`.range_reader`) and hands the rows over as
Arrow batches (:mod:`.rows`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ...errors import ConfigError
from .consumers import borrowed
from .data_loss import DataLossReport
from .offset_reader import OffsetReader
from .options import SourceOptions
from .planning import OffsetRange, ranges_of, split_ranges
from .range_reader import read_range
from .rows import arrow_schema, spark_schema, to_record_batch, to_rows

__all__ = ["TxnKafkaBatchReader", "check_schema", "read_partition"]


def check_schema(schema: StructType, options: SourceOptions) -> None:
    """A user-given schema must be the source's own (Spark's source refuses any other too)."""
    expected = spark_schema(options.include_headers)
    if schema != expected:
        raise ConfigError(f"txnkafka has a fixed schema ({expected.simpleString()}); do not set another"
                          f" ({schema.simpleString()}): select and cast the columns instead")


def read_partition(options: SourceOptions, schema: StructType, value: Any) -> Iterator[Any]:
    """The rows of one task's range (``value``: an :class:`OffsetRange`; anything else, the
    placeholder Spark plans for a read without ranges, has none): Arrow record batches, or tuples
    where pyarrow cannot be imported."""
    if not isinstance(value, OffsetRange):
        return
    try:
        target = arrow_schema(schema)
    except ImportError:
        target = None
    report = DataLossReport(options.fail_on_data_loss)
    with borrowed(options) as consumer:
        for batch in read_range(consumer, value, report, options.poll_timeout_ms / 1000):
            if target is not None:
                yield to_record_batch(batch, target)
            else:
                yield from to_rows(batch, options.include_headers)


class TxnKafkaBatchReader(DataSourceReader):
    """The reader of ``spark.read.format("txnkafka")`` (module docstring)."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        opts = self.options
        report = DataLossReport(opts.fail_on_data_loss)
        with OffsetReader(opts, batch=True) as kafka:
            partitions = kafka.partitions()
            start = kafka.resolve(opts.starting, partitions, starting=True, report=report)
            end = kafka.resolve(opts.ending, partitions, starting=False, report=report)
        for tp in sorted(partitions):
            if start[tp] > end[tp]:
                raise ConfigError(
                    f"txnkafka: {tp.topic}-{tp.partition} would be read from offset {start[tp]}"
                    f" ({opts.starting.option}) to {end[tp]} ({opts.ending.option}): the start is past"
                    " the end"
                )
        ranges = split_ranges(ranges_of(start, end), opts.min_partitions, opts.max_records_per_partition)
        return [InputPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(self.options, self.schema, partition.value)
