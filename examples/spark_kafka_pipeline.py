"""Kafka -> PySpark -> Kafka exactly once, with nothing but pip: the ``txnkafka`` source and sink.

1. A producer writes orders to the topic ``orders`` in transactions, every third one aborted.
2. A streaming query reads them (``spark.readStream.format("txnkafka")``: read_committed, so the
   aborted orders are never seen), upper-cases each value and writes it to ``orders-upper``
   (``writeStream.format("txnkafka")``: exactly once), its offsets in a checkpoint.
3. More orders arrive; the query is started again on its checkpoint - as after a crash or a
   redeploy - and reads on from where it stopped.
4. A read_committed read of ``orders-upper`` (the source again, as a batch read) finds every
   committed order exactly once, and none of the aborted ones.

No JVM Kafka connector: the source reads with txnproducer's consumer on the executors, the sink
writes with its transactional producer. Run it with ``python examples/spark_kafka_pipeline.py``
(needs ``pip install 'txnproducer[spark]'`` and Java 17+; ``PYSPARK_PYTHON`` must name a Python
that has txnproducer - the script sets it to its own interpreter). It uses
``$KAFKA_BOOTSTRAP_SERVERS`` when set, otherwise an in-process MockCluster.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

from txnproducer import TransactionalProducer
from txnproducer.testing import MockCluster

RUN = uuid.uuid4().hex[:8]
ORDERS, UPPER = f"orders-{RUN}", f"orders-upper-{RUN}"


@contextlib.contextmanager
def kafka() -> Iterator[str]:
    servers = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if servers:
        yield servers
        return
    with MockCluster(num_brokers=3, transaction_version=2) as cluster:
        for topic in (ORDERS, UPPER):
            cluster.create_topic(topic, partitions=3)
        yield cluster.bootstrap_servers


def write_orders(servers: str, first: int, count: int) -> set[bytes]:
    """Orders ``first`` to ``first + count - 1``, ten to a transaction, every third transaction
    aborted; returns the committed ones."""
    committed: set[bytes] = set()
    with TransactionalProducer(bootstrap_servers=servers, transactional_id=f"orders-{RUN}") as producer:
        producer.init_transactions()
        for start in range(first, first + count, 10):
            values = [b"order-%d" % n for n in range(start, min(start + 10, first + count))]
            producer.begin_transaction()
            for value in values:
                producer.send(ORDERS, value, key=value[-1:])
            producer.flush()
            if start // 10 % 3 == 2:
                producer.abort_transaction()
            else:
                producer.commit_transaction()
                committed.update(values)
    return committed


def run_pipeline(spark: Any, servers: str, checkpoint: str) -> None:
    """The streaming query, until it has read what is there (``availableNow``)."""
    kafka_options = {"kafka.bootstrap.servers": servers}
    query = (spark.readStream.format("txnkafka").options(**kafka_options)
             .option("subscribe", ORDERS)
             .option("startingOffsets", "earliest")       # a new query: from the start
             .load()
             .selectExpr("key", "upper(CAST(value AS STRING)) AS value")
             .writeStream.format("txnkafka").options(**kafka_options)
             .option("topic", UPPER)
             .option("checkpointLocation", checkpoint)    # the source's offsets and the sink's ids
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    if query.exception() is not None:
        raise RuntimeError(f"the query failed: {query.exception()}")


def run_example(spark: Any, servers: str, work: str) -> tuple[int, int]:
    """Steps 1-4 of the module docstring; returns (committed orders, rows in the output)."""
    checkpoint = os.path.join(work, "checkpoint")
    committed = write_orders(servers, 0, 300)
    run_pipeline(spark, servers, checkpoint)
    committed |= write_orders(servers, 300, 150)        # more orders, then a restart
    run_pipeline(spark, servers, checkpoint)
    out = (spark.read.format("txnkafka").option("kafka.bootstrap.servers", servers)
           .option("subscribe", UPPER).load().selectExpr("CAST(value AS STRING) AS value"))
    values = [row.value for row in out.collect()]
    assert sorted(values) == sorted(v.decode().upper() for v in committed), "not exactly once"
    print(f"{len(committed)} committed orders (of 450 written), {len(values)} in {UPPER}: each once")
    return len(committed), len(values)


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from txnproducer.spark import register

    with kafka() as servers, tempfile.TemporaryDirectory(prefix="txnkafka-pipeline-") as work:
        spark = (SparkSession.builder.master("local[2]").appName("txnkafka-pipeline")
                 .config("spark.ui.enabled", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        try:
            run_example(spark, servers, work)
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
