"""TransactionalProcessor with the real consumer and group member on MockCluster: its idle, stop and
epoch paths (the loop's decisions against fakes: tests/unit/test_eos_processor.py).

What a user relies on: ``run(until_idle=s)`` returns once the input is caught up (the mode the
pipelines guide offers for a batch job or a test), and not while the member is still joining; the
group's committed offsets then equal the log end offsets of input written in transactions - past its
commit and abort markers, so that lag monitors read 0; ``stop()`` from another thread commits what is
open and closes, leaving the group only when asked; and the loop goes on across the end of the
producer's epoch range (TV2 rotation, KAFKA-20090) with each input once in the output.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.eos_pipeline import assert_each_input_once_in_order, origin_transform
from tests._support.readers import read_all
from txnproducer import TransactionalProducer
from txnproducer.eos import TransactionalProcessor
from txnproducer.testing import MockCluster

IN, OUT = "proc-in", "proc-out"
PARTITIONS = 3
LAST_EPOCH = 32767
WAIT_S = 30.0
CONSUMER = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 100, "request_timeout_ms": 5000,
            "fetch_max_wait_ms": 50, "retry_backoff_ms": 50}
PRODUCER = {"linger_ms": 1, "max_block_ms": 10_000, "request_timeout_ms": 5000}


@pytest.fixture(params=[1, 2], ids=["tv1", "tv2"])
def cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3, transaction_version=request.param) as c:
        c.create_topic(IN, PARTITIONS)
        c.create_topic(OUT, PARTITIONS)
        yield c


def processor(cluster: MockCluster, group: str, name: str = "i1", **overrides: Any) -> TransactionalProcessor:
    overrides.setdefault("transform", origin_transform(OUT))
    return TransactionalProcessor(
        IN, instance_name=name, poll_timeout_ms=100,
        consumer_config={"group_id": group, "bootstrap_servers": cluster.bootstrap_servers, **CONSUMER},
        producer_config={"bootstrap_servers": cluster.bootstrap_servers, **PRODUCER}, **overrides)


def write_inputs_in_transactions(cluster: MockCluster, start: int, transactions: int) -> list[int]:
    """Inputs written by two producers in alternating transactions, every third one aborted, each
    transaction one record per partition (input ``n`` on partition ``n % 3``); the last transaction
    aborts and touches only partition 2, so that partition ends with aborted data and a marker.
    Returns the committed input numbers."""
    committed: list[int] = []
    writers = [TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=f"in-{w}",
                                     **PRODUCER) for w in range(2)]
    try:
        for w in writers:
            w.init_transactions()
        n = start
        for t in range(transactions + 1):
            writer = writers[t % 2]
            last = t == transactions
            numbers = [n + 2] if last else [n, n + 1, n + 2]
            n += 3
            writer.begin_transaction()
            for number in numbers:
                writer.send(IN, str(number).encode(), partition=number % PARTITIONS)
            if last or t % 3 == 2:
                writer.flush()
                writer.abort_transaction()
            else:
                writer.commit_transaction()
                committed += numbers
    finally:
        for w in writers:
            w.close(2)
    return committed


def log_ends(cluster: MockCluster) -> dict[tuple[str, int], int]:
    with cluster.state.lock:
        return {(IN, p): cluster.state.partition_log(IN, p).high_watermark for p in range(PARTITIONS)}


def run_in_thread(proc: TransactionalProcessor, **kwargs: Any) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def body() -> None:
        try:
            outcome["metrics"] = proc.run(**kwargs)
        except BaseException as exc:  # the test reports it
            outcome["error"] = exc
        outcome["returned_at"] = time.monotonic()

    thread = threading.Thread(target=body, name="processor-run", daemon=True)
    thread.start()
    return thread, outcome


def test_run_until_idle_returns_once_caught_up_with_no_lag_on_transactional_input(
        cluster: MockCluster) -> None:
    committed_inputs = write_inputs_in_transactions(cluster, 0, 12)
    commits: list[float] = []
    proc = processor(cluster, "idle", on_commit=lambda offsets: commits.append(time.monotonic()))
    try:
        thread, outcome = run_in_thread(proc, until_idle=0.5)
        thread.join(WAIT_S)
        assert not thread.is_alive(), "run(until_idle=0.5) did not return with the input caught up"
        assert "error" not in outcome, outcome
        # it returned within until_idle plus one poll of the last commit (plus slack for a busy machine)
        assert outcome["returned_at"] - commits[-1] < 0.5 + 0.1 + 5.0
        assert not proc.closed and proc.metrics()["records_in"] == len(committed_inputs)
        # committed offsets are positions: past the commit and abort markers (no lag of 1 or more)
        assert cluster.committed_offsets("idle") == log_ends(cluster)
    finally:
        proc.stop()
    output = read_all(cluster.bootstrap_servers, OUT, PARTITIONS, "read_committed", WAIT_S)
    assert_each_input_once_in_order(output, PARTITIONS, len(committed_inputs))


@pytest.mark.parametrize("cluster", [2], indirect=True, ids=["tv2"])
def test_run_until_idle_does_not_return_while_the_member_is_joining(cluster: MockCluster) -> None:
    """Empty polls before the group is stable (the coordinator delays the first rebalance) are not
    'caught up': until_idle=0 still processes every input."""
    cluster.state.groups.initial_rebalance_delay_ms = 600
    committed_inputs = write_inputs_in_transactions(cluster, 0, 3)
    proc = processor(cluster, "joining")
    try:
        thread, outcome = run_in_thread(proc, until_idle=0)
        thread.join(WAIT_S)
        assert not thread.is_alive() and "error" not in outcome, outcome
        assert proc.metrics()["records_in"] == len(committed_inputs)
        assert cluster.committed_offsets("joining") == log_ends(cluster)
    finally:
        proc.stop()


@pytest.mark.parametrize("cluster", [2], indirect=True, ids=["tv2"])
def test_stop_from_another_thread_commits_what_is_open_and_closes(cluster: MockCluster) -> None:
    first = write_inputs_in_transactions(cluster, 0, 2)
    committed = threading.Event()
    proc = processor(cluster, "stopping", on_commit=lambda offsets: committed.set())
    thread, outcome = run_in_thread(proc)
    assert committed.wait(WAIT_S)
    more = write_inputs_in_transactions(cluster, 1000, 2)
    assert proc.stop(timeout=WAIT_S)
    thread.join(WAIT_S)
    assert not thread.is_alive() and "error" not in outcome, outcome
    assert proc.closed and proc.consumer.closed
    output = read_all(cluster.bootstrap_servers, OUT, PARTITIONS, "read_committed", WAIT_S)
    seen = sum(len(records) for records in output.values())
    assert seen == proc.metrics()["records_in"] and seen <= len(first) + len(more)
    assert_each_input_once_in_order(output, PARTITIONS, seen)


@pytest.mark.parametrize("cluster", [2], indirect=True, ids=["tv2"])
@pytest.mark.parametrize("leave", [None, True], ids=["static-member-stays", "leaves-when-asked"])
def test_stop_leaves_the_group_only_when_asked(cluster: MockCluster, leave: bool | None) -> None:
    write_inputs_in_transactions(cluster, 0, 1)
    proc = processor(cluster, f"leave-{leave}")
    proc.run(until_idle=0)
    described = cluster.state.groups.describe(f"leave-{leave}")
    assert described is not None and len(described.members) == 1
    proc.stop(leave_group=leave)
    described = cluster.state.groups.describe(f"leave-{leave}")
    members = () if described is None else described.members
    assert len(members) == (0 if leave else 1)


@pytest.mark.parametrize("cluster", [2], indirect=True, ids=["tv2"])
@pytest.mark.parametrize(("how", "fixed"), [("commit", False), ("commit", True), ("timeout", False)],
                         ids=["by-commit-kafka-4.1", "by-commit-kafka-20090-fixed", "timeout-kafka-4.1"])
def test_the_loop_crosses_the_end_of_the_epoch_range(cluster: MockCluster, how: str, fixed: bool) -> None:
    """The processor's producer starts at 32766. By commit: its first commit rotates the producer id.
    By timeout: the coordinator aborts its first transaction on its own (Kafka 4.1 leaves the id at
    32767); the loop aborts, gets a new producer id before its next transaction, rewinds, and commits
    the same input with KIP-447 offsets under the new id. Each input once either way."""
    cluster.state.txn._rotate_fenced_exhausted = fixed
    txn_id = "epochs-i1"
    with TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=txn_id,
                               **PRODUCER) as registering:
        registering.init_transactions()
    cluster.set_producer_epoch(txn_id, LAST_EPOCH - 2)
    committed_inputs = write_inputs_in_transactions(cluster, 0, 3)
    transform = origin_transform(OUT)
    fired: list[bool] = []

    def time_out_the_first_transaction(record: Any) -> Any:
        if how == "timeout" and not fired:
            fired.append(True)
            # a record on the wire makes the transaction Ongoing at the coordinator; then it times out
            proc.producer.send(OUT, b"opens-the-transaction", partition=0).get(5)
            cluster.expire_transaction(txn_id)
        return transform(record)

    proc = processor(cluster, "epochs", transform=time_out_the_first_transaction)
    try:
        started = {}
        proc.start()
        started["pid"], started["epoch"] = proc.producer.producer_id, proc.producer.epoch
        assert started["epoch"] == LAST_EPOCH - 1
        metrics = proc.run(until_idle=0)
        assert proc.producer.producer_id != started["pid"] and proc.producer.epoch < 5
        assert metrics["aborts_on_error"] == (1 if how == "timeout" else 0)
        assert cluster.committed_offsets("epochs") == log_ends(cluster)
    finally:
        proc.stop()
    output = read_all(cluster.bootstrap_servers, OUT, PARTITIONS, "read_committed", WAIT_S)
    assert_each_input_once_in_order(output, PARTITIONS, len(committed_inputs))
    at_last_epoch = [e for e in cluster.request_log if e.fields.get("transactional_id") == txn_id
                     and e.fields.get("producer_epoch") == LAST_EPOCH and e.api != "InitProducerId"]
    produced_at_last_epoch = [b for e in cluster.request_log if e.api == "Produce"
                              for b in e.fields["batches"] if b[3] == LAST_EPOCH]
    assert not at_last_epoch and not produced_at_last_epoch
