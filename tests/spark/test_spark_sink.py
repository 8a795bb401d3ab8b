"""The ``txnkafka`` PySpark sink against the MockCluster: exactly once through a retried task.

Each scenario runs a real Spark application (``local[2,4]``: two task threads, a task may be
retried) in a subprocess - ``spark_app.py`` - so that "the driver is killed" is literally true:
the sink's fault hook SIGKILLs every process of that application at the named point, and the
test starts it again from the same checkpoint (those scenarios: test_spark_sink_restart_tv2.py and
_tv1.py). The MockCluster lives in the test process. (The same scenarios on a standalone cluster with private
executor directories: tests/cluster.) One application serves both tests here: a parallel run
(``--dist loadscope``) keeps a module's tests on one worker, so it runs once.

What a user relies on, checked with a read_committed view of the partitions: every input row
is visible exactly once, and no transaction is left open (last stable offset = high watermark).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

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
    make_input,
    run_app,
    stream_args,
)
from txnproducer.spark.sink.options import default_prefix
from txnproducer.testing import MockCluster

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3, transaction_version=2) as c:
        yield c


@pytest.fixture(scope="module")
def batch_and_retry(cluster: MockCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """One application: a 50,000-row batch write, then a streaming query in which one task fails
    on its first attempt (after it already sent part of its rows)."""
    tmp = tmp_path_factory.mktemp("retry")
    for topic in ("batch50k", "retry"):
        cluster.create_topic(topic, partitions=PARTITIONS)
    expected = make_input(tmp / "in")
    result = run_app(cluster, *stream_args(tmp, "retry"), "--batch-topic", "batch50k", "--rows", "50000",
                     "--fail-value", f"f1-r{LINES // 2}")
    # the stream's ids: one per partition and attempt slot, whatever the number of micro-batches
    return {"expected": expected, "stderr": result.stderr, "tmp": tmp}


@pytest.mark.timeout(420)
def test_batch_write_of_50000_rows_lands_exactly_once(
        cluster: MockCluster, batch_and_retry: dict[str, object]) -> None:
    values = committed_values(cluster, "batch50k")
    assert len(values) == 50_000
    assert sorted(values) == sorted(str(i).encode() for i in range(50_000))
    assert_no_open_transaction(cluster, "batch50k")


@pytest.mark.timeout(420)
def test_stream_with_a_task_failing_on_its_first_attempt_is_exactly_once(
        cluster: MockCluster, batch_and_retry: dict[str, object]) -> None:
    assert sorted(committed_values(cluster, "retry")) == batch_and_retry["expected"]
    assert_no_open_transaction(cluster, "retry")
    # the failure really happened: a second attempt took the partition's second id, and the four
    # micro-batches reused the ids instead of adding some per batch
    prefix = default_prefix(str(batch_and_retry["tmp"] / "ckpt"))  # type: ignore[operator]
    ids = sorted(t for t in cluster.state.txn.transactional_ids() if t.startswith(prefix))
    assert len(ids) == 3 and any(t.endswith("-1") for t in ids), ids
