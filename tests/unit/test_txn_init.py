"""TransactionManager: initialization: FindCoordinator, InitProducerId, request versions, bounded
waits, one request in flight.

Driven like the Sender drives it (``tests/_support/txn_driver.py``).
"""

from __future__ import annotations

import threading

import pytest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer.transaction import (
    EndTxnRequest,
    InitProducerIdRequest,
)
from structlog.testing import capture_logs

from tests._support import txn_driver as drv
from txnproducer import errors
from txnproducer._internal import metrics as m
from txnproducer._internal.txn.handler import TxnRequestHandler
from txnproducer._internal.txn.state import State

# --- initialization ------------------------------------------------------------------------------


def test_init_tv2_finds_coordinator_then_gets_producer_id_v5() -> None:
    tm, _, metrics = drv.make_tm(tv=2)
    with capture_logs() as logs:
        result = tm.initialize_transactions()
        assert tm.state is State.INITIALIZING
        find = drv.take(tm)
        req = find.request
        assert (req.API_KEY, req.version, req.key_type, req.coordinator_keys) == (10, 6, 1, [drv.TID])
        find.handle_response(drv.find_coordinator_ok(drv.TID, node_id=3))
        assert tm.coordinator("transaction") == 3
        init = drv.take(tm)
        req = init.request
        assert (req.API_KEY, req.version) == (22, 5)
        assert (req.transactional_id, req.transaction_timeout_ms, req.producer_id, req.producer_epoch) == (
            drv.TID,
            60000,
            -1,
            -1,
        )
        init.handle_response(drv.init_pid(producer_id=7, epoch=0))
    result.wait(1.0)
    assert tm.state is State.READY
    assert (tm.producer_id_and_epoch.producer_id, tm.producer_id_and_epoch.epoch) == (7, 0)
    events = {e["event"]: e for e in logs}
    assert events["txn.coordinator_found"]["node_id"] == 3
    assigned = events["txn.producer_id_assigned"]
    assert (assigned["transactional_id"], assigned["producer_id"], assigned["epoch"]) == (drv.TID, 7, 0)
    assert any(e["event"] == "txn.state_transition" and e["target"] == "READY" for e in logs)
    assert metrics.get(m.TXN_INIT_TIME_NS_TOTAL) > 0


def test_init_tv1_uses_init_producer_id_v4() -> None:
    tm, _, _ = drv.make_tm(tv=1)
    tm.initialize_transactions()
    drv.take(tm).handle_response(drv.find_coordinator_ok(drv.TID))
    assert drv.take(tm).request.version == 4


def test_versions_are_capped_by_broker_api_versions() -> None:
    caps = {InitProducerIdRequest.API_KEY: 3, FindCoordinatorRequest.API_KEY: 3}
    tm, _, _ = drv.make_tm(tv=2, max_versions=caps.get)
    tm.initialize_transactions()
    find = drv.take(tm)
    assert find.request.version == 3 and find.request.key == drv.TID
    find.handle_response(
        FindCoordinatorResponse[3](
            throttle_time_ms=0, error_code=0, error_message="NONE", node_id=1, host="h", port=9092
        )
    )
    assert tm.coordinator("transaction") == 1
    assert drv.take(tm).request.version == 3


def test_tv2_falls_back_to_tv1_when_broker_lacks_end_txn_v5() -> None:
    tm, _, _ = drv.make_tm(tv=2, max_versions={EndTxnRequest.API_KEY: 4}.get)
    assert tm.transaction_version == 1


def test_init_wait_timeout_names_the_bound_and_can_wait_again() -> None:
    tm, _, _ = drv.make_tm()
    result = tm.initialize_transactions()
    with pytest.raises(
        errors.TimeoutError, match=r"init_transactions\(\) did not complete within 0 ms \(max_block_ms\)"
    ):
        result.wait(0.0)
    # calling init again returns the same operation (KIP-691), other calls are refused
    assert tm.initialize_transactions() is result
    with pytest.raises(errors.IllegalStateError, match="init_transactions"):
        tm.begin_transaction()
    drv.take(tm).handle_response(drv.find_coordinator_ok(drv.TID))
    drv.take(tm).handle_response(drv.init_pid())
    result.wait(1.0)
    tm.begin_transaction()
    assert tm.state is State.IN_TRANSACTION


def test_result_completed_by_sender_thread_wakes_waiting_app_thread() -> None:
    tm, _, _ = drv.make_tm()
    result = tm.initialize_transactions()
    taken = threading.Event()
    box: list[TxnRequestHandler] = []

    def sender() -> None:
        find = drv.take(tm)
        box.append(find)
        taken.set()
        find.handle_response(drv.find_coordinator_ok(drv.TID))
        drv.take(tm).handle_response(drv.init_pid())

    t = threading.Thread(target=sender)
    t.start()
    result.wait(5.0)
    t.join(5.0)
    assert taken.is_set() and tm.state is State.READY


@pytest.mark.parametrize(
    ("code", "exc_type", "text"),
    [
        (90, errors.ProducerFencedError, "fenced"),
        (47, errors.ProducerFencedError, "fenced"),  # Java maps INVALID_PRODUCER_EPOCH from the coordinator
        (50, errors.InvalidTransactionTimeoutError, "transaction.max.timeout.ms"),
        (35, errors.UnsupportedVersionError, "does not support"),
        (49, errors.InvalidProducerIdMappingError, "INVALID_PRODUCER_ID_MAPPING"),
    ],
)
def test_init_producer_id_fatal_errors(code: int, exc_type: type[Exception], text: str) -> None:
    tm, _, _ = drv.make_tm()
    result = tm.initialize_transactions()
    drv.take(tm).handle_response(drv.find_coordinator_ok(drv.TID))
    drv.take(tm).handle_response(drv.init_pid(code=code, producer_id=-1, epoch=-1))
    with pytest.raises(exc_type, match=text) as info:
        result.wait(1.0)
    assert isinstance(info.value, errors.FatalError)
    assert tm.state is State.FATAL_ERROR and tm.has_fatal_error()
    with pytest.raises(exc_type):
        tm.begin_transaction()


@pytest.mark.parametrize(
    ("code", "exc_type"),
    [(53, errors.TransactionalIdAuthorizationError), (31, errors.ClusterAuthorizationError)],
)
def test_init_refused_for_authorization_can_be_called_again(code: int, exc_type: type[Exception]) -> None:
    """As the Java client: InitProducerId refused for authorization leaves the producer
    uninitialized, and init_transactions() works once the ACLs allow it."""
    tm, _, _ = drv.make_tm()
    result = tm.initialize_transactions()
    drv.take(tm).handle_response(drv.find_coordinator_ok(drv.TID))
    drv.take(tm).handle_response(drv.init_pid(code=code, producer_id=-1, epoch=-1))
    with pytest.raises(exc_type, match="init_transactions\\(\\) again"):
        result.wait(1.0)
    assert tm.state is State.UNINITIALIZED
    again = tm.initialize_transactions()
    drv.take(tm).handle_response(drv.init_pid(producer_id=7, epoch=0))
    again.wait(1.0)
    assert tm.state is State.READY and tm.producer_id_and_epoch.producer_id == 7


@pytest.mark.parametrize("code", [15, 16])
def test_coordinator_moved_rediscovers_and_retries(code: int) -> None:
    tm, clock, _ = drv.make_tm()
    result = tm.initialize_transactions()
    drv.take(tm).handle_response(drv.find_coordinator_ok(drv.TID, node_id=1))
    drv.take(tm).handle_response(drv.init_pid(code=code, producer_id=-1, epoch=-1))
    assert tm.coordinator("transaction") is None
    find = drv.take(tm)  # FindCoordinator has the highest priority and no backoff
    assert isinstance(find.request, FindCoordinatorRequest)
    find.handle_response(drv.find_coordinator_ok(drv.TID, node_id=2))
    assert tm.next_request(False) is None  # the InitProducerId retry waits retry_backoff_ms
    assert tm.next_request_delay_ms() == pytest.approx(100.0)
    clock.advance_ms(100)
    retry = drv.take(tm)
    assert retry.is_retry and isinstance(retry.request, InitProducerIdRequest)
    retry.handle_response(drv.init_pid())
    result.wait(1.0)
    assert tm.coordinator("transaction") == 2


@pytest.mark.parametrize(("code", "backoff_ms"), [(51, 20.0), (14, 100.0)])
def test_retriable_init_errors_back_off(code: int, backoff_ms: float) -> None:
    tm, clock, _ = drv.make_tm()
    tm.initialize_transactions()
    drv.take(tm).handle_response(drv.find_coordinator_ok(drv.TID))
    drv.take(tm).handle_response(drv.init_pid(code=code, producer_id=-1, epoch=-1))
    assert tm.next_request(False) is None
    assert tm.next_request_delay_ms() == pytest.approx(backoff_ms)
    clock.advance_ms(backoff_ms - 1)
    assert tm.next_request(False) is None
    clock.advance_ms(1)
    handler = drv.take(tm)
    assert handler.retry_backoff_ms == backoff_ms
    handler.handle_response(drv.init_pid())
    assert tm.state is State.READY


@pytest.mark.parametrize(
    ("code", "exc_type"),
    [
        (53, errors.TransactionalIdAuthorizationError),
        (87, errors.FatalError),
    ],
)
def test_find_coordinator_errors(code: int, exc_type: type[Exception]) -> None:
    tm, _, _ = drv.make_tm()
    result = tm.initialize_transactions()
    drv.take(tm).handle_response(drv.find_coordinator_error(drv.TID, code))
    assert tm.state is State.FATAL_ERROR
    with pytest.raises(exc_type):
        result.wait(1.0)


def test_find_coordinator_retriable_error_is_retried() -> None:
    tm, clock, _ = drv.make_tm()
    tm.initialize_transactions()
    drv.take(tm).handle_response(drv.find_coordinator_error(drv.TID, 15))
    clock.advance_ms(100)
    find = drv.take(tm)
    assert isinstance(find.request, FindCoordinatorRequest)
    find.handle_response(drv.find_coordinator_ok(drv.TID))
    assert isinstance(drv.take(tm).request, InitProducerIdRequest)


def test_network_failure_rediscovers_coordinator_and_retries() -> None:
    tm, _, _ = drv.make_tm()
    tm.initialize_transactions()
    drv.take(tm).handle_response(drv.find_coordinator_ok(drv.TID))
    init = drv.take(tm)
    init.fail(ConnectionError("connection reset"))
    assert not tm.has_in_flight_request()
    assert isinstance(drv.take(tm).request, FindCoordinatorRequest)


def test_one_request_in_flight_at_a_time() -> None:
    tm, _, _ = drv.make_tm()
    tm.initialize_transactions()
    find = drv.take(tm)
    assert tm.has_in_flight_request()
    assert tm.next_request(False) is None
    find.handle_response(drv.find_coordinator_ok(drv.TID))
    assert not tm.has_in_flight_request()
    assert tm.next_request(False) is not None
