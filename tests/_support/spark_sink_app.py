"""Run the ``txnkafka`` test application (tests/spark/spark_app.py) against a MockCluster and
check what a user relies on: every input row visible exactly once to a read_committed reader, and
no transaction left open (last stable offset = high watermark). Shared by the sink's scenario
modules (tests/spark/test_spark_sink.py, test_spark_sink_restart_tv2.py, test_spark_sink_restart_tv1.py;
the real-broker ones in tests/broker/test_spark_broker.py share the application's input and arguments).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests._support.spark_runner import run_spark_app
from txnproducer.spark.sink.decision import Decision
from txnproducer.spark.sink.options import default_prefix
from txnproducer.spark.sink.state_topic import StateTopic
from txnproducer.testing import MockCluster

__all__ = ["APP", "FILES", "LINES", "PARTITIONS", "assert_no_open_transaction", "committed_values",
           "latest_decision", "make_input", "run_app", "stream_args"]

APP = Path(__file__).resolve().parents[1] / "spark" / "spark_app.py"
PARTITIONS = 3
FILES, LINES = 4, 150  # four micro-batches of 150 rows


def run_app(cluster: MockCluster, *args: str,
            crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the Spark application as a session leader; with ``crash_at`` expect it to be killed."""
    return run_spark_app(APP, cluster.bootstrap_servers, *args, crash_at=crash_at)


def committed_values(cluster: MockCluster, topic: str) -> list[bytes]:
    return [r.value for p in range(PARTITIONS)
            for r in cluster.partition_records(topic, p, read_committed=True)]


def assert_no_open_transaction(cluster: MockCluster, topic: str) -> None:
    with cluster.state.lock:
        for p in range(PARTITIONS):
            log = cluster.state.partition_log(topic, p)
            assert log is not None
            assert log.last_stable_offset == log.high_watermark, f"{topic}-{p}: a transaction is open"


def make_input(directory: Path) -> list[bytes]:
    directory.mkdir()
    rows: list[bytes] = []
    for f in range(FILES):
        lines = [f"f{f}-r{i}" for i in range(LINES)]
        path = directory / f"part-{f}.txt"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))  # the file source goes by mtime
        rows += [line.encode() for line in lines]
    return sorted(rows)


def stream_args(tmp: Path, topic: str) -> list[str]:
    return ["--topic", topic, "--checkpoint", str(tmp / "ckpt"), "--input", str(tmp / "in")]


def latest_decision(bootstrap: str, tmp: Path) -> Decision | None:
    """The sink's latest decision for the query checkpointed in ``tmp``."""
    with StateTopic({"bootstrap.servers": bootstrap}, "txnkafka-state", timeout_s=30) as state:
        return state.latest_decision(default_prefix(str(tmp / "ckpt")))
