"""TransactionalProducer edge cases against the MockCluster.

What a user relies on here: a busy coordinator (markers of the previous transaction still being
written) only delays the next transaction; a TV2 producer whose epoch runs out continues under a
new producer id without losing data; no blocking call outlives its bound when brokers stop
answering; and calling the API in the wrong state fails at once with an error naming the state.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka.structs import TopicPartition

from tests._support.producers import ProducerFactory, read_committed_via_kafka_python
from txnproducer import errors
from txnproducer.producer import TransactionalProducer
from txnproducer.testing import MockCluster
from txnproducer.testing.request_log import RequestLogEntry

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])
CONCURRENT_TRANSACTIONS = 51
MAX_EPOCH = 32767  # Short.MAX_VALUE: the coordinator keeps it for itself
# generous slack on top of a call's own bound: this checks "bounded", not "fast"
MARGIN_S = 3.0


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[ProducerFactory]:
    factory = ProducerFactory(mock_cluster, "tx-edge")
    yield factory
    mock_cluster.black_hole(None, enabled=False)
    mock_cluster.clear_faults()
    factory.close_all(0.5)


@pytest.fixture
def arrival_times(mock_cluster: MockCluster) -> dict[int, float]:
    """monotonic() at which each request-log entry was appended (the log itself has no clock)."""
    times: dict[int, float] = {}
    log = mock_cluster.requests
    original = log.append

    def timed_append(**kwargs: Any) -> RequestLogEntry:
        entry = original(**kwargs)
        times[entry.seq] = time.monotonic()
        return entry

    log.append = timed_append  # type: ignore[method-assign]
    return times


# ---------------------------------------------------------------- (a) CONCURRENT_TRANSACTIONS

@TVS
def test_next_transaction_waits_out_concurrent_transactions_then_commits(
        mock_cluster: MockCluster, make_producer: Any, arrival_times: dict[int, float]) -> None:
    """Markers of commit 1 are held, so the coordinator is still completing it when transaction 2
    starts: TV1's AddPartitionsToTxn and TV2's Produce (implicit add) are answered
    CONCURRENT_TRANSACTIONS. The producer retries with backoff until the markers are written."""
    tv2 = mock_cluster.state.transaction_version >= 2
    mock_cluster.create_topic("busy", partitions=1)
    producer = make_producer(transaction_retry_backoff_ms=50, retry_backoff_ms=50,
                             retry_backoff_max_ms=50, linger_ms=0)
    producer.init_transactions()
    mock_cluster.hold_markers("tx-edge")
    with producer.transaction():
        producer.send("busy", b"first", partition=0)
    described = mock_cluster.describe_transaction("tx-edge")
    assert described is not None and described["state"] == "PrepareCommit"

    api = "Produce" if tv2 else "AddPartitionsToTxn"

    def refused(e: RequestLogEntry) -> bool:
        return e.api == api and CONCURRENT_TRANSACTIONS in e.error_codes

    since = mock_cluster.requests.next_seq()
    producer.begin_transaction()
    second = producer.send("busy", b"second", partition=0)
    first_refusal = mock_cluster.wait_for_request(refused, timeout=10, since=since)
    mock_cluster.wait_for_request(refused, timeout=10, since=first_refusal.seq + 1)  # retried
    assert not second.done()
    mock_cluster.release_markers()
    producer.commit_transaction(10)
    assert second.get(1).offset == 2  # after "first" and its COMMIT marker

    attempts = [e for e in mock_cluster.request_log if e.seq >= since and e.api == api]
    refusals = [e for e in attempts if refused(e)]
    assert len(refusals) >= 2 and not attempts[-1].error_codes
    gaps = [arrival_times[b.seq] - arrival_times[a.seq] for a, b in itertools.pairwise(attempts)]
    assert min(gaps) >= 0.04, gaps  # backoff (50 ms configured) between every attempt
    assert read_committed_via_kafka_python(mock_cluster, "busy", 1, 2) == [b"first", b"second"]


@pytest.mark.parametrize("mock_cluster", [1], indirect=True, ids=["tv1"])
def test_injected_concurrent_transactions_on_add_partitions_are_retried(
        mock_cluster: MockCluster, make_producer: Any, arrival_times: dict[int, float]) -> None:
    mock_cluster.create_topic("busy1", partitions=1)
    producer = make_producer(transaction_retry_backoff_ms=30)
    producer.init_transactions()
    mock_cluster.inject_error("AddPartitionsToTxn", CONCURRENT_TRANSACTIONS, count=3)
    since = mock_cluster.requests.next_seq()
    with producer.transaction():
        future = producer.send("busy1", b"v", partition=0)
    assert future.get(1).offset == 0
    adds = [e for e in mock_cluster.request_log if e.seq >= since and e.api == "AddPartitionsToTxn"]
    assert [e.error_codes for e in adds] == [(51,), (51,), (51,), ()]
    gaps = [arrival_times[b.seq] - arrival_times[a.seq] for a, b in itertools.pairwise(adds)]
    assert min(gaps) >= 0.025, gaps
    produce = next(e for e in mock_cluster.request_log if e.seq >= since and e.api == "Produce")
    assert produce.seq > adds[-1].seq  # nothing produced before the partition was added
    assert read_committed_via_kafka_python(mock_cluster, "busy1", 1, 1) == [b"v"]


# ---------------------------------------------------------------- (b) TV2 epoch exhaustion

@pytest.mark.parametrize("mock_cluster", [2], indirect=True, ids=["tv2"])
def test_tv2_epoch_exhaustion_rotates_to_a_new_producer_id(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("rotate", partitions=2)
    make_producer("tx-rotate").init_transactions()  # registers the id with the coordinator
    mock_cluster.set_producer_epoch("tx-rotate", MAX_EPOCH - 2)
    producer = make_producer("tx-rotate")
    producer.init_transactions()  # bumps to the last epoch a client may hold
    old_pid = producer.producer_id
    assert producer.epoch == MAX_EPOCH - 1
    with producer.transaction():
        producer.send("rotate", b"last-epoch-0", partition=0)
        producer.send("rotate", b"last-epoch-1", partition=1)
    assert producer.producer_id != old_pid and producer.epoch == 0
    with producer.transaction():
        producer.send("rotate", b"new-id-0", partition=0)
        producer.send("rotate", b"new-id-1", partition=1)
    assert producer.producer_id != old_pid and producer.epoch == 1
    ends = [e for e in mock_cluster.request_log if e.api == "EndTxn"]
    assert [(e.fields["producer_id"], e.fields["producer_epoch"]) for e in ends[-2:]] == [
        (old_pid, MAX_EPOCH - 1), (producer.producer_id, 0)]
    new_batches = [b for e in mock_cluster.request_log if e.api == "Produce"
                   for b in e.fields["batches"] if b[2] == producer.producer_id]
    assert new_batches and all(b[3] == 0 and b[4] == 0 for b in new_batches)  # epoch 0, sequences reset
    assert sorted(read_committed_via_kafka_python(mock_cluster, "rotate", 2, 4)) == [
        b"last-epoch-0", b"last-epoch-1", b"new-id-0", b"new-id-1"]


def test_set_producer_epoch_rejects_bad_input(mock_cluster: MockCluster, make_producer: Any) -> None:
    with pytest.raises(ValueError, match="never initialised"):
        mock_cluster.set_producer_epoch("tx-unknown", 5)
    producer = make_producer("tx-set")
    producer.init_transactions()
    with pytest.raises(ValueError, match="epoch must be"):
        mock_cluster.set_producer_epoch("tx-set", MAX_EPOCH)
    producer.begin_transaction()
    producer.send("set", b"x", partition=0).get(5)
    with pytest.raises(ValueError, match="idle"):
        mock_cluster.set_producer_epoch("tx-set", 100)


# ---------------------------------------------------------------- (c) bounded under a black hole

def _assert_within(bound_s: float, call: Callable[[], object],
                   raises: type[BaseException] | None = errors.TimeoutError) -> None:
    start = time.monotonic()
    if raises is None:
        call()
    else:
        with pytest.raises(raises):
            call()
    elapsed = time.monotonic() - start
    assert elapsed < bound_s + MARGIN_S, f"took {elapsed:.2f}s for a {bound_s}s bound"


def _in_transaction(make_producer: Any, cluster: MockCluster, **settings: Any) -> TransactionalProducer:
    cluster.create_topic("hole", partitions=1)
    producer: TransactionalProducer = make_producer(linger_ms=0, **settings)
    producer.init_transactions(10)  # max_block_ms is small for send(); connecting may take longer
    producer.begin_transaction()
    producer.send("hole", b"delivered", partition=0).get(5)
    return producer


@TVS
def test_init_transactions_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = make_producer()
    mock_cluster.black_hole()
    _assert_within(0.5, lambda: producer.init_transactions(timeout=0.5))
    mock_cluster.black_hole(None, enabled=False)


@TVS
def test_commit_transaction_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = _in_transaction(make_producer, mock_cluster)
    producer.send("hole", b"stuck", partition=0)
    mock_cluster.black_hole()
    _assert_within(0.5, lambda: producer.commit_transaction(timeout=0.5))


@TVS
def test_abort_transaction_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = _in_transaction(make_producer, mock_cluster)
    mock_cluster.black_hole()
    _assert_within(0.5, lambda: producer.abort_transaction(timeout=0.5))


def test_flush_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = _in_transaction(make_producer, mock_cluster)
    mock_cluster.black_hole()
    producer.send("hole", b"stuck", partition=0)
    _assert_within(0.5, lambda: producer.flush(timeout=0.5))


def test_send_with_unknown_metadata_is_bounded_by_max_block(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = _in_transaction(make_producer, mock_cluster, max_block_ms=500)
    mock_cluster.black_hole()
    _assert_within(0.5, lambda: producer.send("never-seen", b"x"))


def test_send_with_full_buffer_is_bounded_by_max_block(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = _in_transaction(make_producer, mock_cluster, max_block_ms=500, buffer_memory=4096,
                               batch_size=1024)
    mock_cluster.black_hole()

    def fill() -> None:
        for _ in range(100):
            producer.send("hole", b"z" * 500, partition=0)

    _assert_within(0.5, fill)


def test_partitions_for_is_bounded_by_max_block(mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = _in_transaction(make_producer, mock_cluster, max_block_ms=500)
    mock_cluster.black_hole()
    _assert_within(0.5, lambda: producer.partitions_for("never-seen"))


@TVS
def test_close_is_bounded(mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = _in_transaction(make_producer, mock_cluster)
    producer.send("hole", b"stuck", partition=0)
    mock_cluster.black_hole()
    _assert_within(0.5, lambda: producer.close(timeout=0.5), raises=None)
    assert producer.closed


# ---------------------------------------------------------------- (d) calls in the wrong state

def _send_offsets(p: TransactionalProducer) -> None:
    p.send_offsets_to_transaction({TopicPartition("in", 0): 1}, "g-wrong", timeout=5)


CALLS: dict[str, Callable[[TransactionalProducer], object]] = {
    "init_transactions": lambda p: p.init_transactions(5),
    "begin_transaction": lambda p: p.begin_transaction(),
    "send": lambda p: p.send("wrong", b"x", partition=0),
    "send_offsets_to_transaction": _send_offsets,
    "commit_transaction": lambda p: p.commit_transaction(5),
    "abort_transaction": lambda p: p.abort_transaction(5),
    "prepare_transaction": lambda p: p.prepare_transaction(5),
}


def _reach(state: str, cluster: MockCluster, make_producer: Any) -> TransactionalProducer:
    cluster.create_topic("wrong", partitions=1)
    producer: TransactionalProducer = make_producer(
        "tx-wrong", linger_ms=0, request_timeout_ms=1000, socket_connection_setup_timeout_ms=1000)
    if state == "UNINITIALIZED":
        return producer
    producer.init_transactions()
    if state == "READY":
        return producer
    producer.begin_transaction()
    if state == "IN_TRANSACTION":
        return producer
    if state == "COMMITTING_TRANSACTION":  # a commit that timed out is still in progress
        producer.send("wrong", b"x", partition=0).get(5)
        cluster.black_hole(cluster.coordinator_for("tx-wrong"))
        with pytest.raises(errors.TimeoutError):
            producer.commit_transaction(0.2)
        return producer
    if state == "ABORTABLE_ERROR":
        cluster.inject_error("Produce", 29)  # TOPIC_AUTHORIZATION_FAILED
        assert isinstance(producer.send("wrong", b"x", partition=0).exception(5),
                          errors.TopicAuthorizationError)
        return producer
    if state == "FATAL_ERROR":  # fenced by a newer instance
        producer.send("wrong", b"x", partition=0).get(5)
        make_producer("tx-wrong").init_transactions()
        with pytest.raises(errors.ProducerFencedError):
            producer.commit_transaction(5)
        return producer
    raise AssertionError(state)


# (state, call) -> the error a user gets; only calls that are wrong in that state. Combinations
# test_producer_txn.test_api_misuse_raises_typed_errors already checks are left out.
ILLEGAL = errors.IllegalStateError
WRONG: dict[tuple[str, str], type[errors.TxnProducerError]] = {
    ("UNINITIALIZED", "send"): ILLEGAL,
    ("UNINITIALIZED", "send_offsets_to_transaction"): ILLEGAL,
    ("UNINITIALIZED", "commit_transaction"): ILLEGAL,
    ("UNINITIALIZED", "abort_transaction"): ILLEGAL,
    ("UNINITIALIZED", "prepare_transaction"): ILLEGAL,
    ("READY", "init_transactions"): ILLEGAL,
    ("READY", "send_offsets_to_transaction"): ILLEGAL,
    ("READY", "abort_transaction"): ILLEGAL,
    ("READY", "prepare_transaction"): ILLEGAL,
    ("IN_TRANSACTION", "init_transactions"): ILLEGAL,
    ("IN_TRANSACTION", "begin_transaction"): ILLEGAL,
    ("COMMITTING_TRANSACTION", "init_transactions"): ILLEGAL,
    ("COMMITTING_TRANSACTION", "begin_transaction"): ILLEGAL,
    ("COMMITTING_TRANSACTION", "send"): ILLEGAL,
    ("COMMITTING_TRANSACTION", "send_offsets_to_transaction"): ILLEGAL,
    ("COMMITTING_TRANSACTION", "abort_transaction"): ILLEGAL,
    ("COMMITTING_TRANSACTION", "prepare_transaction"): ILLEGAL,
    # after an abortable error only abort_transaction() is allowed; the other calls re-raise the
    # error that broke the transaction (KIP-1050: the class tells what to do), init is illegal
    ("ABORTABLE_ERROR", "init_transactions"): ILLEGAL,
    ("ABORTABLE_ERROR", "begin_transaction"): errors.AbortableError,
    ("ABORTABLE_ERROR", "send"): errors.AbortableError,
    ("ABORTABLE_ERROR", "send_offsets_to_transaction"): errors.AbortableError,
    ("ABORTABLE_ERROR", "commit_transaction"): errors.AbortableError,
    ("ABORTABLE_ERROR", "prepare_transaction"): errors.AbortableError,
    # after fencing every transactional call re-raises the fatal error: close the producer
    **{("FATAL_ERROR", call): errors.ProducerFencedError for call in CALLS},
}


@pytest.mark.parametrize(("state", "call"), sorted(WRONG), ids=[f"{s}-{c}" for s, c in sorted(WRONG)])
def test_call_in_wrong_state_fails_naming_the_state(
        mock_cluster: MockCluster, make_producer: Any, state: str, call: str) -> None:
    producer = _reach(state, mock_cluster, make_producer)
    assert producer.state.name == state
    expected = WRONG[(state, call)]
    with pytest.raises(expected) as raised:
        CALLS[call](producer)
    assert state in str(raised.value)
    if expected is ILLEGAL:
        assert producer.state.name == state  # a refused call changes nothing


@pytest.mark.parametrize("state", ["READY", "IN_TRANSACTION", "ABORTABLE_ERROR", "FATAL_ERROR"])
def test_every_call_after_close_raises_closed_error(
        mock_cluster: MockCluster, make_producer: Any, state: str) -> None:
    producer = _reach(state, mock_cluster, make_producer)
    producer.close(5)
    calls: dict[str, Callable[[TransactionalProducer], object]] = {
        **CALLS, "flush": lambda p: p.flush(1), "partitions_for": lambda p: p.partitions_for("wrong")}
    for name, call in calls.items():
        with pytest.raises(errors.ClosedError, match="closed"):
            call(producer)
            pytest.fail(f"{name}() did not raise on a closed producer")
    producer.close(1)  # idempotent


def test_refused_call_in_a_transaction_leaves_it_committable(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    producer = _reach("IN_TRANSACTION", mock_cluster, make_producer)
    producer.send("wrong", b"kept", partition=0)
    for call in ("init_transactions", "begin_transaction"):
        with pytest.raises(errors.IllegalStateError):
            CALLS[call](producer)
    producer.commit_transaction(5)
    assert [r.value for r in mock_cluster.partition_records("wrong", 0, read_committed=True)] == [b"kept"]


def test_commit_waited_out_after_a_timeout_completes(mock_cluster: MockCluster, make_producer: Any) -> None:
    """A commit that timed out is resumed (not restarted) by calling commit_transaction() again."""
    producer = _reach("COMMITTING_TRANSACTION", mock_cluster, make_producer)
    mock_cluster.black_hole(None, enabled=False)
    producer.commit_transaction(10)  # the lost EndTxn is re-sent after request_timeout_ms
    assert producer.state.name == "READY"
    assert [r.value for r in mock_cluster.partition_records("wrong", 0, read_committed=True)] == [b"x"]
