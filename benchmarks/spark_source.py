"""Kafka to PySpark throughput: the jar-free ``txnkafka`` source against Spark's own JVM Kafka source,
same Spark session, same broker, same input.

    python benchmarks/spark_source.py --kafka-home /path/to/kafka_2.13-4.1.0 \\
        --jars /path/to/spark-kafka-jars-<version>        # the connector's 4 jars (never in this repo)
    python benchmarks/spark_source.py --bootstrap HOST:PORT --jars DIR --rows 500000 --rounds 1

The input: ``--rows`` records (a 7-character key, a 100-byte value) in a 3-partition topic, written
by our producer in transactions of 10,000 records (a commit marker after each: the gaps the
source's ranges must end across). Two measurements, each a median over ``--rounds`` rounds after
``--warmup-rounds``, the contenders alternating (A B A B ...):

(a) **batch read into a no-op sink**: ``spark.read.format(F)....load().write.format("noop")`` with
    ``F`` = ``txnkafka`` and ``kafka`` (the JVM source, with ``kafka.isolation.level=read_committed``
    so that both read the same records);
(b) **the Kafka -> upper-case -> Kafka pipeline**: ``readStream`` (``startingOffsets=earliest``,
    ``Trigger.AvailableNow``: the whole input) -> ``upper(CAST(value AS STRING))`` ->
    * ``writeStream.format("txnkafka")`` from ``txnkafka`` (ours end to end, exactly once),
    * ``writeStream.format("txnkafka")`` from ``kafka`` (the JVM source + our sink, exactly once),
    * ``foreachBatch`` with an idempotent confluent-kafka producer per partition from ``kafka``
      (the plain PySpark writer people write: at least once).

"rows/s" is the input's records over the wall time of the job (the query, for (b)); "CPU us/row"
is the CPU time of the Spark JVM and its Python workers over the records (what it costs on a busy
cluster). Every run is checked: (a) counts the rows read once per source, (b) counts the committed
output. ``--master`` defaults to ``local[2]``. Results: ``benchmarks/results/spark_source.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for path in (ROOT, HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from spark_sink import confluent_writer, count_committed, cpu_seconds, kafka, log  # noqa: E402

PARTITIONS = 3
VALUE_BYTES = 100
PER_TRANSACTION = 10_000
READERS = ("txnkafka", "kafka")
PIPELINES = ("txnkafka->txnkafka", "kafka->txnkafka", "kafka->foreachBatch")


def create_topic(bootstrap: str, prefix: str) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)])
    finally:
        admin.close()
    return name


def fill(bootstrap: str, topic: str, rows: int) -> None:
    """``rows`` records spread over the partitions, in committed transactions of 10,000."""
    from txnproducer import TransactionalProducer

    value = b"x" * VALUE_BYTES
    started = time.perf_counter()
    with TransactionalProducer(
        bootstrap_servers=bootstrap, transactional_id=f"bench-fill-{uuid.uuid4().hex[:6]}", linger_ms=5
    ) as producer:
        producer.init_transactions()
        for first in range(0, rows, PER_TRANSACTION):
            with producer.transaction():
                for i in range(first, min(rows, first + PER_TRANSACTION)):
                    producer.send(topic, value, key=b"%07d" % i, partition=i % PARTITIONS)
    log(f"wrote {rows:,} records to {topic} in {time.perf_counter() - started:.1f} s")


def source_options(name: str, bootstrap: str, topic: str) -> dict[str, str]:
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}
    if name == "kafka":
        options["kafka.isolation.level"] = "read_committed"  # the records txnkafka reads by default
    return options


def measure(jvm_pid: int, job: Any) -> tuple[float, float]:
    before = cpu_seconds(jvm_pid)
    started = time.perf_counter()
    job()
    elapsed = time.perf_counter() - started
    after = cpu_seconds(jvm_pid)
    return elapsed, sum(after[p] - before.get(p, 0.0) for p in after)


def batch_read(
    spark: Any, reader: str, bootstrap: str, topic: str, rows: int, jvm_pid: int
) -> dict[str, Any]:
    def job() -> None:
        (
            spark.read.format(reader)
            .options(**source_options(reader, bootstrap, topic))
            .load()
            .write.format("noop")
            .mode("overwrite")
            .save()
        )

    elapsed, cpu = measure(jvm_pid, job)
    log(f"(a) {reader}: {rows / elapsed:,.0f} rows/s ({elapsed:.2f} s, CPU {cpu:.2f} s)")
    return {
        "kind": "batch",
        "contender": reader,
        "seconds": elapsed,
        "rows_per_s": rows / elapsed,
        "cpu_us_per_row": cpu / rows * 1e6,
    }


def pipeline(
    spark: Any, name: str, bootstrap: str, topic: str, rows: int, jvm_pid: int, workdir: Path
) -> dict[str, Any]:
    source, _, sink = name.partition("->")
    out = create_topic(bootstrap, "bench-out")
    checkpoint = workdir / f"ckpt-{uuid.uuid4().hex[:8]}"

    progress: list[dict[str, Any]] = []

    def job() -> None:
        df = spark.readStream.format(source).options(**source_options(source, bootstrap, topic)).load()
        upper = df.selectExpr("key", "upper(CAST(value AS STRING)) AS value")
        if sink == "txnkafka":
            writer = (
                upper.writeStream.format("txnkafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("kafka.linger.ms", "5")
                .option("topic", out)
            )
        else:
            send = confluent_writer(bootstrap, out)
            writer = upper.writeStream.foreachBatch(lambda batch, _id: batch.foreachPartition(send))
        query = writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"{name}: {query.exception()}")
        progress.extend(p for p in query.recentProgress if p["numInputRows"])

    elapsed, cpu = measure(jvm_pid, job)
    seen = count_committed(bootstrap, out)
    if seen != rows:
        raise RuntimeError(f"{name}: {seen:,} of {rows:,} rows in {out}")
    # the micro-batches alone: what a running stream sustains (the query's start and stop excluded)
    batches_s = sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000
    log(
        f"(b) {name}: {rows / elapsed:,.0f} rows/s ({elapsed:.2f} s, CPU {cpu:.2f} s); micro-batches"
        f" {rows / batches_s:,.0f} rows/s ({batches_s:.2f} s)"
    )
    return {
        "kind": "pipeline",
        "contender": name,
        "seconds": elapsed,
        "rows_per_s": rows / elapsed,
        "cpu_us_per_row": cpu / rows * 1e6,
        "batches_s": batches_s,
        "batch_rows_per_s": rows / batches_s,
    }


def medians(runs: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, dict[str, float]]:
    keys = ("rows_per_s", "cpu_us_per_row", "batch_rows_per_s")
    return {
        n: {
            k: statistics.median(r[k] for r in runs if r["contender"] == n)
            for k in keys
            if all(k in r for r in runs)
        }
        for n in names
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap")
    parser.add_argument("--kafka-home", default=os.environ.get("KAFKA_HOME"))
    parser.add_argument("--jars", required=True, help="a directory holding Spark's Kafka connector jars")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup-rounds", type=int, default=1)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--only", choices=("batch", "pipeline"))
    parser.add_argument("--out-dir", default=str(HERE / "results"))
    args = parser.parse_args(argv)
    if not (args.bootstrap or args.kafka_home):
        parser.error("give --bootstrap or --kafka-home (or set KAFKA_HOME)")
    jars = sorted(str(p) for p in Path(args.jars).glob("*.jar"))
    if not jars:
        parser.error(f"no jar in {args.jars}")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import pyspark
    from pyspark.sql import SparkSession

    from txnproducer.spark import register

    workdir = Path(tempfile.mkdtemp(prefix="txnkafka-source-bench-"))
    runs: list[dict[str, Any]] = []
    try:
        with kafka(args) as bootstrap:
            topic = create_topic(bootstrap, "bench-in")
            fill(bootstrap, topic, args.rows)
            spark = (
                SparkSession.builder.master(args.master)
                .appName("txnkafka-source-bench")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.memory", "2g")
                .config("spark.jars", ",".join(jars))
                .getOrCreate()
            )
            spark.sparkContext.setLogLevel("ERROR")
            register(spark)
            jvm_pid = spark.sparkContext._gateway.proc.pid
            for reader in READERS:  # both read every committed record, once
                count = (
                    spark.read.format(reader)
                    .options(**source_options(reader, bootstrap, topic))
                    .load()
                    .count()
                )
                if count != args.rows:
                    raise RuntimeError(f"{reader} read {count:,} of {args.rows:,} rows")
            for round_no in range(args.warmup_rounds + args.rounds):
                step = 1 if round_no % 2 == 0 else -1
                if args.only != "pipeline":
                    for reader in READERS[::step]:
                        runs.append(
                            batch_read(spark, reader, bootstrap, topic, args.rows, jvm_pid)
                            | {"warmup": round_no < args.warmup_rounds}
                        )
                if args.only != "batch":
                    for name in PIPELINES[::step]:
                        runs.append(
                            pipeline(spark, name, bootstrap, topic, args.rows, jvm_pid, workdir)
                            | {"warmup": round_no < args.warmup_rounds}
                        )
            spark.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    timed = [r for r in runs if not r["warmup"]]
    summary: dict[str, Any] = {
        "runs": runs,
        "rows": args.rows,
        "master": args.master,
        "pyspark": pyspark.__version__,
        "jars": [Path(j).name for j in jars],
        "machine": f"{os.cpu_count()} CPUs, {platform.platform()}",
        "python": platform.python_version(),
        "broker": args.bootstrap or f"Kafka from {args.kafka_home}",
    }
    print(
        f"PySpark {pyspark.__version__}, {args.master}, {args.rows:,} rows; medians of {args.rounds} rounds"
    )
    print("| measurement | contender | rows/s | CPU us/row | rows/s of the micro-batches |")
    print("|---|---|---|---|---|")
    for kind, names in (("batch", READERS), ("pipeline", PIPELINES)):
        found = [r for r in timed if r["kind"] == kind]
        if not found:
            continue
        table = medians(found, names)
        summary[kind] = table
        for n in names:
            steady = table[n].get("batch_rows_per_s")
            print(
                f"| {kind} | {n} | {table[n]['rows_per_s']:,.0f} | {table[n]['cpu_us_per_row']:.2f} |"
                f" {'' if steady is None else f'{steady:,.0f}'} |"
            )
        first, second = names[0], names[1]
        for key in ("rows_per_s", "batch_rows_per_s"):
            if key in table[first]:
                ratio = table[first][key] / table[second][key]
                summary[f"{kind}_ratio_{key}"] = ratio
                print(f"{kind}: {first} / {second} = {ratio:.2f}x {key}")
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "spark_source.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
