"""Spark to Kafka throughput: the exactly-once ``txnkafka`` sink vs the at-least-once writer users
write today (``foreachPartition`` with an idempotent confluent-kafka producer), same run, same broker.

    python benchmarks/spark_sink.py --kafka-home /path/to/kafka_2.13-4.1.0   # starts a one-node KRaft Kafka
    python benchmarks/spark_sink.py --bootstrap HOST:PORT                   # a running Kafka
    python benchmarks/spark_sink.py --rows 100000 --rounds 1                # a quick look

One SparkSession (``--master``, default ``local[2]``) writes the same DataFrame - ``--rows`` rows of
a string key and a 100-byte string value in ``--spark-partitions`` partitions - to a fresh
3-partition topic per run, alternating the writers (A B A B ...) for ``--rounds`` rounds after
``--warmup-rounds``, and reports the median rows/s of each and their ratio. Both writers use
``acks=all``, idempotence and ``linger.ms=5``. Every run is checked afterwards: a read_committed
consumer must see every row. "CPU s" is the CPU time of the Spark JVM and its Python workers during the write
(steadier than wall time on a busy machine). Results: ``benchmarks/results/spark_sink.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for path in (ROOT, HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

TOPIC_PARTITIONS = 3
VALUE_BYTES = 100
WRITERS = ("txnkafka", "foreachPartition+confluent-kafka")


def log(message: str) -> None:
    print(f"[spark-bench] {message}", file=sys.stderr, flush=True)


@contextmanager
def kafka(args: argparse.Namespace) -> Iterator[str]:
    if args.bootstrap:
        yield args.bootstrap
        return
    from compare import kafka_home_broker  # the same one-node KRaft starter as compare.py

    with kafka_home_broker(args.kafka_home) as bootstrap:
        yield bootstrap


def create_topic(bootstrap: str) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"spark-bench-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, num_partitions=TOPIC_PARTITIONS, replication_factor=1)])
    finally:
        admin.close()
    return name


def count_committed(bootstrap: str, topic: str) -> int:
    """Records a read_committed consumer sees in ``topic`` (confluent-kafka's, for speed)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"count-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(TOPIC_PARTITIONS)])
        count, finished = 0, set()
        deadline = time.monotonic() + 300
        while len(finished) < TOPIC_PARTITIONS and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=1.0):
                if message.error() is None:
                    count += 1
                elif message.error().code() == -191:  # _PARTITION_EOF
                    finished.add(message.partition())
        return count
    finally:
        consumer.close()


def _tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def cpu_seconds(root: int) -> dict[int, float]:
    """CPU seconds (user + system) of every process in ``root``'s tree, by pid."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in _tree(root):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[pid] = (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            continue
    return out


def confluent_writer(bootstrap: str, topic: str) -> Callable[[Iterator[Any]], None]:
    """The at-least-once writer people write: one idempotent producer per partition. Its local
    queue is raised to a million records, so that it never waits for room (with the default
    100,000 a task's 250,000 rows stall on BufferError): the baseline at its best."""

    def write(rows: Iterator[Any]) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
        produce = producer.produce
        for row in rows:
            while True:
                try:
                    produce(topic, value=row.value, key=row.key)
                    break
                except BufferError:  # the local queue is full: let librdkafka send
                    producer.poll(0.05)
        if producer.flush(120) != 0:
            raise RuntimeError("confluent-kafka could not deliver every record")

    return write


def run(spark: Any, df: Any, writer: str, bootstrap: str, rows: int, jvm_pid: int) -> dict[str, Any]:
    topic = create_topic(bootstrap)
    before = cpu_seconds(jvm_pid)
    start = time.perf_counter()
    if writer == "txnkafka":
        (df.write.format("txnkafka").option("kafka.bootstrap.servers", bootstrap)
         .option("kafka.linger.ms", "5").option("topic", topic).mode("append").save())
    else:
        df.foreachPartition(confluent_writer(bootstrap, topic))
    elapsed = time.perf_counter() - start
    after = cpu_seconds(jvm_pid)
    seen = count_committed(bootstrap, topic)
    cpu = sum(after[p] - before.get(p, 0.0) for p in after)
    if seen != rows:
        raise RuntimeError(f"{writer}: {seen} of {rows} rows in {topic}")
    result = {"writer": writer, "rows": rows, "seconds": elapsed, "rows_per_s": rows / elapsed,
              "cpu_s": cpu, "topic": topic}
    log(f"{writer}: {rows / elapsed:,.0f} rows/s ({elapsed:.2f} s, CPU {cpu:.2f} s)")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap")
    parser.add_argument("--kafka-home", default=os.environ.get("KAFKA_HOME"))
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup-rounds", type=int, default=1)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--spark-partitions", type=int, default=2)
    parser.add_argument("--out-dir", default=str(HERE / "results"))
    args = parser.parse_args(argv)
    if not (args.bootstrap or args.kafka_home):
        parser.error("give --bootstrap or --kafka-home (or set KAFKA_HOME)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from txnproducer.spark import register

    with kafka(args) as bootstrap:
        spark = (SparkSession.builder.master(args.master).appName("txnkafka-bench")
                 .config("spark.ui.enabled", "false").config("spark.driver.memory", "1g").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        jvm_pid = spark.sparkContext._gateway.proc.pid
        df = spark.range(args.rows, numPartitions=args.spark_partitions).selectExpr(
            "CAST(id AS STRING) AS key", f"lpad(CAST(id AS STRING), {VALUE_BYTES}, 'x') AS value").cache()
        df.count()  # both writers read the same cached rows
        runs: list[dict[str, Any]] = []
        for round_no in range(args.warmup_rounds + args.rounds):
            order = WRITERS if round_no % 2 == 0 else WRITERS[::-1]
            for writer in order:
                result = run(spark, df, writer, bootstrap, args.rows, jvm_pid)
                result["warmup"] = round_no < args.warmup_rounds
                runs.append(result)
        spark.stop()
    timed = [r for r in runs if not r["warmup"]]
    medians = {w: {"rows_per_s": statistics.median(r["rows_per_s"] for r in timed if r["writer"] == w),
                   "cpu_s": statistics.median(r["cpu_s"] for r in timed if r["writer"] == w)}
               for w in WRITERS}
    ratio = medians["txnkafka"]["rows_per_s"] / medians[WRITERS[1]]["rows_per_s"]
    import pyspark

    summary = {"runs": runs, "medians": medians, "ratio_rows_per_s": ratio, "rows": args.rows,
               "master": args.master, "machine": f"{os.cpu_count()} CPUs, {platform.platform()}",
               "python": platform.python_version(), "pyspark": pyspark.__version__,
               "broker": args.bootstrap or f"Kafka from {args.kafka_home}"}
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "spark_sink.json").write_text(json.dumps(summary, indent=1))
    print(f"| writer | rows/s (median of {args.rounds}) | CPU s (median) |")
    print("|---|---|---|")
    for w in WRITERS:
        print(f"| {w} | {medians[w]['rows_per_s']:,.0f} | {medians[w]['cpu_s']:.2f} |")
    print(f"txnkafka / {WRITERS[1]}: {ratio:.2f}x rows/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
