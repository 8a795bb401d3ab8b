"""TransactionalProcessor error handling against the MockCluster (issue 4, criterion 2).

Each test runs real kafka-python consumers and the txnproducer producer against the mock brokers,
injects one fault with the cluster's fault injection, and checks what the user relies on: the
transaction that hit the fault is aborted and its input reprocessed (so the read_committed output
still holds every input exactly once), or - for a fatal error - the processor stops, closes and
raises. Waits are bounded waits on conditions and on the mock's request log.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from test_eos_pipeline import (
    IN,
    OUT,
    PARTITIONS,
    WAIT_S,
    Pipeline,
    assert_each_input_once_in_order,
    produce_inputs,
    read_committed_output,
    transform,
)

from txnproducer import TransactionalProducer, errors
from txnproducer.eos import OutputRecord
from txnproducer.testing import MockCluster

ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
GROUP_AUTHORIZATION_FAILED = 30
REBALANCE_IN_PROGRESS = 27
FENCED_INSTANCE_ID = 82
INPUTS = 600


@pytest.fixture(params=[1, 2], ids=["tv1", "tv2"])
def cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    with MockCluster(num_brokers=3, transaction_version=request.param) as c:
        c.create_topic(IN, PARTITIONS)
        c.create_topic(OUT, PARTITIONS)
        yield c


def end_txns(cluster: MockCluster, transactional_id: str) -> list[Any]:
    return [e for e in cluster.request_log
            if e.api == "EndTxn" and e.fields.get("transactional_id") == transactional_id]


@pytest.mark.parametrize("code", [ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID],
                         ids=["ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID"])
def test_fenced_offset_commit_aborts_rewinds_and_continues(cluster: MockCluster, code: int) -> None:
    produce_inputs(cluster, 0, INPUTS)
    cluster.inject_error("TxnOffsetCommit", code, count=1)
    pipeline = Pipeline(cluster)
    try:
        proc = pipeline.start("p")
        pipeline.wait_for("every input is committed", pipeline.all_committed)
    finally:
        pipeline.stop_all()

    rejected = [e for e in cluster.request_log if e.api == "TxnOffsetCommit" and code in e.error_codes]
    assert len(rejected) == 1 and rejected[0].injected
    # CommitFailedError is abortable: the processor aborted that transaction (EndTxn abort) ...
    aborts = [e for e in end_txns(cluster, proc.transactional_id) if e.fields.get("committed") is False]
    assert aborts and aborts[0].seq > rejected[0].seq
    metrics = proc.metrics()
    assert metrics["aborts_on_error"] == 1 and metrics["transactions_aborted"] == 1
    # ... and rewound, so the inputs of the aborted transaction were processed again, once.
    assert_each_input_once_in_order(cluster, INPUTS)


def test_group_authorization_failure_is_fatal(cluster: MockCluster) -> None:
    produce_inputs(cluster, 0, INPUTS)
    cluster.inject_error("TxnOffsetCommit", GROUP_AUTHORIZATION_FAILED, count=1)
    pipeline = Pipeline(cluster)
    try:
        proc = pipeline.start("p")
        pipeline.wait_for("the processor stops", lambda: not pipeline.threads["p"].is_alive(),
                          allow_errors=True)
    finally:
        pipeline.stop_all()

    assert len(pipeline.errors) == 1
    assert isinstance(pipeline.errors[0], errors.GroupAuthorizationError)
    assert proc.closed
    assert proc.metrics()["transactions_committed"] == 0
    assert cluster.committed_offsets(pipeline.group) == {}
    assert all(not records for records in read_committed_output(cluster).values())
    with pytest.raises(errors.ClosedError):
        proc.run()


def test_transform_error_aborts_and_reaches_the_caller(cluster: MockCluster) -> None:
    produce_inputs(cluster, 0, INPUTS)
    poison = (0, 40)  # input partition 0, offset 40: fails the first time only
    failed = threading.Event()

    def flaky(record: Any) -> list[OutputRecord]:
        if (record.partition, record.offset) == poison and not failed.is_set():
            failed.set()
            raise ValueError("cannot transform 0:40")
        return transform(record)

    pipeline = Pipeline(cluster)
    proc = pipeline.build("p", transform=flaky, max_records_per_txn=50)
    outcome: list[BaseException | None] = []
    try:
        thread = threading.Thread(target=lambda: _run_capturing(proc, outcome), daemon=True)
        thread.start()
        thread.join(WAIT_S)
        assert not thread.is_alive(), "run() did not return after the transform failed"
        assert len(outcome) == 1 and isinstance(outcome[0], ValueError)

        # Not consumed: the group's offset for partition 0 is at or before the poison record.
        assert cluster.committed_offsets(pipeline.group).get((IN, 0), 0) <= poison[1]
        assert proc.metrics()["transactions_aborted"] == 1
        assert not proc.closed

        # Running again processes the same input again (now successfully): exactly once overall.
        pipeline.threads["p"] = threading.Thread(target=lambda: _run_capturing(proc, outcome), daemon=True)
        pipeline.threads["p"].start()
        pipeline.wait_for("every input is committed", pipeline.all_committed)
    finally:
        pipeline.stop_all()
    assert outcome[1:] == [None]
    assert_each_input_once_in_order(cluster, INPUTS)


def _run_capturing(proc: Any, outcome: list[BaseException | None]) -> None:
    try:
        proc.run()
    except BaseException as exc:
        outcome.append(exc)
    else:
        outcome.append(None)


def test_revocation_aborts_the_open_transaction_before_the_partitions_move(cluster: MockCluster) -> None:
    produce_inputs(cluster, 0, INPUTS)
    in_transform = threading.Event()
    release = threading.Event()

    def gated(record: Any) -> list[OutputRecord]:
        if not release.is_set():
            in_transform.set()
            release.wait(WAIT_S)
        return transform(record)

    aborted_at: list[int] = []  # the request log's next seq when each abort_transaction() returned

    class Recording(TransactionalProducer):
        def abort_transaction(self, timeout: float | None = None) -> None:
            super().abort_transaction(timeout)
            aborted_at.append(cluster.requests.next_seq())

    pipeline = Pipeline(cluster)
    try:
        # One long transaction (no size/time limit hit) that is open when the group rebalances.
        first = pipeline.start("first", transform=gated, max_records_per_txn=100_000, max_txn_time_ms=60_000,
                               producer_factory=Recording)
        assert in_transform.wait(WAIT_S)
        since = cluster.requests.next_seq()
        pipeline.start("second")
        # first's heartbeat learns of the rebalance while its transaction is open ...
        heartbeat = cluster.wait_for_request(
            lambda e: e.api == "Heartbeat" and REBALANCE_IN_PROGRESS in e.error_codes, timeout=WAIT_S,
            since=since)
        member = heartbeat.fields["member_id"]
        first_pid = first.producer.producer_id
        release.set()
        # ... and when its loop polls again, it rejoins: the listener aborts first.
        rejoin = cluster.wait_for_request(
            lambda e: e.api == "JoinGroup" and e.fields.get("member_id") == member, timeout=WAIT_S,
            since=heartbeat.seq)
        pipeline.wait_for("every input is committed", pipeline.all_committed)
    finally:
        pipeline.stop_all()

    # Between learning of the rebalance and rejoining, "first" never committed; and if its open
    # transaction had reached the brokers (TV1: AddPartitionsToTxn; TV2: transactional Produce),
    # it aborted it (EndTxn abort) before the JoinGroup. (TV1 aborts a transaction that never
    # reached the coordinator locally, as the Java client does.)
    window = [e for e in cluster.request_log if heartbeat.seq < e.seq < rejoin.seq]
    tid = first.transactional_id
    mine = [e for e in window if e.fields.get("transactional_id") == tid]
    assert not [e for e in mine if e.api == "EndTxn" and e.fields.get("committed") is True]
    reached = any(e.api == "AddPartitionsToTxn" for e in mine) or any(
        e.api == "Produce" and any(b[2] == first_pid and b[6] for b in e.fields.get("batches", []))
        for e in window)
    if reached:
        assert [e for e in mine if e.api == "EndTxn" and e.fields.get("committed") is False], \
            "the open transaction was not aborted before rejoining"
    assert first.metrics()["aborts_on_revocation"] == 1
    # whether or not the transaction reached the brokers, the abort was over before the member rejoined
    assert aborted_at and heartbeat.seq < aborted_at[0] <= rejoin.seq, (aborted_at, heartbeat.seq, rejoin.seq)
    assert_each_input_once_in_order(cluster, INPUTS)
