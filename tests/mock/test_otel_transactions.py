"""A transaction's trace on MockCluster: the span trees of a committed, an aborted and a fenced transaction.

What an operator reads from them - which transaction, how long each phase took, why it aborted - is
asserted as names, parents, attributes, status and events (docs/guide/observability.md).
"""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (the dev extra)")

from tests._support.otel import Telemetry, span_tree
from txnproducer import TransactionalProducer, errors
from txnproducer.otel import names
from txnproducer.testing import MockCluster

TOPIC = "otel-txn"


@pytest.fixture
def cluster() -> MockCluster:
    with MockCluster(num_brokers=1) as mock:
        mock.create_topic(TOPIC, partitions=2)
        yield mock


def _producer(cluster: MockCluster, telemetry: Telemetry, tid: str, **extra: object) -> TransactionalProducer:
    return TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=tid,
                                 **telemetry.providers, **extra)


def test_committed_transaction(cluster: MockCluster, telemetry: Telemetry) -> None:
    with _producer(cluster, telemetry, "tx-commit", client_id="app-1") as p:
        p.init_transactions()
        with p.transaction():
            for i in range(6):
                p.send(TOPIC, b"value-%d" % i, key=b"key-%d" % i)
            p.send_offsets_to_transaction({("in", 0): 42}, "group-a")
        pid, epoch = p.producer_id, p.epoch
    txn = telemetry.one(names.SPAN_TRANSACTION)
    assert txn.parent is None  # nothing was current when the application began it
    assert txn.status.is_unset
    attrs = dict(txn.attributes or {})
    assert attrs[names.MESSAGING_SYSTEM] == "kafka"
    assert attrs[names.MESSAGING_CLIENT_ID] == "app-1"
    assert attrs[names.TRANSACTIONAL_ID] == "tx-commit"
    assert attrs[names.PRODUCER_ID] == pid
    assert attrs[names.PRODUCER_EPOCH] == epoch - 1  # TV2: the commit bumped it for the next transaction
    assert attrs[names.TRANSACTION_VERSION] == 2
    assert attrs[names.RECORD_COUNT] == 6
    assert attrs[names.OUTCOME] == names.OUTCOME_COMMITTED
    assert names.ABORT_REASON not in attrs

    sends = telemetry.children(txn, names.send_span_name(TOPIC))
    assert sum(int((s.attributes or {})[names.MESSAGING_BATCH_MESSAGE_COUNT]) for s in sends) == 6
    for send in sends:
        a = dict(send.attributes or {})
        assert send.kind.name == "PRODUCER"
        assert a[names.MESSAGING_OPERATION_TYPE] == "send" and a[names.MESSAGING_DESTINATION_NAME] == TOPIC
        assert a[names.MESSAGING_DESTINATION_PARTITION_ID] in ("0", "1")
        assert a[names.MESSAGING_KAFKA_OFFSET] >= 0 and a[names.SERVER_ADDRESS] == "127.0.0.1"
        # the batch ended with the broker's answer, which the EndTxn waited for
        assert send.end_time is not None and send.end_time <= telemetry.one("EndTxn").start_time

    offsets = telemetry.one(names.SPAN_SEND_OFFSETS)
    assert offsets.parent is not None and offsets.parent.span_id == txn.context.span_id
    assert (offsets.attributes or {})[names.MESSAGING_CONSUMER_GROUP_NAME] == "group-a"
    assert [s.name for s in telemetry.children(offsets)][-1] == "TxnOffsetCommit"

    commit = telemetry.one(names.SPAN_COMMIT)
    assert commit.parent is not None and commit.parent.span_id == txn.context.span_id
    assert commit.kind.name == "CLIENT" and commit.status.is_unset
    end_txn = telemetry.children(commit, "EndTxn")
    assert len(end_txn) == 1
    assert (end_txn[0].attributes or {})[names.COMMIT] is True
    assert (end_txn[0].attributes or {})[names.SERVER_PORT] == cluster.broker_address(
        cluster.coordinator_for("tx-commit"))[1]
    # the transaction ends after its commit and contains it
    assert txn.start_time <= commit.start_time and commit.end_time <= txn.end_time


def test_aborted_transaction_says_why(cluster: MockCluster, telemetry: Telemetry) -> None:
    with _producer(cluster, telemetry, "tx-abort") as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(TOPIC, b"v", partition=0).get(10)
        p.abort_transaction()
        cluster.inject_error("Produce", 29)  # TOPIC_AUTHORIZATION_FAILED: the transaction becomes abortable
        p.begin_transaction()
        p.send(TOPIC, b"w", partition=1)  # its batch fails while the commit waits for it
        with pytest.raises(errors.AbortableError):
            p.commit_transaction()
        p.abort_transaction()
    by_app, by_error = sorted(telemetry.spans(names.SPAN_TRANSACTION), key=lambda s: s.start_time or 0)
    assert (by_app.attributes or {})[names.OUTCOME] == names.OUTCOME_ABORTED
    assert (by_app.attributes or {})[names.ABORT_REASON] == names.ABORT_BY_APPLICATION
    assert by_app.status.is_unset  # the application chose to abort: not an error

    a = dict(by_error.attributes or {})
    assert a[names.OUTCOME] == names.OUTCOME_ABORTED
    assert a[names.ABORT_REASON] == "TOPIC_AUTHORIZATION_FAILED"
    assert a[names.ERROR_TYPE] == "TOPIC_AUTHORIZATION_FAILED"
    assert by_error.status.status_code.name == "ERROR"
    events = [e for e in by_error.events if e.name == names.EVENT_ABORTABLE_ERROR]
    assert len(events) == 1 and (events[0].attributes or {})[names.ERROR_TYPE] == "TOPIC_AUTHORIZATION_FAILED"
    failed_batch = telemetry.children(by_error, names.send_span_name(TOPIC))
    assert [s.status.status_code.name for s in failed_batch] == ["ERROR"]
    commit = telemetry.children(by_error, names.SPAN_COMMIT)
    assert [s.status.status_code.name for s in commit] == ["ERROR"]  # the commit that could not be
    assert (commit[0].attributes or {})[names.ERROR_TYPE] == "TOPIC_AUTHORIZATION_FAILED"
    assert telemetry.children(commit[0]) == []  # no EndTxn(commit) went out
    abort = telemetry.children(by_error, names.SPAN_ABORT)
    assert len(abort) == 1 and (abort[0].attributes or {})[names.ABORT_REASON] == "TOPIC_AUTHORIZATION_FAILED"
    assert [s.name for s in telemetry.children(abort[0])] == ["EndTxn"]


def test_fenced_transaction(cluster: MockCluster, telemetry: Telemetry) -> None:
    with _producer(cluster, telemetry, "tx-fenced") as zombie:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send(TOPIC, b"zombie", partition=0).get(10)
        with _producer(cluster, telemetry, "tx-fenced") as successor:
            successor.init_transactions()  # fences the zombie and aborts its transaction
        with pytest.raises(errors.ProducerFencedError):
            zombie.commit_transaction()
    txn = telemetry.one(names.SPAN_TRANSACTION)
    a = dict(txn.attributes or {})
    assert a[names.OUTCOME] == names.OUTCOME_FENCED
    assert a[names.ERROR_TYPE] in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
    assert txn.status.status_code.name == "ERROR"
    commit = telemetry.children(txn, names.SPAN_COMMIT)
    assert len(commit) == 1 and commit[0].status.status_code.name == "ERROR"
    end_txn = telemetry.children(commit[0], "EndTxn")
    assert end_txn and (end_txn[-1].attributes or {})[names.ERROR_TYPE] in ("PRODUCER_FENCED",
                                                                            "INVALID_PRODUCER_EPOCH")
    # the successor's init_transactions is its own trace: no transaction of its own
    inits = telemetry.spans(names.SPAN_INIT)
    assert len(inits) == 2 and all(s.parent is None for s in inits)


def test_retried_end_txn_is_a_retry_event_and_one_span_per_attempt(cluster: MockCluster,
                                                                  telemetry: Telemetry) -> None:
    with _producer(cluster, telemetry, "tx-retry") as p:
        p.init_transactions()
        cluster.inject_error("EndTxn", [51, 51])  # CONCURRENT_TRANSACTIONS twice, then the real answer
        with p.transaction():
            p.send(TOPIC, b"v", partition=0)
    commit = telemetry.one(names.SPAN_COMMIT)
    attempts = sorted(telemetry.children(commit, "EndTxn"), key=lambda s: s.start_time or 0)
    assert [(s.attributes or {})[names.ATTEMPT] for s in attempts] == [1, 2, 3]
    assert [(s.attributes or {}).get(names.ERROR_TYPE) for s in attempts] == [
        "CONCURRENT_TRANSACTIONS", "CONCURRENT_TRANSACTIONS", None]
    retries = [dict(e.attributes or {}) for e in commit.events if e.name == names.EVENT_RETRY]
    assert retries == [
        {names.REQUEST: "EndTxn", names.ATTEMPT: 2, names.ERROR_TYPE: "CONCURRENT_TRANSACTIONS"},
        {names.REQUEST: "EndTxn", names.ATTEMPT: 3, names.ERROR_TYPE: "CONCURRENT_TRANSACTIONS"},
    ]
    assert (commit.attributes or {})[names.ATTEMPTS] == 3
    assert commit.status.is_unset
    assert (telemetry.one(names.SPAN_TRANSACTION).attributes or {})[names.OUTCOME] == names.OUTCOME_COMMITTED


def test_the_transaction_is_a_child_of_the_applications_span(cluster: MockCluster,
                                                             telemetry: Telemetry) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    with _producer(cluster, telemetry, "tx-parent") as p:
        p.init_transactions()
        with tracer.start_as_current_span("handle request") as request, p.transaction():
            p.send(TOPIC, b"v", partition=0)
    txn = telemetry.one(names.SPAN_TRANSACTION)
    assert txn.parent is not None and txn.parent.span_id == request.get_span_context().span_id
    assert txn.context.trace_id == request.get_span_context().trace_id
    # sends inside the transaction belong to it, even though "handle request" is what is current
    (send,) = telemetry.spans(names.send_span_name(TOPIC))
    assert send.parent is not None and send.parent.span_id == txn.context.span_id
    print(span_tree(telemetry.spans()))


def test_the_coordinator_lookup_through_a_bootstrap_server_is_traced(cluster: MockCluster,
                                                                    telemetry: Telemetry) -> None:
    # before the first Metadata answer the only brokers known are the bootstrap servers, whose ids
    # nobody knows yet: the FindCoordinator sent to one lost its span (the hook failed on the
    # connection's name, "bootstrap-0") and init_transactions showed no lookup. The first Metadata
    # answer held (less than the second after which a broker counts as silent) keeps the lookup on
    # the bootstrap connection: its answer queues behind the held one there, as on a broker.
    cluster.delay_responses("Metadata", 400, count=1)
    with _producer(cluster, telemetry, "tx-lookup") as p:
        p.init_transactions()
    init = telemetry.one(names.SPAN_INIT)
    (lookup,) = telemetry.children(init, "FindCoordinator")
    attrs = dict(lookup.attributes or {})
    assert attrs[names.SERVER_ADDRESS] == "127.0.0.1" and attrs[names.REQUEST] == "FindCoordinator"
    assert names.BROKER_ID not in attrs
    assert [s.name for s in telemetry.children(init)] == ["FindCoordinator", "InitProducerId"]


def test_a_calls_span_exists_before_the_sender_can_take_its_requests(cluster: MockCluster,
                                                                     telemetry: Telemetry) -> None:
    # the Sender may run the whole call (FindCoordinator, TxnOffsetCommit) between the request's queueing
    # and the span's start: a CI run saw send_offsets_to_transaction's span without its group, its
    # requests traced under the transaction instead. While the span is made, no other thread may take
    # a request from the transaction manager (the Sender does so under its lock).
    with _producer(cluster, telemetry, "tx-order") as p:
        p.init_transactions()
        tm = p._tm
        probes: list[tuple[str, bool]] = []
        hooks = p._telemetry
        assert hooks is not None
        started = hooks.operation_started

        def probe(op: str, result: object) -> None:
            free: list[bool] = []

            def try_lock() -> None:
                took = tm.lock.acquire(blocking=False)
                if took:
                    tm.lock.release()
                free.append(took)

            other = threading.Thread(target=try_lock)
            other.start()
            other.join()
            probes.append((op, free[0]))
            started(op, result)

        hooks.operation_started = probe  # type: ignore[method-assign]
        with p.transaction():
            p.send(TOPIC, b"v", partition=0)
            p.send_offsets_to_transaction({("in", 0): 42}, "group-a")
    assert probes == [("offsets", False), ("commit", False)]
    offsets = telemetry.one(names.SPAN_SEND_OFFSETS)
    assert (offsets.attributes or {})[names.MESSAGING_CONSUMER_GROUP_NAME] == "group-a"
    assert [s.name for s in telemetry.children(offsets)] == ["FindCoordinator", "TxnOffsetCommit"]
