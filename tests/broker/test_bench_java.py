"""The Java reference client of benchmarks/compare.py commits what it reports.

Its numbers sit next to ours in the performance tables, so it must do the same work: every
record it counts committed and readable by a read_committed consumer. Needs a JDK and Kafka's
client jars ($KAFKA_HOME/libs); skips otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from tests._support.benchmark_scripts import load_benchmark


def test_java_reference_client_commits_every_record_it_counts(kafka_bootstrap: str, tmp_path: Path) -> None:
    java = load_benchmark("_java.py")
    try:
        classpath = java.java_classpath(None, os.environ.get("KAFKA_HOME"))
        classes = java.compile_bench(classpath, tmp_path)
    except java.JavaUnavailable as exc:
        pytest.skip(f"no Java reference client here: {exc}")
    topic = f"bench-java-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    finally:
        admin.close()

    cmd = java.java_command(classpath, classes, kafka_bootstrap, topic, 10, 50, 60.0, 100)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    assert (result["client"], result["records"], result["transactions"]) == ("java", 50, 5)
    assert result["commit_latency_ms"]["count"] == 5 and result["commit_latency_ms"]["p50"] > 0
    assert result["peak_rss_mib"] > 0 and result["elapsed_s"] > 0
    compare = load_benchmark("compare.py")
    read = {key for _, key, _, _ in compare.METRICS if not key.startswith("commit_")}
    assert read <= result.keys()  # every number compare.py reads for S1-S3 is there

    consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        partitions = [TopicPartition(topic, p) for p in range(3)]
        consumer.assign(partitions)
        values: list[bytes] = []
        while len(values) < 50:
            batch = consumer.poll(timeout_ms=20_000)
            assert batch, f"only {len(values)} of 50 committed records readable"
            values.extend(r.value for records in batch.values() for r in records)
    finally:
        consumer.close()
    assert len(values) == 50 and len(set(values)) == 1 and len(values[0]) == 100


def test_java_pipeline_client_commits_each_input_once(kafka_bootstrap: str, tmp_path: Path) -> None:
    """S4's Java loop does the work it is timed for: each input upper-cased in the output, once, and the
    count it reports committed."""
    java = load_benchmark("_java.py")
    try:
        classpath = java.java_classpath(None, os.environ.get("KAFKA_HOME"))
        classes = java.compile_bench(classpath, tmp_path)
    except java.JavaUnavailable as exc:
        pytest.skip(f"no Java reference client here: {exc}")
    source, sink = f"bench-java-in-{uuid.uuid4().hex[:8]}", f"bench-java-out-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=1) for t in (source, sink)])
    finally:
        admin.close()
    pipelines = load_benchmark("_pipelines.py")
    assert pipelines.write_input(kafka_bootstrap, source, 2, 3000, 100) == 3000

    cmd = java.pipeline_command(classpath, classes, "ctp", kafka_bootstrap, source, sink, 3000, 60.0, 100, 2,
                                0.0)  # no warm-up: its outputs would be in the sink too
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])
    assert result["client"] == "java" and result["records"] == 3000 and result["transactions"] >= 3
    assert result["cpu_us_per_record"] > 0 and result["commit_latency_ms"]["count"] == result["transactions"]

    consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(sink, p) for p in range(2)])
        values: list[bytes] = []
        while len(values) < 3000:
            batch = consumer.poll(timeout_ms=20_000)
            assert batch, f"only {len(values)} of 3000 outputs readable"
            values.extend(r.value for records in batch.values() for r in records)
    finally:
        consumer.close()
    assert len(values) == 3000 and set(values) == {b"X" * 100}
