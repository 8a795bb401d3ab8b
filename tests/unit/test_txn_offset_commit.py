"""TransactionManager: TxnOffsetCommit answers: stale group metadata, authorization, partial retries.

Driven like the Sender drives it (``tests/_support/txn_driver.py``).
"""

from __future__ import annotations

import pytest
from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata

from tests._support import txn_driver as drv
from txnproducer import errors
from txnproducer._internal.txn.state import State

# --- TxnOffsetCommit errors ----------------------------------------------------------------------


@pytest.mark.parametrize("code", [22, 25, 82])
def test_stale_group_metadata_is_commit_failed_and_abortable(code: int) -> None:
    tm, _, _ = drv.in_transaction(tv=2)
    result = tm.send_offsets_to_transaction(
        {drv.TP0: OffsetAndMetadata(5, "", -1)}, ConsumerGroupMetadata("g1", 3, "m", None)
    )
    drv.take(tm).handle_response(drv.find_coordinator_ok("g1"))
    drv.take(tm).handle_response(drv.txn_offset_commit({drv.TP0: code}))
    with pytest.raises(errors.CommitFailedError, match="abort_transaction"):
        result.wait(1.0)
    assert tm.state is State.ABORTABLE_ERROR and isinstance(tm.last_error, errors.AbortableError)


@pytest.mark.parametrize("where", ["FindCoordinator", "TxnOffsetCommit"])
def test_group_authorization_failure_is_abortable(where: str) -> None:
    """As the Java client: GROUP_AUTHORIZATION_FAILED (looking up the group's coordinator or
    committing its offsets) makes the transaction abortable; the producer goes on after the abort."""
    tm, _, _ = drv.in_transaction(tv=2)
    result = tm.send_offsets_to_transaction({drv.TP0: OffsetAndMetadata(5, "", -1)}, "g1")
    if where == "FindCoordinator":
        drv.take(tm).handle_response(drv.find_coordinator_error("g1", 30))
        assert tm.next_request(False) is None  # the Sender's next turn fails the waiting commit
    else:
        drv.take(tm).handle_response(drv.find_coordinator_ok("g1"))
        drv.take(tm).handle_response(drv.txn_offset_commit({drv.TP0: 30}))
    with pytest.raises(errors.GroupAuthorizationError, match="g1"):
        result.wait(1.0)
    assert tm.state is State.ABORTABLE_ERROR
    abort = tm.begin_abort()
    drv.take(tm).handle_response(drv.end_txn(producer_id=7, epoch=1))
    abort.wait(1.0)
    assert tm.state is State.READY


def test_txn_offset_commit_retries_only_failed_partitions() -> None:
    tm, clock, _ = drv.in_transaction(tv=2)
    offsets = {drv.TP0: OffsetAndMetadata(5, "", -1), drv.TP1: OffsetAndMetadata(6, "", -1)}
    result = tm.send_offsets_to_transaction(offsets, "g1")
    drv.take(tm).handle_response(drv.find_coordinator_ok("g1", node_id=1))
    drv.take(tm).handle_response(drv.txn_offset_commit({drv.TP0: 0, drv.TP1: 16}))  # NOT_COORDINATOR for p1
    assert tm.coordinator("group", "g1") is None
    drv.take(tm).handle_response(drv.find_coordinator_ok("g1", node_id=2))
    clock.advance_ms(100)
    retry = drv.take(tm)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in retry.request.topics] == [
        ("orders", [1])
    ]
    retry.handle_response(drv.txn_offset_commit({drv.TP1: 3}))  # UNKNOWN_TOPIC_OR_PARTITION: retriable
    clock.advance_ms(100)
    drv.take(tm).handle_response(drv.txn_offset_commit({drv.TP1: 0}))
    result.wait(1.0)


def test_concurrent_transactions_is_retried_after_the_short_backoff() -> None:
    """Under TV2 the group coordinator answers CONCURRENT_TRANSACTIONS while the previous transaction's
    markers are being written, right after its commit: retried in transaction_retry_backoff_ms (20 ms),
    as every coordinator request, not retry_backoff_ms (100 ms) - in the consume-transform-produce
    benchmark that was 8 waits of 100 ms in 200 transactions."""
    tm, clock, _ = drv.in_transaction(tv=2)
    offsets = {drv.TP0: OffsetAndMetadata(5, "", -1), drv.TP1: OffsetAndMetadata(6, "", -1)}
    result = tm.send_offsets_to_transaction(offsets, "g1")
    drv.take(tm).handle_response(drv.find_coordinator_ok("g1"))
    drv.take(tm).handle_response(drv.txn_offset_commit({drv.TP0: 0, drv.TP1: 51}))
    assert tm.next_request(False) is None
    assert tm.next_request_delay_ms() == pytest.approx(20.0)
    clock.advance_ms(20)
    retry = drv.take(tm)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in retry.request.topics] == [
        ("orders", [1])
    ]
    retry.handle_response(drv.txn_offset_commit({drv.TP1: 0}))
    result.wait(1.0)
