"""``spark.read`` / ``spark.readStream.format("txnkafka")`` against MockCluster, in one local[2]
SparkSession shared by the module (a JVM start is the expensive part; each read here is a second or
two): reads equal confluent-kafka's read_committed read record for record, ranges of one offset each
(markers only, aborted records only), every bad input a clear error before anything is written,
and streams - a restart from the checkpoint, new partitions, maxOffsetsPerTrigger, a deleted topic.

The standalone-cluster scenario (executors killed, the driver restarted, the sink downstream) is
tests/cluster; the same checks against a real Kafka are tests/broker/test_spark_source_broker.py.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (the [spark] extra)")
if shutil.which("java") is None:
    pytest.skip("no java on PATH (PySpark needs a JVM)", allow_module_level=True)

from tests._support import readers
from tests._support.examples import load_example
from tests._support.source_input import (
    LAYOUT,
    Record,
    confluent_read_committed,
    write_interleaved,
    write_layout,
)
from tests._support.spark_session import local_session
from txnproducer.admin.cli import spark_main
from txnproducer.spark.source.stream import ADMISSION_CONTROL
from txnproducer.testing import MockCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def kafka() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=2) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    with local_session("txnkafka-source-test") as session:
        yield session


def options(kafka: MockCluster, **more: str) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": kafka.bootstrap_servers,
        "kafka.default.api.timeout.ms": "20000",
        **more,
    }


def records(df: Any) -> list[Record]:
    rows = df.selectExpr(
        "partition", "offset", "key", "value", "headers", "unix_millis(timestamp) AS ts"
    ).collect()
    return sorted(
        Record(
            r.partition, r.offset, r.key, r.value, tuple((h.key, h.value) for h in (r.headers or ())), r.ts
        )
        for r in rows
    )


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_a_batch_read_equals_confluent_kafkas_read_committed_read(
    spark: Any, kafka: MockCluster, codec: str
) -> None:
    topic = f"interleaved-{codec}"
    kafka.create_topic(topic, 3)
    write_interleaved(kafka.bootstrap_servers, topic, 3, codec)
    expected = confluent_read_committed(kafka.bootstrap_servers, topic, 3)
    df = (
        spark.read.format("txnkafka").options(**options(kafka, subscribe=topic, includeHeaders="true")).load()
    )
    got = records(df)
    assert got == expected, "offset, key, value, headers and timestamp of every committed record, once"
    assert (
        any(r.key is None for r in got) and any(r.value is None for r in got) and any(r.headers for r in got)
    )
    if codec == "none":
        assert df.columns == [
            "key",
            "value",
            "topic",
            "partition",
            "offset",
            "timestamp",
            "timestampType",
            "headers",
        ]
        assert {r.topic for r in df.select("topic").distinct().collect()} == {topic}


def test_ranges_of_one_offset_each_read_markers_and_aborts_as_nothing(spark: Any, kafka: MockCluster) -> None:
    kafka.create_topic("layout", 1)
    write_layout(kafka.bootstrap_servers, "layout")
    one_each = (
        spark.read.format("txnkafka")
        .options(**options(kafka, subscribe="layout", maxRecordsPerPartition="1"))
        .load()
    )
    assert one_each.rdd.getNumPartitions() == LAYOUT["end"], "a task per offset: markers and aborts alone"
    assert sorted(r.offset for r in one_each.select("offset").collect()) == LAYOUT["committed"]
    inside_abort = (
        spark.read.format("txnkafka")
        .options(
            **options(
                kafka,
                subscribe="layout",
                startingOffsets='{"layout":{"0":5}}',
                endingOffsets='{"layout":{"0":9}}',
            )
        )
        .load()
    )
    assert [r.value for r in inside_abort.select("value").collect()] == [b"c7"]


def bad_reads(kafka: MockCluster, port: int) -> list[tuple[dict[str, str], str]]:
    base = options(kafka)
    return [
        ({**base}, "exactly one of the options subscribe, subscribePattern, assign; got none"),
        ({**base, "subscribe": "in", "assign": '{"in":[0]}'}, "got subscribe and assign"),
        ({**base, "subscribe": "in", "startingOffsets": '{"in":{"0":}'}, "startingOffsets is not JSON"),
        ({**base, "subscribe": "in", "startingOfsets": "earliest"}, "did you mean startingOffsets?"),
        ({**base, "subscribe": "no-such-topic"}, "topic(s) no-such-topic of option subscribe do not exist"),
        (
            {
                "kafka.bootstrap.servers": f"127.0.0.1:{port}",
                "kafka.default.api.timeout.ms": "1500",
                "subscribe": "in",
            },
            f"the cluster at ['127.0.0.1:{port}'] did not answer",
        ),
    ]


def test_bad_input_fails_the_query_with_its_message_and_writes_nothing(
    spark: Any, kafka: MockCluster
) -> None:
    import socket

    kafka.create_topic("in", 1)
    kafka.create_topic("never-written", 1)
    write_layout(kafka.bootstrap_servers, "in")
    with socket.socket() as held:  # a port nobody answers on
        held.bind(("127.0.0.1", 0))
        for read_options, message in bad_reads(kafka, held.getsockname()[1]):
            df = spark.read.format("txnkafka").options(**read_options).load()
            with pytest.raises(Exception) as caught:
                (
                    df.select("value")
                    .write.format("txnkafka")
                    .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
                    .option("topic", "never-written")
                    .mode("append")
                    .save()
                )
            assert message in str(caught.value), (message, str(caught.value)[-2000:])
    assert readers.read_values(kafka.bootstrap_servers, "never-written", 1) == []
    custom = spark.read.format("txnkafka").schema("value string").options(**options(kafka, subscribe="in"))
    with pytest.raises(Exception, match="txnkafka has a fixed schema"):
        custom.load().collect()


def test_a_topic_without_read_permission_fails_the_task_naming_it(spark: Any, kafka: MockCluster) -> None:
    kafka.create_topic("never-written-acl", 1)
    users = {"alice": "alice-pw", "admin": "admin-pw"}
    acls = [("User:alice", "topic", "guarded", "Describe")]
    with MockCluster(
        num_brokers=1, sasl_mechanisms=["PLAIN"], users=users, acls=acls, super_users=["User:admin"]
    ) as secured:
        secured.create_topic("guarded", 1)
        security = {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN"}
        from txnproducer import TransactionalProducer

        with TransactionalProducer(
            bootstrap_servers=secured.bootstrap_servers,
            transactional_id="guard-w",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="admin",
            sasl_plain_password="admin-pw",
        ) as p:
            p.init_transactions()
            with p.transaction():
                p.send("guarded", b"x", partition=0)
        df = (
            spark.read.format("txnkafka")
            .options(
                **{
                    **options(secured, subscribe="guarded"),
                    **security,
                    "kafka.sasl.plain.username": "alice",
                    "kafka.sasl.plain.password": "alice-pw",
                }
            )
            .load()
        )
        with pytest.raises(Exception) as caught:  # downstream: the sink, on the module's cluster
            (
                df.select("value")
                .write.format("txnkafka")
                .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
                .option("topic", "never-written-acl")
                .mode("append")
                .save()
            )
    assert "not authorized to read topic 'guarded'" in str(caught.value)
    assert "alice-pw" not in str(caught.value)
    assert readers.read_values(kafka.bootstrap_servers, "never-written-acl", 1) == []
    assert readers.end_offsets(kafka.bootstrap_servers, "never-written-acl", 1) == {0: 0}, "not even aborted"


def run_stream(spark: Any, kafka: MockCluster, source: dict[str, str], checkpoint: Path, out: str) -> Any:
    """``readStream`` -> upper-case -> ``writeStream`` txnkafka, until the available input is read."""
    df = spark.readStream.format("txnkafka").options(**options(kafka, **source)).load()
    query = (
        df.selectExpr("key", "upper(CAST(value AS STRING)) AS value")
        .writeStream.format("txnkafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("topic", out)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    with contextlib.suppress(Exception):  # a failed query raises: query.exception() says why
        query.awaitTermination(300)
    return query


def checkpoint_offsets(checkpoint: Path) -> list[dict[str, Any]]:
    """The source's offsets of each micro-batch, from Spark's offset log."""
    log = checkpoint / "offsets"
    batches = sorted(int(p.name) for p in log.iterdir() if p.name.isdigit())
    return [json.loads((log / str(b)).read_text().splitlines()[-1]) for b in batches]


def test_a_stream_restarted_from_its_checkpoint_is_exactly_once(
    spark: Any, kafka: MockCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kafka.create_topic("stream-in", 2)
    kafka.create_topic("stream-out", 2)
    write_interleaved(kafka.bootstrap_servers, "stream-in", 2, rounds=2)
    source = {"subscribe": "stream-in", "startingOffsets": "earliest"}
    first = run_stream(spark, kafka, source, tmp_path / "ckpt", "stream-out")
    assert first.exception() is None
    kafka.add_partitions("stream-in", 3)  # read from its first offset by the restarted query
    write_interleaved(kafka.bootstrap_servers, "stream-in", 3, rounds=2)
    second = run_stream(spark, kafka, source, tmp_path / "ckpt", "stream-out")
    assert second.exception() is None
    committed = confluent_read_committed(kafka.bootstrap_servers, "stream-in", 3)
    expected = sorted((r.value or b"").upper() for r in committed if r.value is not None)
    got = readers.read_values(kafka.bootstrap_servers, "stream-out", 2)
    assert sorted(v for v in got if v is not None) == expected, "every committed input once, nothing aborted"
    last = checkpoint_offsets(tmp_path / "ckpt")[-1]
    ends = readers.end_offsets(kafka.bootstrap_servers, "stream-in", 3, "read_committed")
    assert last == {"stream-in": {str(p): ends[p] for p in range(3)}}, (
        "Spark's Kafka source JSON, at the LSOs"
    )
    # txnproducer spark status on the query's checkpoint: the input caught up, the sink's batch done
    argv = ["status", "--bootstrap-server", kafka.bootstrap_servers]
    argv += ["--checkpoint-dir", str(tmp_path / "ckpt")]
    code = spark_main([*argv, "--json"])
    found = json.loads(capsys.readouterr().out)
    assert code == 0 and found["source"]["verdict"].startswith("caught up"), found["source"]
    assert found["sink"]["verdict"].startswith("idle: batch"), found["sink"]


@pytest.mark.skipif(not ADMISSION_CONTROL, reason="maxOffsetsPerTrigger needs PySpark 4.2+")
def test_max_offsets_per_trigger_spreads_the_backlog_over_micro_batches(
    spark: Any, kafka: MockCluster, tmp_path: Path
) -> None:
    kafka.create_topic("limited", 1)
    kafka.create_topic("limited-out", 1)
    write_layout(kafka.bootstrap_servers, "limited")
    query = run_stream(
        spark,
        kafka,
        {"subscribe": "limited", "startingOffsets": "earliest", "maxOffsetsPerTrigger": "4"},
        tmp_path / "ckpt",
        "limited-out",
    )
    assert query.exception() is None
    ends = [batch["limited"]["0"] for batch in checkpoint_offsets(tmp_path / "ckpt")]
    assert ends == [4, 8, 12, 13], "at most 4 offsets a micro-batch, markers counted"
    assert sorted(readers.read_values(kafka.bootstrap_servers, "limited-out", 1)) == sorted(
        b"C%d" % o for o in LAYOUT["committed"]
    )


@pytest.mark.skipif(ADMISSION_CONTROL, reason="PySpark 4.2+ has admission control")
def test_without_admission_control_the_trigger_limits_are_refused_naming_the_version(
    spark: Any, kafka: MockCluster, tmp_path: Path
) -> None:
    kafka.create_topic("unlimited", 1)
    query = run_stream(
        spark, kafka, {"subscribe": "unlimited", "maxOffsetsPerTrigger": "4"}, tmp_path / "ckpt", "unlimited"
    )
    assert "need PySpark 4.2+" in str(query.exception()), "PySpark 4.1 calls latestOffset() without a limit"


def test_a_deleted_topic_fails_the_stream_naming_it(spark: Any, kafka: MockCluster, tmp_path: Path) -> None:
    kafka.create_topic("doomed", 1)
    kafka.create_topic("doomed-out", 1)
    write_layout(kafka.bootstrap_servers, "doomed")
    source = {"subscribePattern": "doomed", "startingOffsets": "earliest"}
    assert run_stream(spark, kafka, source, tmp_path / "ckpt", "doomed-out").exception() is None
    kafka.delete_topic("doomed")
    failed = run_stream(spark, kafka, source, tmp_path / "ckpt", "doomed-out")
    assert "partition(s) doomed-0 no longer exist" in str(failed.exception())
    lenient = run_stream(spark, kafka, {**source, "failOnDataLoss": "false"}, tmp_path / "ckpt", "doomed-out")
    assert lenient.exception() is None


def test_the_pipeline_example_is_exactly_once(spark: Any, kafka: MockCluster, tmp_path: Path) -> None:
    """examples/spark_kafka_pipeline.py, in this module's session and cluster."""
    example = load_example("spark_kafka_pipeline")
    for topic in (example.ORDERS, example.UPPER):
        kafka.create_topic(topic, 3)
    committed, written = example.run_example(spark, kafka.bootstrap_servers, str(tmp_path))
    assert committed == written == 300, "450 orders, 150 of them in aborted transactions"


def test_the_sink_example_is_exactly_once(spark: Any, kafka: MockCluster, tmp_path: Path) -> None:
    """examples/spark_exactly_once.py (the sink's: a batch job, then a file stream), in this module's
    session and cluster, with fewer rows."""
    example = load_example("spark_exactly_once")
    for topic in (example.BATCH_TOPIC, example.STREAM_TOPIC):
        kafka.create_topic(topic, 3)
    batch, stream = example.run_example(spark, kafka.bootstrap_servers, str(tmp_path), rows=2_000, lines=200)
    assert (batch, stream) == (2_000, example.FILES * 200)
