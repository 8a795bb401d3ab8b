"""The real-broker chaos tier: a 3-node KRaft cluster, brokers killed -9, restarted, frozen and thawed,
producer processes killed -9; then the CI chaos tier's checker finds 0 of every anomaly.

Marked ``broker`` and ``slow`` (about 8 minutes with the default 300 s of faults: the cluster starts, the
workload runs, the cluster heals and the pipeline drains); skipped with a one-line reason without
``KAFKA_HOME``. ``KAFKA_HOME=/path/to/kafka .venv/bin/pytest tests/chaos/test_broker_chaos.py -s`` prints
the counts (transactions, faults per kind and target, kill-to-fence times, anomalies, errors seen);
``BROKER_CHAOS_SECONDS``, ``BROKER_CHAOS_SEED``, ... (``broker_run.BrokerChaosSettings.from_env``) change
the run, ``KAFKA_TRANSACTION_VERSION=1`` formats the cluster with Transaction Version 1. A failure prints
the seed, the counts with examples, the faults and when they were made; the cluster's logs, the producers'
journals and output stay in the temporary directory it names (``BROKER_CHAOS_KEEP=1`` keeps them after a
pass too).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._support.kafka_cluster import KafkaCluster, kafka_home_or_skip_reason
from tests.chaos.broker_run import BrokerChaosSettings, run_broker_chaos

HOME, WHY_NOT = kafka_home_or_skip_reason()
SETTINGS = BrokerChaosSettings.from_env()

pytestmark = [pytest.mark.broker, pytest.mark.slow,
              pytest.mark.skipif(HOME is None, reason=WHY_NOT)]


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[KafkaCluster]:
    """The cluster; its directory (logs, journals) is kept when a test of the module failed (or with
    BROKER_CHAOS_KEEP=1)."""
    assert HOME is not None
    workdir = Path(tempfile.mkdtemp(prefix="txnproducer-chaos-cluster-"))
    cluster = KafkaCluster(HOME, workdir, settings=SETTINGS.cluster_settings)
    failed_before = request.session.testsfailed
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        if request.session.testsfailed == failed_before and not os.environ.get("BROKER_CHAOS_KEEP"):
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.timeout(SETTINGS.seconds + 1200)
def test_three_node_cluster_under_kills_and_freezes_has_no_anomaly(cluster: KafkaCluster) -> None:
    workdir = cluster.workdir / "producers"
    workdir.mkdir()
    result = run_broker_chaos(SETTINGS, cluster, workdir)
    print(result.summary())
    if not result.ok:
        pytest.fail(f"{result.failure_text()}\ncluster logs and journals: {cluster.workdir}", pytrace=False)
    # the run made every kind of fault it was asked for, and the workload got through them
    for kind in SETTINGS.kinds:
        assert result.fault_counts[kind] >= 1, result.summary()
    assert result.ledger.counts()["committed"] > 0
