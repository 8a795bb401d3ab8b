"""Exactly-once consume-transform-produce against a real Apache Kafka broker (issue 4, criterion 1).

The scenario of tests/mock/test_eos_pipeline.py at the same scale (12,000 inputs on 6
partitions; about 10 s, the real broker's 6 s minimum session timeout included): two
TransactionalProcessor instances in one group, one killed mid-transaction (outputs written and
offsets added, then connections dropped: no commit, no abort, no LeaveGroup) and restarted with
the same transactional id, and a third instance joining to force another rebalance. What users
rely on: a read_committed consumer of the output sees every input exactly once, in input order per
input partition, and the group's committed offsets end at the input end offsets. The transaction
version is the broker's (``KAFKA_TRANSACTION_VERSION=1`` formats it with TV1).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import TopicPartition

from tests._support import readers
from tests._support.eos_pipeline import ProcessorThreads, assert_each_input_once_in_order, produce_inputs
from tests._support.examples import load_example

PARTITIONS = 6
TOTAL = 12_000
WAIT_S = 60.0

# The real broker refuses session timeouts below group.min.session.timeout.ms (6 s). The killed
# instance comes back with its group instance id (static membership, the processor's default) and
# takes its partitions back at once; the joining one makes the group rebalance.
CONSUMER = {
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 500,
    "max_poll_interval_ms": 20000,
    "request_timeout_ms": 30000,
    "metadata_max_age_ms": 5000,
    "retry_backoff_ms": 50,
    "reconnect_backoff_ms": 20,
    "fetch_max_wait_ms": 50,
}
PRODUCER = {"linger_ms": 2, "transaction_timeout_ms": 30000, "max_block_ms": 30000}


def _fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def end_offsets(bootstrap: str, topic: str, isolation_level: str = "read_uncommitted") -> dict[int, int]:
    return readers.end_offsets(bootstrap, topic, PARTITIONS, isolation_level)


@pytest.fixture
def topics(kafka_bootstrap: str) -> Iterator[tuple[str, str]]:
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    names = (_fresh("eos-in"), _fresh("eos-out"))
    try:
        admin.create_topics([NewTopic(n, num_partitions=PARTITIONS, replication_factor=1) for n in names])
        yield names
    finally:
        admin.close()


@pytest.mark.timeout(240)
def test_each_input_exactly_once_across_crash_restart_and_rebalance(
        kafka_bootstrap: str, topics: tuple[str, str]) -> None:
    in_topic, out_topic = topics
    pipeline = ProcessorThreads(kafka_bootstrap, in_topic, out_topic, _fresh("eos-group"), CONSUMER, PRODUCER,
                                WAIT_S)
    try:
        produce_inputs(kafka_bootstrap, in_topic, 0, 4000, PARTITIONS)
        a = pipeline.start("a")
        pipeline.start("b")
        pipeline.wait_for("the first 1000 inputs are committed", lambda: pipeline.committed_total() >= 1000)

        # Kill "a" at its next commit (more input guarantees there is one): outputs written,
        # offsets added to the transaction, nothing committed or aborted.
        a.simulate_crash("before_commit")
        produce_inputs(kafka_bootstrap, in_topic, 4000, 8000, PARTITIONS)
        pipeline.wait_for("instance a died", lambda: not pipeline.threads["a"].is_alive())
        assert readers.transaction_state(kafka_bootstrap, a.transactional_id) == "Ongoing"
        lso = end_offsets(kafka_bootstrap, out_topic, "read_committed")
        hw = end_offsets(kafka_bootstrap, out_topic)
        assert any(lso[p] < hw[p] for p in range(PARTITIONS)), (lso, hw)  # it holds the LSO back

        # Restart "a" with the same transactional id: init_transactions fences the dead instance
        # and the coordinator aborts its open transaction.
        pipeline.start("a")
        pipeline.wait_for("6000 inputs are committed", lambda: pipeline.committed_total() >= 6000)

        # More input, and a third instance joins while it is being processed: a rebalance mid-stream.
        produce_inputs(kafka_bootstrap, in_topic, 8000, 10000, PARTITIONS)
        c = pipeline.start("c")
        pipeline.wait_for("instance c owns partitions", lambda: bool(c.assignment()))
        produce_inputs(kafka_bootstrap, in_topic, 10000, TOTAL, PARTITIONS)
        ends = end_offsets(kafka_bootstrap, in_topic)
        assert sum(ends.values()) == TOTAL  # plain writes: no markers, high watermark = count
        wanted = {TopicPartition(in_topic, p): o for p, o in ends.items()}
        pipeline.wait_for("every input is committed", lambda: pipeline.committed == wanted)
    finally:
        pipeline.stop_all(30.0)

    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=30_000)
    try:
        committed = admin.list_group_offsets(pipeline.group)[pipeline.group]
    finally:
        admin.close()
    assert {tp: meta.offset for tp, meta in committed.items()} == wanted
    assert c.metrics()["records_in"] > 0, "the joining instance never got partitions"
    assert_each_input_once_in_order(
        readers.read_all(kafka_bootstrap, out_topic, PARTITIONS, "read_committed", WAIT_S), PARTITIONS, TOTAL)

    # No transaction is left open, and the crash really left aborted data in the log.
    lso = end_offsets(kafka_bootstrap, out_topic, "read_committed")
    hw = end_offsets(kafka_bootstrap, out_topic)
    assert lso == hw, (lso, hw)
    uncommitted = readers.read_all(kafka_bootstrap, out_topic, PARTITIONS, "read_uncommitted", WAIT_S)
    uncommitted_view = sum(len(records) for records in uncommitted.values())
    assert uncommitted_view > TOTAL


@pytest.mark.timeout(240)
def test_the_readme_loop_writes_each_input_once(kafka_bootstrap: str) -> None:
    """The producer guide's own loop (``examples/exactly_once_loop.py``: TransactionalConsumer.poll_batch +
    TransactionalProducer, two instances in one group) on a real broker: every input once, upper-cased."""
    out = io.StringIO()
    ok = load_example("exactly_once_loop").run_demo(bootstrap=kafka_bootstrap, inputs=1200, out=out)
    assert ok, out.getvalue()
    assert "sees 1200 outputs for 1200 inputs: 0 missing, 0 duplicated" in out.getvalue()
