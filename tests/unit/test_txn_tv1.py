"""TransactionManager: Transaction Version 1: AddPartitionsToTxn, AddOffsetsToTxn + TxnOffsetCommit,
one epoch for many transactions.

Driven like the Sender drives it (``tests/_support/txn_driver.py``).
"""

from __future__ import annotations

import pytest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
)
from kafka.structs import OffsetAndMetadata, TopicPartition

from tests._support import txn_driver as drv
from txnproducer import errors
from txnproducer._internal.txn.state import State

# --- TV1 transactions ----------------------------------------------------------------------------


def test_tv1_partitions_are_added_in_one_batched_request() -> None:
    tm, _, _ = drv.initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(drv.TP0)
    tm.maybe_add_partition(drv.TP1)
    tm.maybe_add_partition(drv.TP0)
    assert not tm.is_send_to_partition_allowed(drv.TP0)
    handler = drv.take(tm)
    req = handler.request
    assert (req.API_KEY, req.version) == (24, 3)
    assert (
        req.v3_and_below_transactional_id,
        req.v3_and_below_producer_id,
        req.v3_and_below_producer_epoch,
    ) == (
        drv.TID,
        7,
        0,
    )
    assert [(t.name, t.partitions) for t in req.v3_and_below_topics] == [("orders", [0, 1])]
    assert tm.is_partition_pending_add(drv.TP0) and not tm.is_send_to_partition_allowed(drv.TP0)
    tm.maybe_add_partition(drv.TP0)  # pending: not requested again
    handler.handle_response(drv.add_partitions({drv.TP0: 0, drv.TP1: 0}))
    assert tm.is_send_to_partition_allowed(drv.TP0) and tm.is_send_to_partition_allowed(drv.TP1)
    assert tm.next_request(False) is None


def test_tv1_commit_keeps_epoch_and_sequences_continue() -> None:
    tm, _, _ = drv.in_transaction(tv=1)
    drv.produce_ok(tm, drv.TP0, records=3)
    drv.commit(tm, drv.end_txn(version=4))
    assert tm.producer_id_and_epoch.epoch == 0
    tm.begin_transaction()
    tm.maybe_add_partition(drv.TP0)
    drv.take(tm).handle_response(drv.add_partitions({drv.TP0: 0}))
    assert drv.produce_ok(tm, drv.TP0, records=2) == 3


def test_tv1_end_txn_is_v4_and_sent_after_pending_adds() -> None:
    tm, _, _ = drv.initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(drv.TP0)
    tm.begin_commit()
    first = drv.take(tm)
    assert isinstance(first.request, AddPartitionsToTxnRequest)
    first.handle_response(drv.add_partitions({drv.TP0: 0}))
    end = drv.take(tm)
    assert (end.request.API_KEY, end.request.version) == (26, 4)


def test_tv1_concurrent_transactions_on_add_partitions_retries_after_short_backoff() -> None:
    tm, clock, _ = drv.initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(drv.TP0)
    drv.take(tm).handle_response(drv.add_partitions({drv.TP0: 51}))
    assert not tm.is_send_to_partition_allowed(drv.TP0)
    assert tm.next_request_delay_ms() == pytest.approx(20.0)
    clock.advance_ms(20)
    retry = drv.take(tm)
    assert isinstance(retry.request, AddPartitionsToTxnRequest)
    retry.handle_response(drv.add_partitions({drv.TP0: 0}))
    assert tm.is_send_to_partition_allowed(drv.TP0)


def test_tv1_topic_authorization_failure_is_abortable() -> None:
    tm, _, _ = drv.initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(drv.TP0)
    tm.maybe_add_partition(TopicPartition("secret", 0))
    drv.take(tm).handle_response(drv.add_partitions({drv.TP0: 55, TopicPartition("secret", 0): 29}))
    assert tm.state is State.ABORTABLE_ERROR
    with pytest.raises(errors.TopicAuthorizationError, match="secret"):
        tm.begin_commit()
    with pytest.raises(errors.TopicAuthorizationError):
        tm.maybe_add_partition(drv.TP1)
    result = tm.begin_abort()
    assert tm.next_request(False) is None  # nothing was added: no EndTxn
    result.wait(1.0)
    assert tm.state is State.READY


@pytest.mark.parametrize(
    ("code", "exc_type"),
    [
        (90, errors.ProducerFencedError),
        (47, errors.ProducerFencedError),
        (53, errors.TransactionalIdAuthorizationError),
        (48, errors.InvalidTxnStateError),
    ],
)
def test_tv1_add_partitions_fatal_errors(code: int, exc_type: type[Exception]) -> None:
    tm, _, _ = drv.initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(drv.TP0)
    drv.take(tm).handle_response(drv.add_partitions({drv.TP0: code}))
    assert tm.state is State.FATAL_ERROR
    assert isinstance(tm.last_error, exc_type)
    with pytest.raises(exc_type):
        tm.maybe_add_partition(drv.TP1)


def test_tv1_send_offsets_adds_offsets_then_commits_them_to_the_group() -> None:
    tm, _, _ = drv.in_transaction(tv=1)
    result = tm.send_offsets_to_transaction({drv.TP0: OffsetAndMetadata(5, "", -1)}, "g1")
    add = drv.take(tm)
    req = add.request
    assert (req.API_KEY, req.version, req.group_id, req.producer_id) == (25, 3, "g1", 7)
    add.handle_response(AddOffsetsToTxnResponse[3](throttle_time_ms=0, error_code=0))
    assert not result.done()
    drv.take(tm).handle_response(drv.find_coordinator_ok("g1"))
    commit_h = drv.take(tm)
    assert (commit_h.request.API_KEY, commit_h.request.version, commit_h.request.generation_id) == (28, 3, -1)
    commit_h.handle_response(drv.txn_offset_commit({drv.TP0: 0}, version=3))
    result.wait(1.0)


@pytest.mark.parametrize(
    ("code", "exc_type", "state"),
    [
        (30, errors.GroupAuthorizationError, State.ABORTABLE_ERROR),
        (90, errors.ProducerFencedError, State.FATAL_ERROR),
        (120, errors.TransactionAbortableError, State.ABORTABLE_ERROR),
        (59, errors.UnknownProducerIdError, State.ABORTABLE_ERROR),
        (49, errors.FatalError, State.FATAL_ERROR),
    ],
)
def test_tv1_add_offsets_errors(code: int, exc_type: type[Exception], state: State) -> None:
    tm, _, _ = drv.in_transaction(tv=1)
    result = tm.send_offsets_to_transaction({drv.TP0: OffsetAndMetadata(5, "", -1)}, "g1")
    drv.take(tm).handle_response(AddOffsetsToTxnResponse[3](throttle_time_ms=0, error_code=code))
    assert tm.state is state
    with pytest.raises(exc_type):
        result.wait(1.0)
