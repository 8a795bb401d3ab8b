"""TransactionManager: retry backoffs, transaction version switches, abort clean-up, closing,
malformed answers, threads.

Driven like the Sender drives it (``tests/_support/txn_driver.py``).
"""

from __future__ import annotations

import threading

import pytest
from kafka.protocol.producer.transaction import (
    AddPartitionsToTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)
from kafka.structs import OffsetAndMetadata, TopicPartition

from tests._support import txn_driver as drv
from txnproducer import errors
from txnproducer._internal.protocol.end_txn import EndTxnRequestData
from txnproducer._internal.txn.state import State

# --- retries, version switches, abort clean-up ---------------------------------------------------


def test_sender_retry_backoff_rules() -> None:
    tm, clock, _ = drv.make_tm()
    tm.initialize_transactions()
    init = tm.next_request(False)
    assert init is not None and isinstance(init.request, InitProducerIdRequest)
    tm.lookup_coordinator("transaction", drv.TID)
    tm.lookup_coordinator("transaction", drv.TID)  # deduplicated
    tm.retry(init)
    assert init.not_before == clock.now  # paced by the FindCoordinator queued ahead of it
    find = drv.take(tm)
    find.handle_response(drv.find_coordinator_ok(drv.TID))
    again = tm.next_request(False)
    assert again is init
    tm.retry(again)  # e.g. the coordinator's connection is not ready: a real backoff this time
    assert tm.next_request_delay_ms() == pytest.approx(100.0)
    assert tm.next_request(False) is None


def test_transaction_version_change_waits_for_the_next_transaction() -> None:
    tm, _, _ = drv.in_transaction(tv=1)
    tm.set_transaction_version(2)
    assert tm.transaction_version == 1  # the open transaction stays TV1
    tm.maybe_add_partition(drv.TP1)
    add = drv.take(tm)
    assert isinstance(add.request, AddPartitionsToTxnRequest)
    add.handle_response(drv.add_partitions({drv.TP1: 0}))
    drv.commit(tm, drv.end_txn(version=4))
    assert tm.transaction_version == 2
    tm.begin_transaction()
    tm.maybe_add_partition(drv.TP0)
    assert tm.is_send_to_partition_allowed(drv.TP0) and tm.next_request(False) is None


def test_abort_drops_unsent_offset_commits() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    offsets = tm.send_offsets_to_transaction({drv.TP0: OffsetAndMetadata(1, "", -1)}, "g1")
    abort = tm.begin_abort()
    with pytest.raises(errors.TransactionAbortedError, match="abort_transaction"):
        offsets.wait(1.0)
    drv.take(tm).handle_response(drv.end_txn(producer_id=7, epoch=1))  # offsets were requested: not empty
    abort.wait(1.0)


def test_tv1_epoch_bump_fenced_is_fatal() -> None:
    tm, _, _ = drv.in_transaction(tv=1)
    drv.fail_batch(tm, errors.DeliveryTimeoutError("expired"))
    result = tm.begin_abort()
    drv.take(tm).handle_response(drv.end_txn(version=4))
    drv.take(tm).handle_response(drv.init_pid(code=90, producer_id=-1, epoch=-1, version=4))
    with pytest.raises(errors.ProducerFencedError):
        result.wait(1.0)
    assert tm.state is State.FATAL_ERROR


def test_response_after_close_is_ignored() -> None:
    tm, _, _ = drv.make_tm()
    tm.initialize_transactions()
    find = drv.take(tm)
    tm.close()
    find.handle_response(drv.find_coordinator_ok(drv.TID))
    assert tm.coordinator("transaction") is None and not tm.has_in_flight_request()


def test_kafka_python_errors_are_classified_by_code() -> None:
    import kafka.errors as kerrors

    tm, _, _ = drv.in_transaction(tv=2)
    drv.fail_batch(tm, kerrors.OutOfOrderSequenceNumberError())
    assert tm.state is State.ABORTABLE_ERROR
    assert isinstance(tm.last_error, errors.TransactionAbortableError)
    assert tm.last_error.error_code == 45
    tm2, _, _ = drv.in_transaction(tv=2)
    drv.fail_batch(tm2, kerrors.ProducerFencedError())
    assert tm2.state is State.FATAL_ERROR and isinstance(tm2.last_error, errors.ProducerFencedError)


def test_malformed_response_fails_the_waiter_instead_of_hanging() -> None:
    tm, _, _ = drv.make_tm()
    result = tm.initialize_transactions()
    drv.take(tm).handle_response(object())  # not a FindCoordinatorResponse
    with pytest.raises(errors.FatalError, match="FindCoordinator response"):
        result.wait(1.0)
    assert tm.state is State.FATAL_ERROR


def test_sequence_book_wraps_when_pulling_sequences_back() -> None:
    from txnproducer._internal.protocol.record_batch import add_sequence
    from txnproducer._internal.txn.sequences import SequenceBook

    book = SequenceBook()
    book.assign(drv.TP0, 2**31 - 2)  # 0 .. 2**31-3
    book.completed(drv.TP0, 0, 2**31 - 2, base_offset=0)
    first = book.assign(drv.TP0, 4)  # 2**31-2, 2**31-1, 0, 1
    second = book.assign(drv.TP0, 2)  # 2, 3
    assert (first, second, book.next_sequence(drv.TP0)) == (2**31 - 2, 2, 4)
    book.failed(drv.TP0, first, 4, adjust=True)
    assert book.next_sequence(drv.TP0) == 0
    assert book.in_flight_sequences(drv.TP0) == [add_sequence(2, -4)] == [2**31 - 2]
    book.completed(drv.TP0, 2**31 - 2, 2, base_offset=10)
    assert book.last_acked_sequence(drv.TP0) == 2**31 - 1
    assert book.is_next_sequence(drv.TP0, 0)  # after 2**31-1 comes 0


def test_concurrent_sends_from_many_threads_all_get_added() -> None:
    tm, _, _ = drv.initialized(tv=1)
    tm.begin_transaction()
    partitions = [TopicPartition("orders", p) for p in range(40)]
    start = threading.Barrier(4)

    def app(chunk: list[TopicPartition]) -> None:
        start.wait(5.0)
        for tp in chunk:
            tm.maybe_add_partition(tp)

    threads = [threading.Thread(target=app, args=(partitions[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5.0)
    while tm.has_partitions_to_add():
        handler = drv.take(tm)
        handler.handle_response(drv.add_partitions(dict.fromkeys(handler.partitions, 0)))  # type: ignore[attr-defined]
    assert all(tm.is_send_to_partition_allowed(tp) for tp in partitions)


def test_bad_offsets_are_rejected_in_the_calling_thread() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    with pytest.raises(ValueError, match="orders-0"):
        tm.send_offsets_to_transaction({drv.TP0: OffsetAndMetadata(-5, "", -1)}, "g1")
    with pytest.raises(TypeError):
        tm.send_offsets_to_transaction({("orders", 0): OffsetAndMetadata(5, "", -1)}, "g1")
    with pytest.raises(TypeError):
        tm.send_offsets_to_transaction({drv.TP0: OffsetAndMetadata(5, "", -1)}, 42)
    assert tm.next_request(False) is None and tm.state is State.IN_TRANSACTION
    result = tm.send_offsets_to_transaction({drv.TP0: 9}, "g1")  # a bare offset is accepted
    drv.take(tm).handle_response(drv.find_coordinator_ok("g1"))
    handler = drv.take(tm)
    assert handler.request.topics[0].partitions[0].committed_offset == 9
    handler.handle_response(drv.txn_offset_commit({drv.TP0: 0}))
    result.wait(1.0)


def test_broker_versions_are_checked_once_per_announcement_and_again_when_announced_again() -> None:
    """The TV2 version check runs at the first point between transactions after the Sender announces
    the broker's features; it is not repeated at every transaction (the Sender announces again
    whenever the features change)."""
    caps = {TxnOffsetCommitRequest.API_KEY: 5, EndTxnRequestData.API_KEY: 5}
    asked: list[int] = []

    def max_versions(api_key: int) -> int | None:
        asked.append(api_key)
        return caps.get(api_key)

    tm, _, _ = drv.initialized(2, max_versions=max_versions)
    assert tm.transaction_version == 2
    asked.clear()
    epoch = 0
    for _ in range(3):
        tm.begin_transaction()
        tm.maybe_add_partition(drv.TP0)
        epoch += 1
        drv.commit(tm, drv.end_txn(producer_id=7, epoch=epoch))
    assert TxnOffsetCommitRequest.API_KEY not in asked  # not looked up again per transaction
    caps[TxnOffsetCommitRequest.API_KEY] = 3  # a broker without TxnOffsetCommit v5 now
    tm.begin_transaction()
    tm.maybe_add_partition(drv.TP0)
    tm.set_transaction_version(2)  # the Sender announces the new features mid-transaction
    assert tm.transaction_version == 2  # the open transaction keeps its version
    drv.commit(tm, drv.end_txn(producer_id=7, epoch=epoch + 1))
    assert tm.transaction_version == 1  # checked once the transaction ended
