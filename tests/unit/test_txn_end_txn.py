"""TransactionManager: EndTxn answers: fatal, abortable and retriable codes, a failed abort called again.

Driven like the Sender drives it (``tests/_support/txn_driver.py``).
"""

from __future__ import annotations

import pytest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from tests._support import txn_driver as drv
from txnproducer import errors
from txnproducer._internal.txn.state import State

# --- EndTxn errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "exc_type"),
    [
        (48, errors.InvalidTxnStateError),
        (90, errors.ProducerFencedError),
        (47, errors.ProducerFencedError),
        (53, errors.TransactionalIdAuthorizationError),
        (35, errors.UnsupportedVersionError),
        (49, errors.FatalError),
    ],
)
def test_end_txn_fatal_errors(code: int, exc_type: type[Exception]) -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    result = tm.begin_commit()
    drv.take(tm).handle_response(drv.end_txn(code=code))
    with pytest.raises(exc_type):
        result.wait(1.0)
    assert tm.state is State.FATAL_ERROR


@pytest.mark.parametrize(
    ("code", "exc_type"), [(120, errors.TransactionAbortableError), (59, errors.UnknownProducerIdError)]
)
def test_end_txn_commit_abortable_errors_then_abort(code: int, exc_type: type[Exception]) -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    result = tm.begin_commit()
    drv.take(tm).handle_response(drv.end_txn(code=code))
    with pytest.raises(exc_type):
        result.wait(1.0)
    assert tm.state is State.ABORTABLE_ERROR
    abort = tm.begin_abort()
    handler = drv.take(tm)
    assert handler.request.committed is False
    handler.handle_response(drv.end_txn(producer_id=7, epoch=1))
    abort.wait(1.0)
    assert tm.state is State.READY


def test_failed_abort_can_be_called_again() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    result = tm.begin_abort()
    drv.take(tm).handle_response(drv.end_txn(code=59))  # UNKNOWN_PRODUCER_ID: abortable
    with pytest.raises(errors.UnknownProducerIdError):
        result.wait(1.0)
    again = tm.begin_abort()
    drv.take(tm).handle_response(drv.end_txn(producer_id=7, epoch=1))
    again.wait(1.0)
    assert tm.state is State.READY


def test_transaction_abortable_answering_an_abort_is_fatal() -> None:
    """Java 4.1 (KAFKA-19250): an abort answered TRANSACTION_ABORTABLE cannot be retried by
    aborting again (that would loop); the producer is done and a new instance cleans up."""
    tm, _, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    result = tm.begin_abort()
    drv.take(tm).handle_response(drv.end_txn(code=120))
    with pytest.raises(errors.FatalError, match="TRANSACTION_ABORTABLE to EndTxn"):
        result.wait(1.0)
    assert tm.state is State.FATAL_ERROR


def test_transaction_abortable_answering_a_commit_is_abortable() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    result = tm.begin_commit()
    drv.take(tm).handle_response(drv.end_txn(code=120))
    with pytest.raises(errors.TransactionAbortableError):
        result.wait(1.0)
    assert tm.state is State.ABORTABLE_ERROR


def test_end_txn_concurrent_transactions_retries_after_transaction_backoff() -> None:
    tm, clock, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    result = tm.begin_commit()
    drv.take(tm).handle_response(drv.end_txn(code=51))
    assert tm.next_request(False) is None
    clock.advance_ms(20)
    drv.take(tm).handle_response(drv.end_txn(producer_id=7, epoch=1))
    result.wait(1.0)


def test_end_txn_not_coordinator_rediscovers() -> None:
    tm, clock, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    result = tm.begin_commit()
    drv.take(tm).handle_response(drv.end_txn(code=16))
    find = drv.take(tm)
    assert isinstance(find.request, FindCoordinatorRequest)
    find.handle_response(drv.find_coordinator_ok(drv.TID, node_id=2))
    clock.advance_ms(100)
    drv.take(tm).handle_response(drv.end_txn(producer_id=7, epoch=1))
    result.wait(1.0)


# --- what a woken caller sees ---------------------------------------------------------------------


@pytest.mark.parametrize(("code", "committing", "state"), [
    (90, True, State.FATAL_ERROR),         # PRODUCER_FENCED: fatal
    (120, True, State.ABORTABLE_ERROR),    # TRANSACTION_ABORTABLE answering a commit
    (59, False, State.ABORTABLE_ERROR),    # UNKNOWN_PRODUCER_ID answering an abort: abort again
    (0, True, State.READY),
])
def test_a_caller_woken_by_the_result_sees_the_state_it_stands_for(
        code: int, committing: bool, state: State) -> None:
    """The state changes before the result completes (the Java client's order): a caller woken by
    the completion - a thread, or an event loop through add_done_callback - that reads ``state`` or
    calls ``abort_transaction()`` at once must not find the transaction still COMMITTING.
    Regression: errors completed the result first, so an awaiting coroutine saw COMMITTING."""
    tm, _, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    result = tm.begin_commit() if committing else tm.begin_abort()
    seen: list[State] = []
    result.add_done_callback(lambda: seen.append(tm.state))  # runs where the result completes
    drv.take(tm).handle_response(drv.end_txn(code=code, producer_id=7, epoch=1))
    assert seen == [state]


def test_a_caller_woken_by_a_refused_init_sees_uninitialized() -> None:
    tm, _, _ = drv.make_tm(tv=2)
    result = tm.initialize_transactions()
    drv.take(tm).handle_response(drv.find_coordinator_ok(drv.TID))
    seen: list[State] = []
    result.add_done_callback(lambda: seen.append(tm.state))
    drv.take(tm).handle_response(drv.init_pid(code=53))  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert seen == [State.UNINITIALIZED]
    with pytest.raises(errors.TransactionalIdAuthorizationError):
        result.wait(0)
