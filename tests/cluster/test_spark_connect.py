"""The txnkafka sink through Spark Connect: the cluster scenario with a Connect client.

The application (tests/spark/spark_app.py ``--remote``) registers the data sources on a Connect
session and starts the same paced streaming query as tests/cluster/test_spark_cluster.py; the
Connect server (pyspark's ``sbin/start-connect-server.sh``) is the driver, on the same standalone
cluster, so the sink's decisions run in the server's Python workers and its tasks on the
executors. The driver crash after the commit point kills the server; a new server and a new
client resume from the checkpoint. Beside it, through Connect too, the Kafka -> Spark -> Kafka
pipeline: the ``txnkafka`` source reading the paced query's output, the sink writing it again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("grpc", reason="a Spark Connect client needs pip install 'txnproducer[spark-connect]'")

from tests._support.spark_cluster_scenario import StreamScenario, check_outcome, run_stream_scenario
from tests._support.spark_connect import ConnectDriver
from tests._support.spark_standalone import StandaloneCluster
from txnproducer.testing import MockCluster

pytestmark = [pytest.mark.spark_cluster, pytest.mark.timeout(1800)]

APP = Path(__file__).resolve().parents[1] / "spark" / "spark_app.py"


def test_stream_through_spark_connect_is_exactly_once(standalone: StandaloneCluster, tmp_path: Path) -> None:
    with MockCluster(num_brokers=3, transaction_version=2) as kafka:
        for topic in ("out", "batch-out", "piped"):
            kafka.create_topic(topic, partitions=2)
        bootstrap = kafka.bootstrap_servers
        starts: list[ConnectDriver] = []

        def start_driver(args: list[str], crash_at: str | None) -> ConnectDriver:
            driver = ConnectDriver(APP, bootstrap, args, crash_at, master=standalone.master_url,
                                   workdir=tmp_path / f"driver-{len(starts)}",
                                   task_faults=scenario.task_faults)
            starts.append(driver)
            return driver

        scenario = StreamScenario(bootstrap, "out", "batch-out", tmp_path, start_driver, pipe_topic="piped")
        report = run_stream_scenario(scenario)

        check_outcome(scenario, report)
