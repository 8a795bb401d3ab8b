"""A PySpark pipeline writing to Kafka exactly once through the ``txnkafka`` sink.

1. a batch job writes 10,000 rows (``df.write.format("txnkafka")``);
2. a streaming query (``df.writeStream.format("txnkafka")``) reads text files dropped into a
   directory, one micro-batch per file, and writes every line as a record.

Each task writes its rows in one Kafka transaction and *prepares* it; the driver records the
batch's prepared transactions in the sink's state topic (``txnkafka-state``, in Kafka: the
executors need no shared directory) and then commits them. Killing the driver at any point and
restarting the query from its checkpoint neither loses nor duplicates a row. A read_committed
consumer at the end counts what arrived.

Run it with ``python examples/spark_exactly_once.py`` (``run_example()`` is the part a test runs in
its own Spark session; needs ``pip install 'txnproducer[spark]'``
and Java 17+; ``PYSPARK_PYTHON`` must name a Python that has txnproducer - the script sets it to
its own interpreter). It uses ``$KAFKA_BOOTSTRAP_SERVERS`` when set, otherwise an in-process
MockCluster.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import uuid
from collections.abc import Iterator

from kafka import KafkaConsumer, TopicPartition
from pyspark.sql import SparkSession

from txnproducer.spark import register
from txnproducer.testing import MockCluster

RUN = uuid.uuid4().hex[:8]
BATCH_TOPIC, STREAM_TOPIC = f"spark-batch-{RUN}", f"spark-stream-{RUN}"
FILES, LINES = 3, 1000


@contextlib.contextmanager
def kafka() -> Iterator[str]:
    servers = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if servers:
        yield servers
        return
    with MockCluster(num_brokers=3, transaction_version=2) as cluster:
        for topic in (BATCH_TOPIC, STREAM_TOPIC):
            cluster.create_topic(topic, partitions=3)
        yield cluster.bootstrap_servers


def count_committed(servers: str, topic: str, expected: int) -> int:
    consumer = KafkaConsumer(bootstrap_servers=servers, isolation_level="read_committed",
                             enable_auto_commit=False, consumer_timeout_ms=10_000)
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        consumer.assign([TopicPartition(topic, p) for p in parts])
        consumer.seek_to_beginning()
        seen = 0
        for _ in consumer:
            seen += 1
            if seen == expected:
                break
        return seen
    finally:
        consumer.close()


def run_example(spark: SparkSession, servers: str, work: str, rows: int = 10_000,
                lines: int = LINES) -> tuple[int, int]:
    """The batch job and the streaming query on ``spark``; returns how many rows of each a
    read_committed consumer finds (``rows`` and ``FILES * lines`` when all went well)."""
    register(spark)
    sink = {
        "kafka.bootstrap.servers": servers,
        # every prepared transaction must be committed within this (the driver does it at once)
        "kafka.transaction.timeout.ms": "60000",
    }

    # 1. batch: key and value
    (spark.range(rows).selectExpr("CAST(id % 100 AS STRING) AS key", "CAST(id AS STRING) AS value")
     .write.format("txnkafka").options(**sink).option("topic", BATCH_TOPIC).mode("append").save())
    batch = count_committed(servers, BATCH_TOPIC, rows)

    # 2. streaming: a file source, one micro-batch per file
    source = os.path.join(work, "in")
    os.makedirs(source)
    for f in range(FILES):
        with open(os.path.join(source, f"part-{f}.txt"), "w") as out:
            out.writelines(f"file{f}-line{i}\n" for i in range(lines))
    query = (spark.readStream.schema("value string").format("text")
             .option("maxFilesPerTrigger", 1).load(source)
             .writeStream.format("txnkafka").options(**sink).option("topic", STREAM_TOPIC)
             # names the query: its transactional ids are derived from this string
             .option("checkpointLocation", os.path.join(work, "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    return batch, count_committed(servers, STREAM_TOPIC, FILES * lines)


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    work = tempfile.mkdtemp(prefix="txnkafka-example-")
    with kafka() as servers:
        spark = (SparkSession.builder.master("local[2]").appName("txnkafka-example")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        batch, stream = run_example(spark, servers, work)
        print(f"batch: {batch} of 10000 rows committed")
        print(f"stream: {stream} of {FILES * LINES} rows committed")
        spark.stop()


if __name__ == "__main__":
    main()
