"""The ``txnkafka`` sink when its driver is killed after a micro-batch's decision was recorded, then
restarted.

The driver is SIGKILLed (the sink's fault hook, ``TXNKAFKA_SPARK_CRASH_AT``) after the decision of a
micro-batch was recorded (transaction version 2); the application is started again from the same
checkpoint. Each run is a real Spark application in a subprocess (tests/spark/spark_app.py;
tests/spark/test_spark_sink.py says how). One scenario per module, so that a parallel run
(``--dist loadscope``) does the two restart scenarios (this one and test_spark_sink_restart_tv1.py) beside
each other and beside the sink's other application.
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
    FILES,
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
def test_driver_killed_after_the_decision_then_restart_is_exactly_once(tmp_path: Path) -> None:
    with MockCluster(num_brokers=3, transaction_version=2) as cluster:
        cluster.create_topic("after_entry", partitions=PARTITIONS)
        expected = make_input(tmp_path / "in")
        args = stream_args(tmp_path, "after_entry")
        run_app(cluster, *args, crash_at="after_first_commit:1")
        # the crash left batch 1 decided but only partly committed
        decision = latest_decision(cluster.bootstrap_servers, tmp_path)
        assert decision is not None and (decision.batch, decision.stage) == (1, "decided")
        coordinator_states = sorted(str(cluster.describe_transaction(s.transactional_id)["state"])
                                    for s in decision.states)
        assert coordinator_states == ["CompleteCommit", "Ongoing"]
        # (whether the committed half is readable yet depends on where the open one holds the LSO)
        assert LINES <= len(committed_values(cluster, "after_entry")) < 2 * LINES

        result = run_app(cluster, *args)
        assert "txn.spark_recovering_batch" in result.stderr
        assert "txn.spark_replay_skipped" in result.stderr  # Spark re-ran batch 1: not written twice
        assert "txn.spark_attempt_superseded" in result.stderr  # ... its tasks saw the decision
        assert sorted(committed_values(cluster, "after_entry")) == expected
        assert_no_open_transaction(cluster, "after_entry")
        decision = latest_decision(cluster.bootstrap_servers, tmp_path)
        assert decision is not None and (decision.batch, decision.stage) == (FILES - 1, "done")
