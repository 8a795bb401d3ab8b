"""The txnkafka sink on a Spark standalone cluster, against MockCluster: no shared file system.

A master and two workers from pyspark's ``spark-class``, each worker with private directories
(tests/_support/spark_standalone.py); the driver is a subprocess (tests/spark/spark_app.py) whose
checkpoint no executor can see; Kafka is a MockCluster in this process, reached on 127.0.0.1. The
scenario and its checks (exactly once, last stable offset = high watermark within 10 s of every
committed micro-batch, transactional ids within the pool over 22 micro-batches, a task failing on
its first attempt, an executor SIGKILLed mid-write, the driver SIGKILLed after the commit point and
restarted) are tests/_support/spark_cluster_scenario.py. Beside the paced query the driver runs the
Kafka -> Spark -> Kafka pipeline (the ``txnkafka`` source reading that query's output, the sink
writing it again) through the same faults: the source's cluster scenario, sharing this cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._support.spark_cluster_scenario import StreamScenario, check_outcome, run_stream_scenario
from tests._support.spark_runner import SparkApp
from tests._support.spark_standalone import StandaloneCluster
from txnproducer.testing import MockCluster

pytestmark = [pytest.mark.spark_cluster, pytest.mark.slow, pytest.mark.timeout(1500)]

APP = Path(__file__).resolve().parents[1] / "spark" / "spark_app.py"


def executor_logs(standalone: StandaloneCluster) -> str:
    return "\n".join(p.read_text(errors="replace") for d in standalone.executor_dirs()
                     for p in (d / "stderr",) if p.exists())


def test_stream_and_batch_on_a_standalone_cluster_are_exactly_once(
        standalone: StandaloneCluster, tmp_path: Path) -> None:
    with MockCluster(num_brokers=3, transaction_version=2) as kafka:
        for topic in ("out", "batch-out", "piped"):
            kafka.create_topic(topic, partitions=2)
        bootstrap = kafka.bootstrap_servers

        def start_driver(args: list[str], crash_at: str | None) -> SparkApp:
            log = tmp_path / f"driver-{len(list(tmp_path.glob('driver-*.log')))}.log"
            return SparkApp(APP, bootstrap, "--master", standalone.master_url, *args, crash_at=crash_at,
                            log=log)

        scenario = StreamScenario(bootstrap, "out", "batch-out", tmp_path, start_driver, pipe_topic="piped")
        report = run_stream_scenario(scenario)

        check_outcome(scenario, report)
        # the executors ran in the workers' private directories, and a replacement executor was
        # launched for the one killed
        executors = standalone.executor_dirs()
        assert len(executors) >= 3 and all(str(tmp_path) not in str(d) for d in executors)
        assert "txn.spark_attempt_superseded" in executor_logs(standalone)  # the replay after the crash
