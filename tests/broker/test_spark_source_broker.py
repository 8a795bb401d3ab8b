"""The ``txnkafka`` source against a real Apache Kafka (the broker tier; ``KAFKA_HOME`` or
``KAFKA_BOOTSTRAP_SERVERS``): what tests/mock/test_spark_source_range_reader.py and
tests/spark/test_spark_source.py check on MockCluster, on the real thing - a range's read whatever
markers and aborted records its ends hold; batch reads equal to confluent-kafka's read_committed read
record for record in every codec; a stream restarted from its checkpoint; read_uncommitted.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (the [spark] extra)")
if shutil.which("java") is None:
    pytest.skip("no java on PATH (PySpark needs a JVM)", allow_module_level=True)

from kafka.admin import KafkaAdminClient, NewTopic

from tests._support import readers
from tests._support.source_input import LAYOUT, confluent_read_committed, write_interleaved, write_layout
from tests._support.spark_session import local_session
from txnproducer.spark.source import consumers
from txnproducer.spark.source.data_loss import DataLossReport
from txnproducer.spark.source.options import SourceOptions
from txnproducer.spark.source.planning import OffsetRange
from txnproducer.spark.source.range_reader import read_range

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def make_topic(kafka_bootstrap: str) -> Iterator[Callable[[str, int], str]]:
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)

    def make(prefix: str, partitions: int) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
        return name

    yield make
    admin.close()


@pytest.fixture(scope="module")
def layout(kafka_bootstrap: str, make_topic: Callable[[str, int], str]) -> str:
    topic = make_topic("src-layout", 1)
    write_layout(kafka_bootstrap, topic)
    return topic


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    with local_session("txnkafka-source-broker-test") as session:
        yield session


def read_offsets(bootstrap: str, topic: str, start: int, end: int, **more: str) -> list[int]:
    opts = SourceOptions.parse(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, **more}, streaming=False
    )
    try:
        with consumers.borrowed(opts) as consumer:
            return [
                int(o)
                for b in read_range(consumer, OffsetRange(topic, 0, start, end), DataLossReport(True), 30.0)
                for o in b.offsets
            ]
    finally:
        consumers.close_all()


@pytest.mark.parametrize(
    ("start", "end"),
    [(0, 13), (3, 9), (0, 8), (0, 4), (0, 3), (5, 13), (6, 9), (3, 4), (6, 7), (12, 13), (4, 6), (4, 7)],
)
def test_a_range_reads_exactly_its_committed_records(
    kafka_bootstrap: str, layout: str, start: int, end: int
) -> None:
    assert read_offsets(kafka_bootstrap, layout, start, end) == [
        o for o in LAYOUT["committed"] if start <= o < end
    ]


def test_read_uncommitted_reads_aborted_records_never_markers(kafka_bootstrap: str, layout: str) -> None:
    got = read_offsets(kafka_bootstrap, layout, 0, 13, **{"kafka.isolation.level": "read_uncommitted"})
    assert got == sorted(LAYOUT["committed"] + LAYOUT["aborted"])


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_a_batch_read_equals_confluent_kafkas(
    spark: Any, kafka_bootstrap: str, make_topic: Callable[[str, int], str], codec: str
) -> None:
    topic = make_topic(f"src-{codec}", 3)
    write_interleaved(kafka_bootstrap, topic, 3, codec)
    expected = confluent_read_committed(kafka_bootstrap, topic, 3)
    df = (
        spark.read.format("txnkafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribe", topic)
        .option("includeHeaders", "true")
        .load()
    )
    rows = df.selectExpr(
        "partition", "offset", "key", "value", "headers", "unix_millis(timestamp) AS ts"
    ).collect()
    got = sorted(
        (r.partition, r.offset, r.key, r.value, tuple((h.key, h.value) for h in (r.headers or ())), r.ts)
        for r in rows
    )
    assert got == [(e.partition, e.offset, e.key, e.value, e.headers, e.timestamp) for e in expected]


def test_ranges_of_one_offset_each(spark: Any, kafka_bootstrap: str, layout: str) -> None:
    df = (
        spark.read.format("txnkafka")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribe", layout)
        .option("maxRecordsPerPartition", "1")
        .load()
    )
    assert sorted(r.offset for r in df.select("offset").collect()) == LAYOUT["committed"]


def test_a_stream_restarted_from_its_checkpoint_is_exactly_once(
    spark: Any, kafka_bootstrap: str, make_topic: Callable[[str, int], str], tmp_path: Path
) -> None:
    source, out = make_topic("src-stream-in", 2), make_topic("src-stream-out", 2)

    def run() -> None:
        query = (
            spark.readStream.format("txnkafka")
            .option("kafka.bootstrap.servers", kafka_bootstrap)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .load()
            .selectExpr("key", "upper(CAST(value AS STRING)) AS value")
            .writeStream.format("txnkafka")
            .option("kafka.bootstrap.servers", kafka_bootstrap)
            .option("topic", out)
            .option("checkpointLocation", str(tmp_path / "ckpt"))
            .trigger(availableNow=True)
            .start()
        )
        with contextlib.suppress(Exception):
            query.awaitTermination(300)
        assert query.exception() is None, query.exception()

    write_interleaved(kafka_bootstrap, source, 2, rounds=2)
    run()
    write_interleaved(kafka_bootstrap, source, 2, rounds=2)
    run()
    committed = confluent_read_committed(kafka_bootstrap, source, 2)
    expected = sorted(r.value.upper() for r in committed if r.value is not None)
    got = [v for v in readers.read_values(kafka_bootstrap, out, 2) if v is not None]
    assert sorted(got) == expected
    readers.assert_no_open_transaction(kafka_bootstrap, out, 2)
