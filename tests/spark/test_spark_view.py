"""``txnproducer spark status`` (``txnproducer.admin.spark_view``): what a stopped driver left, as an
operator sees it from Kafka alone.

The sink's protocol is driven the way tests/_support/sink_protocol.py does (task attempts and the
driver's Committer called directly, a driver "killed" at the sink's named crash points), so the state
the view reads - the state topic's decisions and announcements, the coordinators' transactions, the
partitions' last stable offsets - is exactly what a real run leaves at that step.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import attrs
import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (the [spark] extra)")

from tests._support import sink_protocol as protocol
from txnproducer.admin import TopicPartition, TransactionsAdmin
from txnproducer.admin.spark_view import spark_sink_status
from txnproducer.cli import main
from txnproducer.spark.sink import committer as committer_module
from txnproducer.spark.sink.options import SinkOptions
from txnproducer.testing import MockCluster

TOPIC = protocol.TOPIC
TWELVE_MIN_MS = 12 * 60_000


class DriverKilled(BaseException):
    """Stands for SIGKILL at a crash point: nothing after it runs."""


def kill_driver_at(monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    def crash_point(name: str, batch: int, prefix: str = "") -> None:
        if name == point:
            raise DriverKilled(f"{name}:{batch}")

    monkeypatch.setattr(committer_module, "crash_point", crash_point)


class TaskFailed(Exception):
    """A task that failed after announcing its id: it aborts its transaction, nothing stays open."""


def fail(_producer: object) -> None:
    raise TaskFailed


@pytest.fixture
def admin(cluster: MockCluster) -> Iterator[TransactionsAdmin]:
    with TransactionsAdmin(
        bootstrap_servers=cluster.bootstrap_servers, **{"default.api.timeout.ms": 10_000}
    ) as a:
        yield a


def test_a_driver_stopped_before_the_commit_point_shows_its_prepared_batch(
    cluster: MockCluster, options: SinkOptions, admin: TransactionsAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = [protocol.attempt(options, 0, p, 0, [b"b0-%d" % p], kafka_partition=p) for p in (0, 1)]
    with protocol.committer(options) as driver:
        driver.commit(first, 0)
    # batch 1: four tasks announce their ids, three prepare, one fails (its transaction is aborted)
    prepared = [protocol.attempt(options, 1, p, 0, [b"b1-%d" % p], kafka_partition=p % 2) for p in range(3)]
    with pytest.raises(TaskFailed):
        protocol.attempt(options, 1, 3, 0, [b"never"], during=fail, kafka_partition=1)
    kill_driver_at(monkeypatch, "before_decision")
    with protocol.committer(options) as driver, pytest.raises(DriverKilled):
        driver.commit(prepared, 1)
    monkeypatch.undo()

    status = spark_sink_status(admin, protocol.PREFIX, now_ms=int(time.time() * 1000) + TWELVE_MIN_MS)
    assert status.decision is not None
    assert (status.decision["batch"], status.decision["outcome"], status.decision["stage"]) == (
        0,
        "commit",
        "done",
    )
    open_ones = [t for t in status.transactions if t.is_open]
    assert sorted((t.spark_partition, t.batch, t.decided) for t in open_ones) == [
        (0, 1, False),
        (1, 1, False),
        (2, 1, False),
    ]
    assert {tp for t in open_ones for tp in t.holds} == {TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)}
    assert status.verdict.startswith(
        "batch 1 prepared 3 of 4 transactions, driver has not decided for 12 min: the driver is down?"
    )
    assert status.verdict.endswith(f" They hold the last stable offset of {TOPIC}-0, {TOPIC}-1.")
    assert all(lso < hw for lso, hw in status.offsets.values())

    # the restarted query: Spark replays batch 1; its commit fences the orphans and the view is idle again
    replay = [protocol.attempt(options, 1, p, 0, [b"b1-%d" % p], kafka_partition=p % 2) for p in range(4)]
    with protocol.committer(options) as driver:
        driver.commit(replay, 1)
    after = spark_sink_status(admin, protocol.PREFIX)
    assert not any(t.is_open for t in after.transactions)
    assert (
        after.verdict
        == f"idle: batch 1 was committed and finished; no transaction of {protocol.PREFIX!r} is open."
    )


def test_a_driver_stopped_after_the_commit_point_shows_the_unfinished_decision(
    cluster: MockCluster,
    options: SinkOptions,
    admin: TransactionsAdmin,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    messages = [protocol.attempt(options, 4, p, 0, [b"v%d" % p], kafka_partition=p) for p in (0, 1)]
    kill_driver_at(monkeypatch, "after_first_commit")
    with protocol.committer(options) as driver, pytest.raises(DriverKilled):
        driver.commit(messages, 4)
    monkeypatch.undo()

    code = main(
        [
            "spark",
            "status",
            "--prefix",
            protocol.PREFIX,
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--json",
        ]
    )
    assert code == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["decision"]["batch"], status["decision"]["stage"]) == (4, "decided")
    still_open = [t for t in status["transactions"] if t["state"] == "Ongoing"]
    assert len(still_open) == 1 and still_open[0]["decided"] is True
    assert status["verdict"].startswith(
        "batch 4 was decided (commit) but not finished: 1 of its 2 transactions are still open - the driver"
        " stopped after the commit point; a restarted query completes them."
    )


def test_another_query_whose_prefix_extends_this_one_is_left_out(
    cluster: MockCluster, options: SinkOptions, admin: TransactionsAdmin
) -> None:
    other = attrs.evolve(options, transactional_id_prefix=f"{protocol.PREFIX}-other")
    protocol.attempt(other, 0, 0, 0, [b"theirs"])  # q1-other-0-0: open, not q1's
    status = spark_sink_status(admin, protocol.PREFIX)
    assert status.transactions == () and status.offsets == {}


def test_a_query_without_decisions_is_said_so(
    cluster: MockCluster, options: SinkOptions, admin: TransactionsAdmin
) -> None:
    status = spark_sink_status(admin, "another-query")
    assert status.decision is None and status.transactions == ()
    assert status.verdict.startswith("no decision recorded for prefix 'another-query'")
