"""The Spark application the sink tests run in a subprocess (local, standalone cluster or Connect).

A subprocess because the scenarios kill the driver: the test starts this script as a session
leader, the sink's fault hook (``txnproducer.spark.sink._faults``) SIGKILLs the whole session at the
requested point, and the test starts it again from the same checkpoint. Kafka (a MockCluster or a
real broker) lives outside it, and so does, on a cluster, every executor.

    python spark_app.py --bootstrap H:P --topic T --checkpoint DIR
        [--master URL | --remote sc://H:P]                 # default local[2,4]
        [--batch-topic T2 --rows N]                        # a batch write of N rows first
        [--input DIR [--fail-value V]]                     # a file stream, availableNow
        [--control FILE --rows-per-batch R]                # a counter stream the test paces
        [--task-faults fail@B:P,kill@B:P]                  # (on a cluster) see _faults.task_fault
        [--pipe-topic T3 --pipe-checkpoint DIR2]           # beside the counter stream: T -> T3

The counter stream (``CounterSource``) needs no file shared with the executors: its rows are
computed from the offsets, ``value`` = ``%010d`` of batch * R + i, and Spark partition p of a batch
writes to Kafka partition p. Its latest offset is the batch number the test wrote into the control
file on the driver's disk, at most one batch ahead per micro-batch; "stop" ends the query.
``--task-faults`` goes to the executors' environment (``TXNKAFKA_SPARK_TASK_FAULT``): the first
attempt of those tasks fails, or SIGKILLs its executor, once its first rows are in Kafka.

``--pipe-topic``: a second streaming query beside the counter stream, the Kafka -> Spark -> Kafka
pipeline - ``readStream.format("txnkafka")`` of the counter stream's output topic (transactions, the
failed attempts' aborted) -> ``value`` prefixed with ``piped-`` -> ``writeStream.format("txnkafka")``
to the pipe topic - across the same task faults, executor kill and driver kill. At "stop" it is
stopped too and started again on its checkpoint with ``availableNow``, to read what is left.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

COUNTER_PARTITIONS = 2


def _allowed(control: str) -> int | None:
    """The batch number the test allows (None: stop)."""
    with open(control) as f:
        text = f.read().strip()
    return None if text == "stop" else int(text or 0)


class CounterReader(DataSourceStreamReader):
    def __init__(self, options: Any) -> None:  # a case-insensitive mapping
        self.control = options["control"]
        self.rows = int(options["rowsPerBatch"])

    def initialOffset(self) -> dict[str, int]:
        return {"batch": 0}

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        allowed = _allowed(self.control)
        current = 0 if start is None else int(start["batch"])
        return {"batch": current if allowed is None else max(current, min(allowed, current + 1))}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [InputPartition((b, p)) for b in range(int(start["batch"]), int(end["batch"]))
                for p in range(COUNTER_PARTITIONS)]

    def read(self, partition: InputPartition) -> Iterator[tuple[str, int]]:
        batch, part = partition.value
        for i in range(part, self.rows, COUNTER_PARTITIONS):
            yield f"{batch * self.rows + i:010d}", part

    def commit(self, end: dict[str, int]) -> None:
        pass


class CounterSource(DataSource):
    """Rows computed from offsets; see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return "txnkafka_test_counter"

    def schema(self) -> str:
        return "value string, partition int"

    def streamReader(self, schema: Any) -> CounterReader:
        return CounterReader(self.options)


def _session(args: argparse.Namespace) -> Any:
    from pyspark.sql import SparkSession

    if args.remote:  # Spark Connect: executor settings (and --task-faults) belong to the server
        return (SparkSession.builder.remote(args.remote)
                .config("spark.sql.execution.arrow.maxRecordsPerBatch", "25").getOrCreate())
    builder = (SparkSession.builder.master(args.master).appName("txnkafka-test")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               # several Arrow batches per task, so a fault can strike between them
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "25"))
    if args.task_faults:
        builder = builder.config("spark.executorEnv.TXNKAFKA_SPARK_TASK_FAULT", args.task_faults)
    if args.master.startswith("spark://"):
        builder = (builder.config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
                   .config("spark.cores.max", "2").config("spark.task.maxFailures", "4")
                   .config("spark.driver.host", "127.0.0.1")
                   # an executor's JVM temp files go to its own (private) working directory
                   .config("spark.executor.extraJavaOptions", "-Djava.io.tmpdir=."))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--master", default="local[2,4]")  # 2 threads, a task may fail 3 times
    parser.add_argument("--remote")
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--batch-topic")
    parser.add_argument("--input")
    parser.add_argument("--fail-value")
    parser.add_argument("--control")
    parser.add_argument("--rows-per-batch", type=int, default=100)
    parser.add_argument("--task-faults", default="")
    parser.add_argument("--pipe-topic")
    parser.add_argument("--pipe-checkpoint")
    args = parser.parse_args()
    if os.getsid(0) == os.getpid():  # only a session leader may be crashed by the fault hook
        os.environ["TXNKAFKA_SPARK_CRASH_SESSION"] = str(os.getpid())

    from pyspark.sql.functions import udf

    from txnproducer.spark import register

    spark = _session(args)
    register(spark)
    spark.dataSource.register(CounterSource)
    # prepared transactions must outlive a driver restart on a busy test machine (docs/guide/spark.md, the
    # timeout rule); nothing in the tests waits for a timeout to end a transaction
    options = {"kafka.bootstrap.servers": args.bootstrap, "kafka.linger.ms": "5", "topic": args.topic,
               "kafka.transaction.timeout.ms": "600000"}
    if args.batch_topic:
        df = spark.range(args.rows, numPartitions=2).selectExpr("CAST(id AS STRING) AS value")
        df.write.format("txnkafka").options(**options).option("topic", args.batch_topic).mode("append").save()
    if args.input:
        fail_value = args.fail_value

        def fail_first_attempt(value: str) -> str:
            from pyspark import TaskContext

            ctx = TaskContext.get()
            if value == fail_value and ctx is not None and ctx.attemptNumber() == 0:
                raise RuntimeError("injected failure of the task's first attempt")
            return value

        check = udf(fail_first_attempt, "string")
        lines = (spark.readStream.schema("value string").format("text")
                 .option("maxFilesPerTrigger", 1).load(args.input))
        # the check runs in the writing task and fails it (whether the sink has sent rows by then
        # is up to Spark's buffering; --task-faults strike mid-transaction by construction)
        query = (lines.repartition(2).select(check("value").alias("value"))
                 .writeStream.format("txnkafka").options(**options)
                 .option("checkpointLocation", args.checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination(300)
        if query.exception() is not None:
            raise SystemExit(f"query failed: {query.exception()}")
    if args.control:
        def counter() -> Any:
            stream = (spark.readStream.format("txnkafka_test_counter")
                      .option("control", args.control).option("rowsPerBatch", args.rows_per_batch).load())
            return (stream.writeStream.format("txnkafka").options(**options)
                    .option("checkpointLocation", args.checkpoint).start())

        def pipe() -> Any:
            return _pipe(spark, args, options, available_now=False)

        starts = [counter] + ([pipe] if args.pipe_topic else [])
        queries = [start() for start in starts]
        restarts = 0
        # The test writes "stop" to the control file once it saw the last batch; between two looks
        # the driver waits on the queries themselves, so a query that fails ends the wait at once.
        while _allowed(args.control) is not None:
            for i, running in enumerate(queries):
                try:
                    ended = running.awaitTermination(0.2)
                except Exception as exc:  # StreamingQueryException: the query failed
                    restarts = _count_restart(exc, restarts)
                    queries[i] = starts[i]()  # on its checkpoint, as a supervisor would
                    continue
                if ended:
                    raise SystemExit(f"query ended before the test stopped it: {running.exception()}")
        for running in queries:
            running.stop()
        if args.pipe_topic:  # started again on its checkpoint: what is left, then it ends
            while True:
                drain = _pipe(spark, args, options, available_now=True)
                try:
                    drain.awaitTermination(300)
                    break
                except Exception as exc:
                    restarts = _count_restart(exc, restarts)
    spark.stop()


#: Spark gives a Python planner worker (the one that creates a Python data source or plans its reads on
#: the driver) 10 s to start and connect back - ``PythonWorkerFactory.createSimpleWorker``, not a setting.
#: The whole suite beside a Spark cluster on two CPUs can exceed that while a query starts, and the
#: query fails with this message before it reads anything. The driver then starts that query again on
#: its checkpoint, as a supervisor restarts a failed query (saying so on stderr); any other failure, or
#: more than ``_MAX_RESTARTS`` of these, ends the driver.
_WORKER_START_TIMEOUT = "Python worker failed to connect back"
_MAX_RESTARTS = 3


def _count_restart(exc: BaseException, restarts: int) -> int:
    """The restarts so far plus this one, or SystemExit when the failure is not Spark's worker start."""
    if _WORKER_START_TIMEOUT not in str(exc) or restarts >= _MAX_RESTARTS:
        raise SystemExit(f"query failed: {exc}") from exc
    print(f"spark_app: a query failed to start a Python worker in Spark's 10 s; started again on its"
          f" checkpoint ({restarts + 1} of at most {_MAX_RESTARTS})", file=sys.stderr, flush=True)
    return restarts + 1


def _pipe(spark: Any, args: argparse.Namespace, options: dict[str, str], available_now: bool) -> Any:
    """The Kafka -> Spark -> Kafka query (module docstring), on its own checkpoint."""
    piped = (spark.readStream.format("txnkafka").option("kafka.bootstrap.servers", args.bootstrap)
             .option("subscribe", args.topic).option("startingOffsets", "earliest").load()
             .selectExpr("key", "concat('piped-', CAST(value AS STRING)) AS value")
             .writeStream.format("txnkafka").options(**options).option("topic", args.pipe_topic)
             .option("checkpointLocation", args.pipe_checkpoint))
    trigger = {"availableNow": True} if available_now else {"processingTime": "5 seconds"}
    return piped.trigger(**trigger).start()


if __name__ == "__main__":
    main()
