"""TransactionManager: what produce outcomes do to the transaction (KIP-360, KIP-588) and the sequence rules.

Driven like the Sender drives it (``tests/_support/txn_driver.py``).
"""

from __future__ import annotations

import pytest
from kafka.structs import OffsetAndMetadata
from structlog.testing import capture_logs

from tests._support import txn_driver as drv
from txnproducer import errors
from txnproducer._internal.txn.handler import Priority
from txnproducer._internal.txn.state import State

# --- produce errors, KIP-360 / KIP-588 -----------------------------------------------------------


def test_tv1_sequence_error_aborts_then_bumps_epoch_kip360() -> None:
    tm, _, _ = drv.in_transaction(tv=1)
    drv.produce_ok(tm, drv.TP0, records=3)
    drv.fail_batch(tm, errors.OutOfOrderSequenceError("gap", error_code=45))
    assert tm.state is State.ABORTABLE_ERROR
    with pytest.raises(errors.OutOfOrderSequenceError, match="abortable"):
        tm.begin_commit()
    result = tm.begin_abort()
    end = drv.take(tm)
    assert (end.request.committed, end.request.producer_epoch, end.request.version) == (False, 0, 4)
    end.handle_response(drv.end_txn(version=4))
    assert tm.state is State.INITIALIZING and not result.done()
    bump = drv.take(tm)
    assert bump.priority is Priority.EPOCH_BUMP
    req = bump.request
    assert (req.API_KEY, req.producer_id, req.producer_epoch) == (22, 7, 0)
    with capture_logs() as logs:
        bump.handle_response(drv.init_pid(producer_id=7, epoch=1, version=req.version))
    result.wait(1.0)
    assert tm.state is State.READY and tm.producer_id_and_epoch.epoch == 1
    assert tm.sequence_number(drv.TP0) == 0
    assert any(e["event"] == "txn.epoch_bumped" and e["reason"] == "kip360_after_abort" for e in logs)


def test_tv2_sequence_error_abort_lets_the_coordinator_bump() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    drv.fail_batch(tm, errors.UnknownProducerIdError("lost", error_code=59))
    assert tm.state is State.ABORTABLE_ERROR
    result = tm.begin_abort()
    end = drv.take(tm)
    assert (end.request.version, end.request.committed) == (5, False)
    end.handle_response(drv.end_txn(producer_id=7, epoch=1))
    result.wait(1.0)
    assert tm.state is State.READY and tm.producer_id_and_epoch.epoch == 1
    assert tm.next_request(False) is None  # no client-side InitProducerId


def test_invalid_producer_epoch_on_produce_is_abortable_after_timeout() -> None:
    tm, clock, _ = drv.in_transaction(tv=2)
    clock.advance_ms(61_000)  # open past transaction_timeout_ms=60000
    # kafka-python-style or txnproducer error with code 47: abortable on the produce path (KIP-588)
    drv.fail_batch(tm, errors.InvalidProducerEpochError("stale epoch", error_code=47))
    assert tm.state is State.ABORTABLE_ERROR
    assert isinstance(tm.last_error, errors.AbortableError)
    assert "open for 61000 ms, longer than transaction_timeout_ms=60000" in str(tm.last_error)
    result = tm.begin_abort()
    drv.take(tm).handle_response(drv.end_txn(producer_id=7, epoch=1))  # coordinator: retry of its own abort
    result.wait(1.0)
    assert tm.state is State.READY and tm.producer_id_and_epoch.epoch == 1


def test_invalid_producer_epoch_within_the_timeout_names_another_producer_first() -> None:
    tm, clock, _ = drv.in_transaction(tv=2)
    clock.advance_ms(1_000)
    drv.fail_batch(tm, errors.InvalidProducerEpochError("stale epoch", error_code=47))
    message = str(tm.last_error)
    assert "most likely because another producer with the same transactional_id has started" in message
    assert "transaction_timeout_ms" not in message


def test_producer_fenced_on_produce_is_fatal_and_fails_waiters() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    offsets = tm.send_offsets_to_transaction({drv.TP0: OffsetAndMetadata(1, "", -1)}, "g1")
    drv.fail_batch(tm, errors.ProducerFencedError("fenced", error_code=90))
    assert tm.state is State.FATAL_ERROR
    with pytest.raises(errors.ProducerFencedError):
        offsets.wait(1.0)
    assert not tm.is_send_to_partition_allowed(drv.TP0)
    with pytest.raises(errors.ProducerFencedError):
        tm.begin_abort()


def test_failed_batch_during_abort_does_not_change_state() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    tm.begin_abort()
    drv.fail_batch(tm, errors.TransactionAbortedError("aborted"))
    assert tm.state is State.ABORTING_TRANSACTION


def test_unknown_producer_id_failure_resets_partition_sequence() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0, records=4)
    drv.fail_batch(tm, errors.UnknownProducerIdError("lost", error_code=59))
    assert tm.sequence_number(drv.TP0) == 0


# --- sequences -----------------------------------------------------------------------------------


def test_sequence_numbers_wrap_at_int_max() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    assert tm.assign_sequence(drv.TP0, 2**31 - 3) == 0
    assert tm.assign_sequence(drv.TP0, 5) == 2**31 - 3
    assert tm.sequence_number(drv.TP0) == 2


def test_failed_batch_with_adjust_pulls_later_sequences_back() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    epoch = tm.producer_id_and_epoch.epoch
    assert tm.assign_sequence(drv.TP0, 3) == 0  # batch A: 0..2
    assert tm.assign_sequence(drv.TP0, 2) == 3  # batch B: 3..4
    tm.handle_failed_batch(drv.TP0, 0, 3, epoch, errors.RecordTooLargeError("too big"), True)
    assert tm.sequence_number(drv.TP0) == 2
    tm2, _, _ = drv.in_transaction(tv=2)
    tm2.assign_sequence(drv.TP0, 3)
    tm2.handle_failed_batch(drv.TP0, 0, 3, epoch, errors.DeliveryTimeoutError("expired"), False)
    assert tm2.sequence_number(drv.TP0) == 3  # retries exhausted: the broker may have it


def test_can_retry_rules() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    epoch = tm.producer_id_and_epoch.epoch
    drv.produce_ok(tm, drv.TP0, records=3)  # acked 0..2
    assert tm.can_retry(drv.TP0, 45, epoch, 6)  # collateral: an earlier batch (3..5) failed first
    assert not tm.can_retry(drv.TP0, 45, epoch, 3)  # the next expected batch itself: a real gap
    # UNKNOWN_PRODUCER_ID, the Java client's three cases: the partition moved (no log start yet),
    assert tm.can_retry(drv.TP0, 59, epoch, 3, log_start_offset=-1)
    # retention removed everything we wrote (acked up to offset 2, the log now starts at 10),
    assert tm.can_retry(drv.TP0, 59, epoch, 3, log_start_offset=10)
    assert tm.state_lost_to_retention(drv.TP0, 10) and not tm.state_lost_to_retention(drv.TP0, 2)
    # or the answer is to the bytes a batch had before its sequences started again
    assert tm.can_retry(drv.TP0, 59, epoch, 3, log_start_offset=2, sequence_reset=True)
    assert not tm.can_retry(drv.TP0, 59, epoch, 3, log_start_offset=2)  # state not lost: abort
    assert tm.can_retry(drv.TP0, 6, epoch, 3)  # NOT_LEADER_OR_FOLLOWER
    assert not tm.can_retry(drv.TP0, 10, epoch, 3)  # MESSAGE_TOO_LARGE


def test_sequences_given_back_by_a_batch_that_could_not_be_encoded_go_to_the_next_batch() -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    assert tm.assign_sequence(drv.TP0, 3) == 0
    assert tm.assign_sequence(drv.TP0, 4) == 3  # this one fails to encode: it never leaves the client
    tm.release_sequence(drv.TP0, 3, 4)
    assert tm.assign_sequence(drv.TP0, 2) == 3  # no gap the broker would refuse as out of order
