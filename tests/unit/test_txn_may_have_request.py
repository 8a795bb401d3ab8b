"""TransactionManager.may_have_request: the Sender's lock-free look before ``next_request``.

The Sender skips ``next_request`` (and its lock) when this says False, so a False while a request
is sendable would stall that request until something else wakes the Sender. Each test plays the
Sender through a state (``tests/_support/txn_driver.py``) and checks both answers agree.
"""

from __future__ import annotations

from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest

from tests._support import txn_driver as drv
from txnproducer._internal.protocol.end_txn import EndTxnRequestData


def test_false_only_when_next_request_has_nothing() -> None:
    tm, _, _ = drv.make_tm(tv=2)
    assert not tm.may_have_request(False)  # nothing queued
    assert tm.next_request(False) is None
    tm.initialize_transactions()
    assert tm.may_have_request(False)  # FindCoordinator queued
    find = drv.take(tm)
    assert not tm.may_have_request(False)  # one in flight: the next waits for its answer
    assert tm.next_request(False) is None
    find.handle_response(drv.find_coordinator_ok(drv.TID))
    assert tm.may_have_request(False)  # InitProducerId queued
    init = drv.take(tm)
    init.handle_response(drv.init_pid(producer_id=7, epoch=0, version=init.request.version))
    assert not tm.may_have_request(False)
    assert tm.next_request(False) is None


def test_end_txn_waits_for_incomplete_batches() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    tm.begin_commit()
    assert not tm.may_have_request(True)  # the transaction's batches are still on their way
    assert tm.next_request(True) is None
    assert tm.may_have_request(False)
    handler = tm.next_request(False)
    assert handler is not None and isinstance(handler.request, EndTxnRequestData)


def test_new_partition_under_tv1_is_a_request() -> None:
    tm, _, _ = drv.in_transaction(tv=1)
    tm.maybe_add_partition(drv.TP1)
    assert tm.may_have_request(False)
    handler = tm.next_request(False)
    assert handler is not None and isinstance(handler.request, AddPartitionsToTxnRequest)


def test_a_backing_off_request_is_left_to_next_request() -> None:
    """True is allowed to be wrong (next_request decides under its lock), False is not."""
    tm, clock, _ = drv.make_tm(tv=2)
    tm.initialize_transactions()
    find = drv.take(tm)
    tm.retry(find)  # queued again after retry_backoff_ms (100 ms here)
    assert tm.may_have_request(False)
    assert tm.next_request(False) is None
    clock.advance_ms(100)
    assert tm.next_request(False) is find


def test_false_once_closed() -> None:
    tm, _, _ = drv.make_tm(tv=2)
    tm.initialize_transactions()
    tm.close()
    assert not tm.may_have_request(False)
    assert tm.next_request(False) is None
