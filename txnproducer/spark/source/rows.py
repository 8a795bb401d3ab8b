"""Records to Spark rows: Arrow record batches built from the consumer's columns, or tuples.

Why Arrow from columns: :meth:`~txnproducer.TransactionalConsumer.poll_batch` hands a partition's
records out as columns - offsets and timestamps as typed arrays, keys and values each as one
contiguous buffer with a start and a length per record (-1: null). Those are, buffer for buffer,
what an Arrow binary array is made of (the starts plus the end are its offsets, the lengths' signs its
validity), so a batch of N records becomes an Arrow record batch with a handful of whole-buffer
operations and no Python object per record; Spark takes Arrow batches from a Python data source's
``read()`` as they are (PySpark 4.0+). The tuples of :func:`to_rows` - one Python object per field
per record - are the fallback, for when pyarrow cannot be imported, and the reference the tests
compare the Arrow path with.

The schema is Spark's Kafka source's (``key``, ``value``, ``topic``, ``partition``, ``offset``,
``timestamp``, ``timestampType``, and ``headers`` with ``includeHeaders``); the Arrow types are
those PySpark derives from it (:func:`arrow_schema`, the same call PySpark checks a batch with).
``timestamp`` is the record's timestamp in milliseconds as Spark's microseconds; ``timestampType``
is 0 (CreateTime) or 1 (LogAppendTime), as Java's ``TimestampType.id``; ``headers`` is null for a
record without headers, an array of (key, value) otherwise - all as Spark's own source gives them.
"""

from __future__ import annotations

import datetime
import inspect
from collections.abc import Iterator
from typing import Any

from ...consumer import PartitionBatch

__all__ = ["KAFKA_SCHEMA", "arrow_schema", "kafka_schema", "spark_schema", "to_record_batch", "to_rows"]

#: Spark's Kafka source schema (``KafkaRecordToRowConverter.kafkaSchema``), without the headers
KAFKA_SCHEMA = ("key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp,"
                " timestampType int")
_HEADERS = "headers array<struct<key: string, value: binary>>"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def kafka_schema(include_headers: bool) -> str:
    """The source's schema as DDL (``includeHeaders`` adds the ``headers`` column)."""
    return f"{KAFKA_SCHEMA}, {_HEADERS}" if include_headers else KAFKA_SCHEMA


def spark_schema(include_headers: bool) -> Any:
    """The source's schema as a StructType (built without a SparkSession: the data source's
    methods run in Python workers that have none)."""
    from pyspark.sql import types as t

    fields = [t.StructField("key", t.BinaryType()), t.StructField("value", t.BinaryType()),
              t.StructField("topic", t.StringType()), t.StructField("partition", t.IntegerType()),
              t.StructField("offset", t.LongType()), t.StructField("timestamp", t.TimestampType()),
              t.StructField("timestampType", t.IntegerType())]
    if include_headers:
        header = t.StructType([t.StructField("key", t.StringType()), t.StructField("value", t.BinaryType())])
        fields.append(t.StructField("headers", t.ArrayType(header)))
    return t.StructType(fields)


def arrow_schema(schema: Any) -> Any:
    """The Arrow schema PySpark expects of a batch for the Spark ``schema`` (a StructType): its own
    conversion, with the time zone its reader passes where the version takes one (4.2+)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)


def _binary(pa: Any, column: Any, n: int) -> Any:
    """A BytesColumn as an Arrow binary array: the buffer, its starts and end as the offsets, the
    lengths' signs as validity (no copy of the data)."""
    starts = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(column.starts)])
    lengths = pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(column.lengths)])
    last = int(column.starts[n - 1]) + max(int(column.lengths[n - 1]), 0)
    offsets = pa.concat_arrays([starts, pa.array([last], pa.int32())])
    valid = None
    if pa.compute.min(lengths).as_py() < 0:
        valid = pa.compute.greater_equal(lengths, 0).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), n, [valid, offsets.buffers()[1], pa.py_buffer(column.buffer)])


def _headers(pa: Any, batch: PartitionBatch, field_type: Any) -> Any:
    if batch.headers is None:
        return pa.nulls(len(batch), field_type)
    return pa.array([[{"key": k, "value": v} for k, v in h] if h else None for h in batch.headers],
                    field_type)


def to_record_batch(batch: PartitionBatch, schema: Any) -> Any:
    """One Arrow record batch of the records of ``batch`` in ``schema`` (:func:`arrow_schema`)."""
    import pyarrow as pa
    import pyarrow.compute

    n = len(batch)
    offsets = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(batch.offsets)])
    millis = pa.Array.from_buffers(pa.timestamp("ms", tz="UTC"), n, [None, pa.py_buffer(batch.timestamps)])
    types = pa.Array.from_buffers(pa.int8(), n, [None, pa.py_buffer(batch.timestamp_types)])
    columns = [
        _binary(pa, batch.keys, n),
        _binary(pa, batch.values, n),
        pa.repeat(pa.scalar(batch.topic, pa.string()), n),
        pa.repeat(pa.scalar(batch.partition, pa.int32()), n),
        offsets,
        millis.cast(schema.field("timestamp").type),
        types.cast(pa.int32()),
    ]
    if len(schema) > len(columns):
        columns.append(_headers(pa, batch, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def to_rows(batch: PartitionBatch, include_headers: bool) -> Iterator[tuple[Any, ...]]:
    """The records of ``batch`` as tuples in the schema's order (module docstring)."""
    headers = batch.headers
    topic, partition = batch.topic, batch.partition
    columns = zip(batch.keys.to_list(), batch.values.to_list(), batch.offsets, batch.timestamps,
                  batch.timestamp_types, strict=True)
    for i, (key, value, offset, ts, tt) in enumerate(columns):
        row: tuple[Any, ...] = (key, value, topic, partition, offset,
                                _EPOCH + datetime.timedelta(milliseconds=ts), tt)
        if include_headers:
            h = None if headers is None or not headers[i] else [(k, v) for k, v in headers[i]]
            row += (h,)
        yield row
