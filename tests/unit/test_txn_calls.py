"""TransactionManager: application calls in every state, KIP-691 repeated calls, send priorities, metrics.

Driven like the Sender drives it (``tests/_support/txn_driver.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.structs import OffsetAndMetadata

from tests._support import txn_driver as drv
from txnproducer import errors
from txnproducer._internal import metrics as m
from txnproducer._internal.txn.handler import Priority
from txnproducer._internal.txn.manager import TransactionManager
from txnproducer._internal.txn.state import State

# --- illegal calls in every state ----------------------------------------------------------------


def drive_to(state: State) -> TransactionManager:
    if state is State.UNINITIALIZED:
        return drv.make_tm()[0]
    if state is State.INITIALIZING:
        tm = drv.make_tm()[0]
        tm.initialize_transactions()
        return tm
    tm = drv.initialized()[0]
    if state is State.READY:
        return tm
    tm.begin_transaction()
    tm.maybe_add_partition(drv.TP0)
    if state is State.IN_TRANSACTION:
        return tm
    if state is State.COMMITTING_TRANSACTION:
        tm.begin_commit()
    elif state is State.ABORTING_TRANSACTION:
        tm.begin_abort()
    elif state is State.ABORTABLE_ERROR:
        tm.transition_to_abortable_error(errors.TransactionAbortableError("boom"))
    elif state is State.FATAL_ERROR:
        tm.transition_to_fatal_error(errors.ProducerFencedError("fenced"))
    assert tm.state is state
    return tm


CALLS: dict[str, Callable[[TransactionManager], object]] = {
    "init_transactions": lambda tm: tm.initialize_transactions(),
    "begin_transaction": lambda tm: tm.begin_transaction(),
    "send": lambda tm: tm.maybe_add_partition(drv.TP1),
    "send_offsets_to_transaction": lambda tm: tm.send_offsets_to_transaction(
        {drv.TP0: OffsetAndMetadata(1, "", -1)}, "g"
    ),
    "commit_transaction": lambda tm: tm.begin_commit(),
    "abort_transaction": lambda tm: tm.begin_abort(),
}
VALID = {
    State.UNINITIALIZED: {"init_transactions"},
    State.INITIALIZING: {"init_transactions"},  # re-wait of the pending call
    State.READY: {"begin_transaction"},
    State.IN_TRANSACTION: {"send", "send_offsets_to_transaction", "commit_transaction", "abort_transaction"},
    State.COMMITTING_TRANSACTION: {"commit_transaction"},  # re-wait
    State.ABORTING_TRANSACTION: {"abort_transaction"},  # re-wait
    State.ABORTABLE_ERROR: {"abort_transaction"},
    State.FATAL_ERROR: set(),
}


@pytest.mark.parametrize(
    ("state", "call"),
    [(s, c) for s in VALID for c in CALLS if c not in VALID[s]],
)
def test_illegal_calls_raise_with_state_and_remedy(state: State, call: str) -> None:
    tm = drive_to(state)
    expected: type[Exception] = errors.IllegalStateError
    if state is State.FATAL_ERROR:
        expected = errors.ProducerFencedError
    elif state is State.ABORTABLE_ERROR and call != "init_transactions":
        expected = errors.TransactionAbortableError
    with pytest.raises(expected) as info:
        CALLS[call](tm)
    message = str(info.value)
    if state in (State.FATAL_ERROR, State.ABORTABLE_ERROR) and expected is not errors.IllegalStateError:
        assert state.name in message
    else:
        assert state.name in message or "previous" in message
        assert "call " in message
    assert tm.state is state  # a refused call changes nothing


@pytest.mark.parametrize(("state", "call"), [(s, c) for s in VALID for c in sorted(VALID[s])])
def test_valid_calls_are_accepted(state: State, call: str) -> None:
    tm = drive_to(state)
    CALLS[call](tm)


def test_commit_in_ready_message() -> None:
    tm = drive_to(State.READY)
    with pytest.raises(
        errors.IllegalStateError, match=r"commit_transaction\(\) called in state READY.*begin_transaction\(\)"
    ):
        tm.begin_commit()


def test_send_before_init_says_call_init() -> None:
    tm = drive_to(State.UNINITIALIZED)
    with pytest.raises(errors.IllegalStateError, match=r"init_transactions\(\)"):
        tm.fail_if_not_ready_for_send()


def test_commit_timeout_blocks_other_calls_until_rewaited() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    result = tm.begin_commit()
    with pytest.raises(errors.TimeoutError, match="commit_transaction"):
        result.wait(0.0)
    assert tm.begin_commit() is result
    with pytest.raises(errors.IllegalStateError, match="commit_transaction"):
        tm.begin_abort()
    drv.take(tm).handle_response(drv.end_txn(producer_id=7, epoch=1))
    tm.begin_commit().wait(1.0)
    tm.begin_transaction()


def test_close_fails_pending_results_and_later_calls() -> None:
    tm, _, _ = drv.make_tm()
    result = tm.initialize_transactions()
    tm.close()
    with pytest.raises(errors.ClosedError):
        result.wait(1.0)
    with pytest.raises(errors.ClosedError):
        tm.initialize_transactions()
    assert tm.next_request(False) is None


# --- priorities ----------------------------------------------------------------------------------


def test_add_partitions_go_before_end_txn_and_find_coordinator_first() -> None:
    tm, _, _ = drv.initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(drv.TP0)
    tm.begin_commit()
    tm.lookup_coordinator("transaction", drv.TID)
    order = []
    for _ in range(2):
        h = drv.take(tm)
        order.append(h.priority)
        if isinstance(h.request, FindCoordinatorRequest):
            h.handle_response(drv.find_coordinator_ok(drv.TID))
        else:
            h.handle_response(drv.add_partitions({drv.TP0: 0}))
    order.append(drv.take(tm).priority)
    assert order == [Priority.FIND_COORDINATOR, Priority.ADD_PARTITIONS_OR_OFFSETS, Priority.END_TXN]


def test_metrics_snapshot_has_java_names_and_counts() -> None:
    tm, _, metrics = drv.initialized()
    tm.begin_transaction()
    metrics.record_produce_request(batch_count=2, record_count=3, size_bytes=120)
    metrics.record_retry()
    metrics.record_error(2)
    snap = metrics.snapshot()
    assert snap[m.RECORDS_SENT] == 3 and snap[m.BATCHES_SENT] == 2 and snap[m.BYTES_SENT] == 120
    assert snap[m.PRODUCE_REQUESTS] == 1
    assert snap[m.RETRIES] == 1 and snap[m.ERRORS] == 2
    assert snap[m.TXN_BEGIN_TIME_NS_TOTAL] > 0 and snap[m.TXN_INIT_TIME_NS_TOTAL] > 0
    assert set(m.METRIC_NAMES) <= set(snap)
