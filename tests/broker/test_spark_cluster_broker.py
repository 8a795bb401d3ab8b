"""The txnkafka sink on a Spark standalone cluster against a real Apache Kafka (the broker tier).

The scenario of tests/cluster/test_spark_cluster.py - a batch write, then 22 paced micro-batches
with a task failing on its first attempt mid-write, an executor SIGKILLed mid-write and the driver
SIGKILLed after the commit point and restarted; after every batch exactly once, last stable
offset = high watermark within 10 s, and the query's transactional ids (ListTransactions) within
the pool, and beside it the Kafka -> Spark -> Kafka pipeline through the source - with the session's
real broker instead of MockCluster. Marked ``spark_cluster`` as well as ``broker``: it runs with
``KAFKA_HOME=... pytest -m spark_cluster``.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")
if shutil.which("java") is None:
    pytest.skip("no java on PATH (Spark needs a JVM)", allow_module_level=True)

from kafka.admin import KafkaAdminClient, NewTopic

from tests._support.spark_cluster_scenario import StreamScenario, check_outcome, run_stream_scenario
from tests._support.spark_runner import SparkApp
from tests._support.spark_standalone import StandaloneCluster

pytestmark = [pytest.mark.spark_cluster, pytest.mark.timeout(1500)]

APP = Path(__file__).resolve().parents[1] / "spark" / "spark_app.py"


def test_stream_and_batch_on_a_standalone_cluster_with_a_real_broker_are_exactly_once(
        kafka_bootstrap: str, standalone: StandaloneCluster, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    topic, batch_topic, piped = f"cluster-out-{run}", f"cluster-batch-{run}", f"cluster-piped-{run}"
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=1)
                             for t in (topic, batch_topic, piped)])
    finally:
        admin.close()

    def start_driver(args: list[str], crash_at: str | None) -> SparkApp:
        log = tmp_path / f"driver-{len(list(tmp_path.glob('driver-*.log')))}.log"
        return SparkApp(APP, kafka_bootstrap, "--master", standalone.master_url, *args, crash_at=crash_at,
                        log=log)

    scenario = StreamScenario(kafka_bootstrap, topic, batch_topic, tmp_path, start_driver, pipe_topic=piped)
    report = run_stream_scenario(scenario)

    check_outcome(scenario, report)
