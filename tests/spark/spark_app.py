"""The Spark application the sink tests run in a subprocess.

A subprocess because the streaming scenarios kill the driver: the test starts this script as a
session leader, the sink's fault hook (``txnproducer.spark._faults``) SIGKILLs the whole session
at the requested point, and the test starts it again from the same checkpoint. The MockCluster
lives in the test process, so it survives.

    python spark_app.py --bootstrap H:P --topic T --commit-log DIR
        [--batch-topic T2 --rows N]                       # a batch write of N rows first
        [--checkpoint DIR --input DIR [--fail-value V]]   # then a streaming query over text files
"""

from __future__ import annotations

import argparse
import os


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--commit-log", required=True)
    parser.add_argument("--checkpoint")
    parser.add_argument("--input")
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--batch-topic")
    parser.add_argument("--fail-value")
    args = parser.parse_args()
    if os.getsid(0) == os.getpid():  # only a session leader may be crashed by the fault hook
        os.environ["TXNKAFKA_SPARK_CRASH_SESSION"] = str(os.getpid())

    from pyspark import TaskContext
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf

    from txnproducer.spark import register

    spark = (
        SparkSession.builder.master("local[2,4]")  # 2 threads, a task may fail 3 times
        .appName("txnkafka-test")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    options = {
        "kafka.bootstrap.servers": args.bootstrap,
        "kafka.linger.ms": "20",
        "kafka.batch.size": "65536",
        "topic": args.topic,
        "commit.log": args.commit_log,
    }
    if args.batch_topic:
        df = spark.range(args.rows, numPartitions=2).selectExpr("CAST(id AS STRING) AS value")
        (df.write.format("txnkafka").options(**options).option("topic", args.batch_topic)
         .option("commit.log", args.commit_log + "-batch").mode("append").save())
    if args.input:
        fail_value = args.fail_value

        def fail_first_attempt(value: str) -> str:
            ctx = TaskContext.get()
            if value == fail_value and ctx is not None and ctx.attemptNumber() == 0:
                raise RuntimeError("injected failure of the task's first attempt")
            return value

        check = udf(fail_first_attempt, "string")
        lines = (spark.readStream.schema("value string").format("text")
                 .option("maxFilesPerTrigger", 1).load(args.input))
        # the check runs in the writing task: a failure hits the sink mid-transaction
        query = (lines.repartition(2).select(check("value").alias("value"))
                 .writeStream.format("txnkafka").options(**options)
                 .option("checkpointLocation", args.checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination(300)
        if query.exception() is not None:
            raise SystemExit(f"query failed: {query.exception()}")
    spark.stop()


if __name__ == "__main__":
    main()
