"""The txnkafka source's rows (txnproducer/spark/source/rows.py): Arrow record batches built from the
consumer's columns equal the tuple rows, field for field - null keys and values, headers, a slice of
a chunk (columns that do not start at the buffer's start) - in exactly the Arrow schema PySpark checks
a reader's batches against. No JVM: the conversion is the Python worker's."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (the [spark] extra)")

from tests._support.source_input import write_interleaved
from txnproducer import PartitionBatch, TopicPartition, TransactionalConsumer
from txnproducer.spark.source.rows import arrow_schema, spark_schema, to_record_batch, to_rows
from txnproducer.testing import MockCluster


@pytest.fixture(scope="module")
def batches() -> list[PartitionBatch]:
    with MockCluster(num_brokers=1) as cluster:
        cluster.create_topic("rows", 2)
        write_interleaved(cluster.bootstrap_servers, "rows", 2, codec="lz4", producers=2, rounds=2)
        consumer = TransactionalConsumer(
            bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest"
        )
        with consumer:
            consumer.assign([TopicPartition("rows", 0), TopicPartition("rows", 1)])
            got: list[PartitionBatch] = []
            for _ in range(50):
                got += consumer.poll_batch(0.2)
                if sum(len(b) for b in got) >= 12:  # two committed transactions of 6 records
                    break
    assert got and any(b.headers for b in got)
    return got


def as_python(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.timezone.utc)
    if isinstance(value, list):
        return [tuple(h.values()) if isinstance(h, dict) else h for h in value]
    return value


@pytest.mark.parametrize("headers", [False, True], ids=["without-headers", "with-headers"])
def test_arrow_batches_equal_the_tuple_rows(batches: list[PartitionBatch], headers: bool) -> None:
    schema = arrow_schema(spark_schema(headers))
    for batch in batches:
        for part in (batch, batch.slice(1, len(batch)), batch.slice(len(batch) // 2, len(batch) // 2 + 1)):
            record_batch = to_record_batch(part, schema)
            assert record_batch.schema.equals(schema)
            arrow_rows = [tuple(as_python(v) for v in row.values()) for row in record_batch.to_pylist()]
            tuple_rows = [tuple(as_python(v) for v in row) for row in to_rows(part, headers)]
            assert arrow_rows == tuple_rows
            assert [r[4] for r in arrow_rows] == [int(o) for o in part.offsets]


def test_nulls_and_headers_are_sparks(batches: list[PartitionBatch]) -> None:
    rows = [row for b in batches for row in to_record_batch(b, arrow_schema(spark_schema(True))).to_pylist()]
    assert any(r["key"] is None for r in rows) and any(r["value"] is None for r in rows)
    with_headers = [r for r in rows if r["headers"] is not None]
    assert with_headers and all(h["key"] in ("h1", "h2") for r in with_headers for h in r["headers"])
    assert any(h["value"] is None for r in with_headers for h in r["headers"]), (
        "a null header value stays null"
    )
    assert any(r["headers"] is None for r in rows), "no headers: null, as Spark's source gives"
    assert {r["timestampType"] for r in rows} == {0} and {r["topic"] for r in rows} == {"rows"}
