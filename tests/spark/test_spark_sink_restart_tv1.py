"""The ``txnkafka`` sink when its driver is killed before a micro-batch's decision was recorded, then
restarted.

The driver is SIGKILLed (the sink's fault hook, ``TXNKAFKA_SPARK_CRASH_AT``) before the decision of a
micro-batch was recorded, on transaction version 1 (AddPartitionsToTxn, EndTxn v4); the application is
started again from the same checkpoint. Each run is a real Spark application in a subprocess
(tests/spark/spark_app.py; tests/spark/test_spark_sink.py says how). One scenario per module: see
test_spark_sink_restart_tv2.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4 not installed (the [spark] extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (PySpark's data source writes need it)")
if shutil.which("java") is None:
    pytest.skip("no java on PATH (PySpark needs a JVM)", allow_module_level=True)

from tests._support.spark_sink_app import (
    LINES,
    PARTITIONS,
    assert_no_open_transaction,
    committed_values,
    latest_decision,
    make_input,
    run_app,
    stream_args,
)
from txnproducer.testing import MockCluster

pytestmark = [pytest.mark.slow]


@pytest.mark.timeout(420)
def test_driver_killed_before_the_decision_then_restart_is_exactly_once(tmp_path: Path) -> None:
    # the transaction version 1 path (AddPartitionsToTxn, EndTxn v4)
    with MockCluster(num_brokers=3, transaction_version=1) as cluster:
        cluster.create_topic("before_entry", partitions=PARTITIONS)
        expected = make_input(tmp_path / "in")
        args = stream_args(tmp_path, "before_entry")
        run_app(cluster, *args, crash_at="before_decision:1")
        # batch 1 was prepared by the executors but never decided: invisible, transactions open
        assert len(committed_values(cluster, "before_entry")) == LINES  # batch 0 only
        decision = latest_decision(cluster.bootstrap_servers, tmp_path)
        assert decision is not None and (decision.batch, decision.stage) == (0, "done")
        with cluster.state.lock:
            logs = [cluster.state.partition_log("before_entry", p) for p in range(PARTITIONS)]
            assert any(log is not None and log.last_stable_offset < log.high_watermark for log in logs)

        run_app(cluster, *args)
        # the crashed run's transactions were ended (fenced by the replay's commit, or by the replay's
        # attempts taking their ids, or by the coordinator's timeout if the restart was slow)
        assert sorted(committed_values(cluster, "before_entry")) == expected
        assert_no_open_transaction(cluster, "before_entry")
