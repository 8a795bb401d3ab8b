"""TransactionManager: Transaction Version 2 (KIP-890): implicit partitions, the epoch every EndTxn v5
returns, TxnOffsetCommit v5.

Driven like the Sender drives it (``tests/_support/txn_driver.py``).
"""

from __future__ import annotations

import pytest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata
from structlog.testing import capture_logs

from tests._support import txn_driver as drv
from txnproducer._internal import metrics as m
from txnproducer._internal.protocol.end_txn import EndTxnRequestData
from txnproducer._internal.txn.state import State

# --- TV2 transactions ----------------------------------------------------------------------------


def test_tv2_partitions_need_no_add_partitions_request() -> None:
    tm, _, _ = drv.initialized(tv=2)
    tm.begin_transaction()
    assert not tm.is_send_to_partition_allowed(drv.TP0)
    tm.maybe_add_partition(drv.TP0)
    assert tm.is_send_to_partition_allowed(drv.TP0)
    assert tm.next_request(False) is None


def test_tv2_commit_adopts_bumped_epoch_and_resets_sequences() -> None:
    tm, _, metrics = drv.in_transaction(tv=2, partitions=(drv.TP0,))
    assert drv.produce_ok(tm, drv.TP0, records=3) == 0
    assert tm.sequence_number(drv.TP0) == 3
    result = tm.begin_commit()
    assert tm.next_request(has_incomplete_batches=True) is None  # EndTxn waits for the batches
    handler = drv.take(tm)
    req = handler.request
    assert (req.API_KEY, req.version, req.producer_id, req.producer_epoch, req.committed) == (
        26,
        5,
        7,
        0,
        True,
    )
    with capture_logs() as logs:
        handler.handle_response(drv.end_txn(producer_id=7, epoch=1))
    result.wait(1.0)
    assert tm.state is State.READY
    assert (tm.producer_id_and_epoch.producer_id, tm.producer_id_and_epoch.epoch) == (7, 1)
    assert tm.sequence_number(drv.TP0) == 0
    assert not tm.is_send_to_partition_allowed(drv.TP0)
    bumped = [e for e in logs if e["event"] == "txn.epoch_bumped"]
    assert bumped and bumped[0]["epoch"] == 1 and bumped[0]["old_epoch"] == 0
    assert metrics.get(m.TXN_COMMIT_TIME_NS_TOTAL) > 0


def test_tv2_epoch_exhaustion_adopts_new_producer_id() -> None:
    tm, _, _ = drv.in_transaction(tv=2, epoch=32766)
    drv.produce_ok(tm, drv.TP0)
    with capture_logs() as logs:
        drv.commit(tm, drv.end_txn(producer_id=8, epoch=0))
    assert (tm.producer_id_and_epoch.producer_id, tm.producer_id_and_epoch.epoch) == (8, 0)
    assert tm.sequence_number(drv.TP0) == 0
    assert any(e["event"] == "txn.producer_id_assigned" and e["producer_id"] == 8 for e in logs)


@pytest.mark.parametrize("tv", [1, 2])
@pytest.mark.parametrize("committed", [True, False])
def test_empty_transaction_completes_without_end_txn(tv: int, committed: bool) -> None:
    tm, _, _ = drv.initialized(tv=tv)
    tm.begin_transaction()
    result = tm.begin_commit() if committed else tm.begin_abort()
    assert tm.next_request(False) is None
    result.wait(1.0)
    assert tm.state is State.READY


def test_tv2_send_offsets_goes_straight_to_txn_offset_commit_v5() -> None:
    tm, _, metrics = drv.in_transaction(tv=2)
    group = ConsumerGroupMetadata("g1", 4, "member-1", None)
    result = tm.send_offsets_to_transaction({drv.TP0: OffsetAndMetadata(42, "m", 3)}, group)
    find = drv.take(tm)
    assert isinstance(find.request, FindCoordinatorRequest) and find.request.key_type == 0
    find.handle_response(drv.find_coordinator_ok("g1", node_id=2))
    handler = drv.take(tm)
    assert handler.coordinator_type == "group" and tm.coordinator("group") == 2
    req = handler.request
    assert (req.API_KEY, req.version, req.group_id, req.generation_id, req.member_id) == (
        28,
        5,
        "g1",
        4,
        "member-1",
    )
    part = req.topics[0].partitions[0]
    assert (
        part.partition_index,
        part.committed_offset,
        part.committed_metadata,
        part.committed_leader_epoch,
    ) == (
        0,
        42,
        "m",
        3,
    )
    handler.handle_response(drv.txn_offset_commit({drv.TP0: 0}))
    result.wait(1.0)
    assert metrics.get(m.TXN_SEND_OFFSETS_TIME_NS_TOTAL) > 0
    # offsets alone make the transaction non-empty
    tm2, _, _ = drv.initialized(tv=2)
    tm2.begin_transaction()
    tm2.send_offsets_to_transaction({drv.TP0: OffsetAndMetadata(1, "", -1)}, "g1")
    drv.take(tm2).handle_response(drv.find_coordinator_ok("g1"))
    drv.take(tm2).handle_response(drv.txn_offset_commit({drv.TP0: 0}))
    tm2.begin_commit()
    assert isinstance(drv.take(tm2).request, EndTxnRequestData)


def test_tv2_end_txn_retry_after_network_error_repeats_pre_bump_epoch() -> None:
    tm, clock, _ = drv.in_transaction(tv=2)
    drv.produce_ok(tm, drv.TP0)
    result = tm.begin_commit()
    drv.take(tm).fail(TimeoutError("request timed out"))
    drv.take(tm).handle_response(drv.find_coordinator_ok(drv.TID))
    assert tm.next_request(False) is None  # the EndTxn retry backs off retry_backoff_ms
    clock.advance_ms(100)
    retry = drv.take(tm)
    assert (retry.request.producer_epoch, retry.request.committed) == (0, True)
    retry.handle_response(drv.end_txn(producer_id=7, epoch=1))
    result.wait(1.0)
    assert tm.producer_id_and_epoch.epoch == 1
