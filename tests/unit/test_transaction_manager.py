"""TransactionManager driven like the Sender drives it, with kafka-python response objects.

Each test plays the Sender: it takes handlers with ``next_request()``, marks them in flight,
checks the request the manager built (API, version, fields) and completes it with a response of
the shape a Kafka 4.1 broker sends (see shared/conformance/kafka-4.1.0). Time is a fake clock.
"""

from __future__ import annotations

import json
import pathlib
import threading
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
)
from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from structlog.testing import capture_logs

from txnproducer import errors
from txnproducer._internal import metrics as m
from txnproducer._internal.metrics import ProducerMetrics
from txnproducer._internal.txn.handler import Priority, TxnRequestHandler
from txnproducer._internal.txn.manager import TransactionManager
from txnproducer._internal.txn.state import State

TID = "tx-1"
TP0 = TopicPartition("orders", 0)
TP1 = TopicPartition("orders", 1)
# shared/ beside the repository (as CI has it), else the workplace's copy
CONFORMANCE = pathlib.Path(__file__).resolve().parents[3] / "shared/conformance/kafka-4.1.0"
if not CONFORMANCE.exists():
    CONFORMANCE = pathlib.Path("/work/shared/conformance/kafka-4.1.0")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += ms / 1000.0


def make_tm(
    tv: int = 2, max_versions: Callable[[int], int | None] | None = None
) -> tuple[TransactionManager, FakeClock, ProducerMetrics]:
    clock = FakeClock()
    metrics = ProducerMetrics()
    tm = TransactionManager(TID, 60000, 100, 20, None, metrics, max_versions=max_versions, clock=clock)
    tm.set_transaction_version(tv)
    return tm, clock, metrics


# --- playing the Sender --------------------------------------------------------------------------


def take(tm: TransactionManager, incomplete: bool = False) -> TxnRequestHandler:
    """Next handler, resolving an unknown coordinator the way the Sender does."""
    handler = tm.next_request(incomplete)
    assert handler is not None, "expected a transactional request to send"
    if (
        handler.coordinator_type is not None
        and tm.coordinator(handler.coordinator_type, handler.coordinator_key) is None
    ):
        tm.lookup_coordinator(handler.coordinator_type, handler.coordinator_key)
        tm.retry(handler)  # the queued FindCoordinator paces it: no extra backoff
        handler = tm.next_request(incomplete)
        assert handler is not None
    tm.in_flight_started(handler)
    return handler


def find_coordinator_ok(key: str, node_id: int = 1) -> Any:
    coord = FindCoordinatorResponse.Coordinator(
        key=key, node_id=node_id, host="127.0.0.1", port=9092, error_code=0, error_message=""
    )
    return FindCoordinatorResponse[6](throttle_time_ms=0, coordinators=[coord])


def find_coordinator_error(key: str, code: int) -> Any:
    coord = FindCoordinatorResponse.Coordinator(
        key=key, node_id=-1, host="", port=-1, error_code=code, error_message="x"
    )
    return FindCoordinatorResponse[6](throttle_time_ms=0, coordinators=[coord])


def init_pid(code: int = 0, producer_id: int = 7, epoch: int = 0, version: int = 5) -> Any:
    return InitProducerIdResponse[version](
        throttle_time_ms=0, error_code=code, producer_id=producer_id, producer_epoch=epoch
    )


def end_txn(code: int = 0, producer_id: int = -1, epoch: int = -1, version: int = 5) -> Any:
    if version >= 5:
        return EndTxnResponse[version](
            throttle_time_ms=0, error_code=code, producer_id=producer_id, producer_epoch=epoch
        )
    return EndTxnResponse[version](throttle_time_ms=0, error_code=code)


def add_partitions(codes: dict[TopicPartition, int]) -> Any:
    topic_cls = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
    part_cls = topic_cls.AddPartitionsToTxnPartitionResult
    topics: dict[str, list[Any]] = {}
    for tp, code in codes.items():
        topics.setdefault(tp.topic, []).append(
            part_cls(partition_index=tp.partition, partition_error_code=code)
        )
    return AddPartitionsToTxnResponse[3](
        throttle_time_ms=0,
        results_by_topic_v3_and_below=[
            topic_cls(name=t, results_by_partition=ps) for t, ps in topics.items()
        ],
    )


def txn_offset_commit(codes: dict[TopicPartition, int], version: int = 5) -> Any:
    topic_cls = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
    part_cls = topic_cls.TxnOffsetCommitResponsePartition
    topics: dict[str, list[Any]] = {}
    for tp, code in codes.items():
        topics.setdefault(tp.topic, []).append(part_cls(partition_index=tp.partition, error_code=code))
    return TxnOffsetCommitResponse[version](
        throttle_time_ms=0, topics=[topic_cls(name=t, partitions=ps) for t, ps in topics.items()]
    )


def initialized(
    tv: int = 2, producer_id: int = 7, epoch: int = 0, **kw: Any
) -> tuple[TransactionManager, FakeClock, ProducerMetrics]:
    tm, clock, metrics = make_tm(tv, **kw)
    result = tm.initialize_transactions()
    find = take(tm)
    assert isinstance(find.request, FindCoordinatorRequest)
    find.handle_response(find_coordinator_ok(TID))
    init = take(tm)
    init.handle_response(init_pid(producer_id=producer_id, epoch=epoch, version=init.request.version))
    result.wait(1.0)
    assert tm.state is State.READY
    return tm, clock, metrics


def in_transaction(
    tv: int = 2, partitions: tuple[TopicPartition, ...] = (TP0,), **kw: Any
) -> tuple[TransactionManager, FakeClock, ProducerMetrics]:
    tm, clock, metrics = initialized(tv, **kw)
    tm.begin_transaction()
    for tp in partitions:
        tm.maybe_add_partition(tp)
    if tv < 2 and partitions:
        handler = take(tm)
        assert isinstance(handler.request, AddPartitionsToTxnRequest)
        handler.handle_response(add_partitions(dict.fromkeys(partitions, 0)))
    return tm, clock, metrics


def produce_ok(tm: TransactionManager, tp: TopicPartition, records: int = 3, base_offset: int = 0) -> int:
    """Simulate the Sender stamping, sending and completing one batch; returns its base sequence."""
    assert tm.is_send_to_partition_allowed(tp)
    base = tm.sequence_number(tp)
    tm.increment_sequence(tp, records)
    tm.handle_completed_batch(tp, base, records, tm.producer_id_and_epoch.epoch, base_offset)
    return base


def commit(tm: TransactionManager, response: Any) -> None:
    result = tm.begin_commit()
    handler = take(tm)
    assert isinstance(handler.request, EndTxnRequest) and handler.request.committed
    handler.handle_response(response)
    result.wait(1.0)


# --- initialization ------------------------------------------------------------------------------


def test_init_tv2_finds_coordinator_then_gets_producer_id_v5() -> None:
    tm, _, metrics = make_tm(tv=2)
    with capture_logs() as logs:
        result = tm.initialize_transactions()
        assert tm.state is State.INITIALIZING
        find = take(tm)
        req = find.request
        assert (req.API_KEY, req.version, req.key_type, req.coordinator_keys) == (10, 6, 1, [TID])
        find.handle_response(find_coordinator_ok(TID, node_id=3))
        assert tm.coordinator("transaction") == 3
        init = take(tm)
        req = init.request
        assert (req.API_KEY, req.version) == (22, 5)
        assert (req.transactional_id, req.transaction_timeout_ms, req.producer_id, req.producer_epoch) == (
            TID,
            60000,
            -1,
            -1,
        )
        init.handle_response(init_pid(producer_id=7, epoch=0))
    result.wait(1.0)
    assert tm.state is State.READY
    assert (tm.producer_id_and_epoch.producer_id, tm.producer_id_and_epoch.epoch) == (7, 0)
    events = {e["event"]: e for e in logs}
    assert events["txn.coordinator_found"]["node_id"] == 3
    assigned = events["txn.producer_id_assigned"]
    assert (assigned["transactional_id"], assigned["producer_id"], assigned["epoch"]) == (TID, 7, 0)
    assert any(e["event"] == "txn.state_transition" and e["target"] == "READY" for e in logs)
    assert metrics.get(m.TXN_INIT_TIME_NS_TOTAL) > 0


def test_init_tv1_uses_init_producer_id_v4() -> None:
    tm, _, _ = make_tm(tv=1)
    tm.initialize_transactions()
    take(tm).handle_response(find_coordinator_ok(TID))
    assert take(tm).request.version == 4


def test_versions_are_capped_by_broker_api_versions() -> None:
    caps = {InitProducerIdRequest.API_KEY: 3, FindCoordinatorRequest.API_KEY: 3}
    tm, _, _ = make_tm(tv=2, max_versions=caps.get)
    tm.initialize_transactions()
    find = take(tm)
    assert find.request.version == 3 and find.request.key == TID
    find.handle_response(
        FindCoordinatorResponse[3](
            throttle_time_ms=0, error_code=0, error_message="NONE", node_id=1, host="h", port=9092
        )
    )
    assert tm.coordinator("transaction") == 1
    assert take(tm).request.version == 3


def test_tv2_falls_back_to_tv1_when_broker_lacks_end_txn_v5() -> None:
    tm, _, _ = make_tm(tv=2, max_versions={EndTxnRequest.API_KEY: 4}.get)
    assert tm.transaction_version == 1


def test_init_wait_timeout_names_the_bound_and_can_wait_again() -> None:
    tm, _, _ = make_tm()
    result = tm.initialize_transactions()
    with pytest.raises(
        errors.TimeoutError, match=r"init_transactions\(\) did not complete within 0 ms \(max_block_ms\)"
    ):
        result.wait(0.0)
    # calling init again returns the same operation (KIP-691), other calls are refused
    assert tm.initialize_transactions() is result
    with pytest.raises(errors.IllegalStateError, match="init_transactions"):
        tm.begin_transaction()
    take(tm).handle_response(find_coordinator_ok(TID))
    take(tm).handle_response(init_pid())
    result.wait(1.0)
    tm.begin_transaction()
    assert tm.state is State.IN_TRANSACTION


def test_result_completed_by_sender_thread_wakes_waiting_app_thread() -> None:
    tm, _, _ = make_tm()
    result = tm.initialize_transactions()
    taken = threading.Event()
    box: list[TxnRequestHandler] = []

    def sender() -> None:
        find = take(tm)
        box.append(find)
        taken.set()
        find.handle_response(find_coordinator_ok(TID))
        take(tm).handle_response(init_pid())

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
        (53, errors.TransactionalIdAuthorizationError, "not allowed to use transactional_id"),
        (50, errors.FatalError, "transaction.max.timeout.ms"),
        (35, errors.UnsupportedVersionError, "does not support"),
        (49, errors.FatalError, "INVALID_PRODUCER_ID_MAPPING"),
    ],
)
def test_init_producer_id_fatal_errors(code: int, exc_type: type[Exception], text: str) -> None:
    tm, _, _ = make_tm()
    result = tm.initialize_transactions()
    take(tm).handle_response(find_coordinator_ok(TID))
    take(tm).handle_response(init_pid(code=code, producer_id=-1, epoch=-1))
    with pytest.raises(exc_type, match=text) as info:
        result.wait(1.0)
    assert isinstance(info.value, errors.FatalError)
    assert tm.state is State.FATAL_ERROR and tm.has_fatal_error()
    with pytest.raises(exc_type):
        tm.begin_transaction()


@pytest.mark.parametrize("code", [15, 16])
def test_coordinator_moved_rediscovers_and_retries(code: int) -> None:
    tm, clock, _ = make_tm()
    result = tm.initialize_transactions()
    take(tm).handle_response(find_coordinator_ok(TID, node_id=1))
    take(tm).handle_response(init_pid(code=code, producer_id=-1, epoch=-1))
    assert tm.coordinator("transaction") is None
    find = take(tm)  # FindCoordinator has the highest priority and no backoff
    assert isinstance(find.request, FindCoordinatorRequest)
    find.handle_response(find_coordinator_ok(TID, node_id=2))
    assert tm.next_request(False) is None  # the InitProducerId retry waits retry_backoff_ms
    assert tm.next_request_delay_ms() == pytest.approx(100.0)
    clock.advance_ms(100)
    retry = take(tm)
    assert retry.is_retry and isinstance(retry.request, InitProducerIdRequest)
    retry.handle_response(init_pid())
    result.wait(1.0)
    assert tm.coordinator("transaction") == 2


@pytest.mark.parametrize(("code", "backoff_ms"), [(51, 20.0), (14, 100.0)])
def test_retriable_init_errors_back_off(code: int, backoff_ms: float) -> None:
    tm, clock, _ = make_tm()
    tm.initialize_transactions()
    take(tm).handle_response(find_coordinator_ok(TID))
    take(tm).handle_response(init_pid(code=code, producer_id=-1, epoch=-1))
    assert tm.next_request(False) is None
    assert tm.next_request_delay_ms() == pytest.approx(backoff_ms)
    clock.advance_ms(backoff_ms - 1)
    assert tm.next_request(False) is None
    clock.advance_ms(1)
    handler = take(tm)
    assert handler.retry_backoff_ms == backoff_ms
    handler.handle_response(init_pid())
    assert tm.state is State.READY


@pytest.mark.parametrize(
    ("code", "exc_type"),
    [
        (53, errors.TransactionalIdAuthorizationError),
        (30, errors.GroupAuthorizationError),
        (87, errors.FatalError),
    ],
)
def test_find_coordinator_errors(code: int, exc_type: type[Exception]) -> None:
    tm, _, _ = make_tm()
    result = tm.initialize_transactions()
    take(tm).handle_response(find_coordinator_error(TID, code))
    assert tm.state is State.FATAL_ERROR
    with pytest.raises(exc_type):
        result.wait(1.0)


def test_find_coordinator_retriable_error_is_retried() -> None:
    tm, clock, _ = make_tm()
    tm.initialize_transactions()
    take(tm).handle_response(find_coordinator_error(TID, 15))
    clock.advance_ms(100)
    find = take(tm)
    assert isinstance(find.request, FindCoordinatorRequest)
    find.handle_response(find_coordinator_ok(TID))
    assert isinstance(take(tm).request, InitProducerIdRequest)


def test_network_failure_rediscovers_coordinator_and_retries() -> None:
    tm, _, _ = make_tm()
    tm.initialize_transactions()
    take(tm).handle_response(find_coordinator_ok(TID))
    init = take(tm)
    init.fail(ConnectionError("connection reset"))
    assert not tm.has_in_flight_request()
    assert isinstance(take(tm).request, FindCoordinatorRequest)


def test_one_request_in_flight_at_a_time() -> None:
    tm, _, _ = make_tm()
    tm.initialize_transactions()
    find = take(tm)
    assert tm.has_in_flight_request()
    assert tm.next_request(False) is None
    find.handle_response(find_coordinator_ok(TID))
    assert not tm.has_in_flight_request()
    assert tm.next_request(False) is not None


# --- TV2 transactions ----------------------------------------------------------------------------


def test_tv2_partitions_need_no_add_partitions_request() -> None:
    tm, _, _ = initialized(tv=2)
    tm.begin_transaction()
    assert not tm.is_send_to_partition_allowed(TP0)
    tm.maybe_add_partition(TP0)
    assert tm.is_send_to_partition_allowed(TP0)
    assert tm.next_request(False) is None


def test_tv2_commit_adopts_bumped_epoch_and_resets_sequences() -> None:
    tm, _, metrics = in_transaction(tv=2, partitions=(TP0,))
    assert produce_ok(tm, TP0, records=3) == 0
    assert tm.sequence_number(TP0) == 3
    result = tm.begin_commit()
    assert tm.next_request(has_incomplete_batches=True) is None  # EndTxn waits for the batches
    handler = take(tm)
    req = handler.request
    assert (req.API_KEY, req.version, req.producer_id, req.producer_epoch, req.committed) == (
        26,
        5,
        7,
        0,
        True,
    )
    with capture_logs() as logs:
        handler.handle_response(end_txn(producer_id=7, epoch=1))
    result.wait(1.0)
    assert tm.state is State.READY
    assert (tm.producer_id_and_epoch.producer_id, tm.producer_id_and_epoch.epoch) == (7, 1)
    assert tm.sequence_number(TP0) == 0
    assert not tm.is_send_to_partition_allowed(TP0)
    bumped = [e for e in logs if e["event"] == "txn.epoch_bumped"]
    assert bumped and bumped[0]["epoch"] == 1 and bumped[0]["old_epoch"] == 0
    assert metrics.get(m.TXN_COMMIT_TIME_NS_TOTAL) > 0


def test_tv2_epoch_exhaustion_adopts_new_producer_id() -> None:
    tm, _, _ = in_transaction(tv=2, epoch=32766)
    produce_ok(tm, TP0)
    with capture_logs() as logs:
        commit(tm, end_txn(producer_id=8, epoch=0))
    assert (tm.producer_id_and_epoch.producer_id, tm.producer_id_and_epoch.epoch) == (8, 0)
    assert tm.sequence_number(TP0) == 0
    assert any(e["event"] == "txn.producer_id_assigned" and e["producer_id"] == 8 for e in logs)


@pytest.mark.parametrize("tv", [1, 2])
@pytest.mark.parametrize("committed", [True, False])
def test_empty_transaction_completes_without_end_txn(tv: int, committed: bool) -> None:
    tm, _, _ = initialized(tv=tv)
    tm.begin_transaction()
    result = tm.begin_commit() if committed else tm.begin_abort()
    assert tm.next_request(False) is None
    result.wait(1.0)
    assert tm.state is State.READY


def test_tv2_send_offsets_goes_straight_to_txn_offset_commit_v5() -> None:
    tm, _, metrics = in_transaction(tv=2)
    group = ConsumerGroupMetadata("g1", 4, "member-1", None)
    result = tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(42, "m", 3)}, group)
    find = take(tm)
    assert isinstance(find.request, FindCoordinatorRequest) and find.request.key_type == 0
    find.handle_response(find_coordinator_ok("g1", node_id=2))
    handler = take(tm)
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
    handler.handle_response(txn_offset_commit({TP0: 0}))
    result.wait(1.0)
    assert metrics.get(m.TXN_SEND_OFFSETS_TIME_NS_TOTAL) > 0
    # offsets alone make the transaction non-empty
    tm2, _, _ = initialized(tv=2)
    tm2.begin_transaction()
    tm2.send_offsets_to_transaction({TP0: OffsetAndMetadata(1, "", -1)}, "g1")
    take(tm2).handle_response(find_coordinator_ok("g1"))
    take(tm2).handle_response(txn_offset_commit({TP0: 0}))
    tm2.begin_commit()
    assert isinstance(take(tm2).request, EndTxnRequest)


def test_tv2_end_txn_retry_after_network_error_repeats_pre_bump_epoch() -> None:
    tm, clock, _ = in_transaction(tv=2)
    produce_ok(tm, TP0)
    result = tm.begin_commit()
    take(tm).fail(TimeoutError("request timed out"))
    take(tm).handle_response(find_coordinator_ok(TID))
    assert tm.next_request(False) is None  # the EndTxn retry backs off retry_backoff_ms
    clock.advance_ms(100)
    retry = take(tm)
    assert (retry.request.producer_epoch, retry.request.committed) == (0, True)
    retry.handle_response(end_txn(producer_id=7, epoch=1))
    result.wait(1.0)
    assert tm.producer_id_and_epoch.epoch == 1


# --- TV1 transactions ----------------------------------------------------------------------------


def test_tv1_partitions_are_added_in_one_batched_request() -> None:
    tm, _, _ = initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    tm.maybe_add_partition(TP1)
    tm.maybe_add_partition(TP0)
    assert not tm.is_send_to_partition_allowed(TP0)
    handler = take(tm)
    req = handler.request
    assert (req.API_KEY, req.version) == (24, 3)
    assert (
        req.v3_and_below_transactional_id,
        req.v3_and_below_producer_id,
        req.v3_and_below_producer_epoch,
    ) == (
        TID,
        7,
        0,
    )
    assert [(t.name, t.partitions) for t in req.v3_and_below_topics] == [("orders", [0, 1])]
    assert tm.is_partition_pending_add(TP0) and not tm.is_send_to_partition_allowed(TP0)
    tm.maybe_add_partition(TP0)  # pending: not requested again
    handler.handle_response(add_partitions({TP0: 0, TP1: 0}))
    assert tm.is_send_to_partition_allowed(TP0) and tm.is_send_to_partition_allowed(TP1)
    assert tm.next_request(False) is None


def test_tv1_commit_keeps_epoch_and_sequences_continue() -> None:
    tm, _, _ = in_transaction(tv=1)
    produce_ok(tm, TP0, records=3)
    commit(tm, end_txn(version=4))
    assert tm.producer_id_and_epoch.epoch == 0
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    take(tm).handle_response(add_partitions({TP0: 0}))
    assert produce_ok(tm, TP0, records=2) == 3


def test_tv1_end_txn_is_v4_and_sent_after_pending_adds() -> None:
    tm, _, _ = initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    tm.begin_commit()
    first = take(tm)
    assert isinstance(first.request, AddPartitionsToTxnRequest)
    first.handle_response(add_partitions({TP0: 0}))
    end = take(tm)
    assert (end.request.API_KEY, end.request.version) == (26, 4)


def test_tv1_concurrent_transactions_on_add_partitions_retries_after_short_backoff() -> None:
    tm, clock, _ = initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    take(tm).handle_response(add_partitions({TP0: 51}))
    assert not tm.is_send_to_partition_allowed(TP0)
    assert tm.next_request_delay_ms() == pytest.approx(20.0)
    clock.advance_ms(20)
    retry = take(tm)
    assert isinstance(retry.request, AddPartitionsToTxnRequest)
    retry.handle_response(add_partitions({TP0: 0}))
    assert tm.is_send_to_partition_allowed(TP0)


def test_tv1_topic_authorization_failure_is_abortable() -> None:
    tm, _, _ = initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    tm.maybe_add_partition(TopicPartition("secret", 0))
    take(tm).handle_response(add_partitions({TP0: 55, TopicPartition("secret", 0): 29}))
    assert tm.state is State.ABORTABLE_ERROR
    with pytest.raises(errors.TopicAuthorizationError, match="secret"):
        tm.begin_commit()
    with pytest.raises(errors.TopicAuthorizationError):
        tm.maybe_add_partition(TP1)
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
    tm, _, _ = initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    take(tm).handle_response(add_partitions({TP0: code}))
    assert tm.state is State.FATAL_ERROR
    assert isinstance(tm.last_error, exc_type)
    with pytest.raises(exc_type):
        tm.maybe_add_partition(TP1)


def test_tv1_send_offsets_adds_offsets_then_commits_them_to_the_group() -> None:
    tm, _, _ = in_transaction(tv=1)
    result = tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(5, "", -1)}, "g1")
    add = take(tm)
    req = add.request
    assert (req.API_KEY, req.version, req.group_id, req.producer_id) == (25, 3, "g1", 7)
    add.handle_response(AddOffsetsToTxnResponse[3](throttle_time_ms=0, error_code=0))
    assert not result.done()
    take(tm).handle_response(find_coordinator_ok("g1"))
    commit_h = take(tm)
    assert (commit_h.request.API_KEY, commit_h.request.version, commit_h.request.generation_id) == (28, 3, -1)
    commit_h.handle_response(txn_offset_commit({TP0: 0}, version=3))
    result.wait(1.0)


@pytest.mark.parametrize(
    ("code", "exc_type", "state"),
    [
        (30, errors.GroupAuthorizationError, State.FATAL_ERROR),
        (90, errors.ProducerFencedError, State.FATAL_ERROR),
        (120, errors.TransactionAbortableError, State.ABORTABLE_ERROR),
        (59, errors.UnknownProducerIdError, State.ABORTABLE_ERROR),
        (49, errors.FatalError, State.FATAL_ERROR),
    ],
)
def test_tv1_add_offsets_errors(code: int, exc_type: type[Exception], state: State) -> None:
    tm, _, _ = in_transaction(tv=1)
    result = tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(5, "", -1)}, "g1")
    take(tm).handle_response(AddOffsetsToTxnResponse[3](throttle_time_ms=0, error_code=code))
    assert tm.state is state
    with pytest.raises(exc_type):
        result.wait(1.0)


# --- TxnOffsetCommit errors ----------------------------------------------------------------------


@pytest.mark.parametrize("code", [22, 25, 82])
def test_stale_group_metadata_is_commit_failed_and_abortable(code: int) -> None:
    tm, _, _ = in_transaction(tv=2)
    result = tm.send_offsets_to_transaction(
        {TP0: OffsetAndMetadata(5, "", -1)}, ConsumerGroupMetadata("g1", 3, "m", None)
    )
    take(tm).handle_response(find_coordinator_ok("g1"))
    take(tm).handle_response(txn_offset_commit({TP0: code}))
    with pytest.raises(errors.CommitFailedError, match="abort_transaction"):
        result.wait(1.0)
    assert tm.state is State.ABORTABLE_ERROR and isinstance(tm.last_error, errors.AbortableError)


def test_txn_offset_commit_group_authorization_is_fatal() -> None:
    tm, _, _ = in_transaction(tv=2)
    result = tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(5, "", -1)}, "g1")
    take(tm).handle_response(find_coordinator_ok("g1"))
    take(tm).handle_response(txn_offset_commit({TP0: 30}))
    with pytest.raises(errors.GroupAuthorizationError, match="g1"):
        result.wait(1.0)
    assert tm.state is State.FATAL_ERROR


def test_txn_offset_commit_retries_only_failed_partitions() -> None:
    tm, clock, _ = in_transaction(tv=2)
    offsets = {TP0: OffsetAndMetadata(5, "", -1), TP1: OffsetAndMetadata(6, "", -1)}
    result = tm.send_offsets_to_transaction(offsets, "g1")
    take(tm).handle_response(find_coordinator_ok("g1", node_id=1))
    take(tm).handle_response(txn_offset_commit({TP0: 0, TP1: 16}))  # NOT_COORDINATOR for p1
    assert tm.coordinator("group", "g1") is None
    take(tm).handle_response(find_coordinator_ok("g1", node_id=2))
    clock.advance_ms(100)
    retry = take(tm)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in retry.request.topics] == [
        ("orders", [1])
    ]
    retry.handle_response(txn_offset_commit({TP1: 3}))  # UNKNOWN_TOPIC_OR_PARTITION: retriable
    clock.advance_ms(100)
    take(tm).handle_response(txn_offset_commit({TP1: 0}))
    result.wait(1.0)


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
    tm, _, _ = in_transaction(tv=2)
    produce_ok(tm, TP0)
    result = tm.begin_commit()
    take(tm).handle_response(end_txn(code=code))
    with pytest.raises(exc_type):
        result.wait(1.0)
    assert tm.state is State.FATAL_ERROR


@pytest.mark.parametrize(
    ("code", "exc_type"), [(120, errors.TransactionAbortableError), (59, errors.UnknownProducerIdError)]
)
def test_end_txn_commit_abortable_errors_then_abort(code: int, exc_type: type[Exception]) -> None:
    tm, _, _ = in_transaction(tv=2)
    produce_ok(tm, TP0)
    result = tm.begin_commit()
    take(tm).handle_response(end_txn(code=code))
    with pytest.raises(exc_type):
        result.wait(1.0)
    assert tm.state is State.ABORTABLE_ERROR
    abort = tm.begin_abort()
    handler = take(tm)
    assert handler.request.committed is False
    handler.handle_response(end_txn(producer_id=7, epoch=1))
    abort.wait(1.0)
    assert tm.state is State.READY


def test_failed_abort_can_be_called_again() -> None:
    tm, _, _ = in_transaction(tv=2)
    produce_ok(tm, TP0)
    result = tm.begin_abort()
    take(tm).handle_response(end_txn(code=120))
    with pytest.raises(errors.TransactionAbortableError):
        result.wait(1.0)
    again = tm.begin_abort()
    take(tm).handle_response(end_txn(producer_id=7, epoch=1))
    again.wait(1.0)
    assert tm.state is State.READY


def test_end_txn_concurrent_transactions_retries_after_transaction_backoff() -> None:
    tm, clock, _ = in_transaction(tv=2)
    produce_ok(tm, TP0)
    result = tm.begin_commit()
    take(tm).handle_response(end_txn(code=51))
    assert tm.next_request(False) is None
    clock.advance_ms(20)
    take(tm).handle_response(end_txn(producer_id=7, epoch=1))
    result.wait(1.0)


def test_end_txn_not_coordinator_rediscovers() -> None:
    tm, clock, _ = in_transaction(tv=2)
    produce_ok(tm, TP0)
    result = tm.begin_commit()
    take(tm).handle_response(end_txn(code=16))
    find = take(tm)
    assert isinstance(find.request, FindCoordinatorRequest)
    find.handle_response(find_coordinator_ok(TID, node_id=2))
    clock.advance_ms(100)
    take(tm).handle_response(end_txn(producer_id=7, epoch=1))
    result.wait(1.0)


# --- produce errors, KIP-360 / KIP-588 -----------------------------------------------------------


def fail_batch(
    tm: TransactionManager, exc: BaseException, tp: TopicPartition = TP0, records: int = 3
) -> None:
    base = tm.sequence_number(tp)
    tm.increment_sequence(tp, records)
    tm.handle_failed_batch(tp, base, records, tm.producer_id_and_epoch.epoch, exc, True)


def test_tv1_sequence_error_aborts_then_bumps_epoch_kip360() -> None:
    tm, _, _ = in_transaction(tv=1)
    produce_ok(tm, TP0, records=3)
    fail_batch(tm, errors.OutOfOrderSequenceError("gap", error_code=45))
    assert tm.state is State.ABORTABLE_ERROR
    with pytest.raises(errors.OutOfOrderSequenceError, match="abortable"):
        tm.begin_commit()
    result = tm.begin_abort()
    end = take(tm)
    assert (end.request.committed, end.request.producer_epoch, end.request.version) == (False, 0, 4)
    end.handle_response(end_txn(version=4))
    assert tm.state is State.INITIALIZING and not result.done()
    bump = take(tm)
    assert bump.priority is Priority.EPOCH_BUMP
    req = bump.request
    assert (req.API_KEY, req.producer_id, req.producer_epoch) == (22, 7, 0)
    with capture_logs() as logs:
        bump.handle_response(init_pid(producer_id=7, epoch=1, version=req.version))
    result.wait(1.0)
    assert tm.state is State.READY and tm.producer_id_and_epoch.epoch == 1
    assert tm.sequence_number(TP0) == 0
    assert any(e["event"] == "txn.epoch_bumped" and e["reason"] == "kip360_after_abort" for e in logs)


def test_tv2_sequence_error_abort_lets_the_coordinator_bump() -> None:
    tm, _, _ = in_transaction(tv=2)
    fail_batch(tm, errors.UnknownProducerIdError("lost", error_code=59))
    assert tm.state is State.ABORTABLE_ERROR
    result = tm.begin_abort()
    end = take(tm)
    assert (end.request.version, end.request.committed) == (5, False)
    end.handle_response(end_txn(producer_id=7, epoch=1))
    result.wait(1.0)
    assert tm.state is State.READY and tm.producer_id_and_epoch.epoch == 1
    assert tm.next_request(False) is None  # no client-side InitProducerId


def test_invalid_producer_epoch_on_produce_is_abortable_after_timeout() -> None:
    tm, _, _ = in_transaction(tv=2)
    # kafka-python-style or txnproducer error with code 47: abortable on the produce path (KIP-588)
    fail_batch(tm, errors.InvalidProducerEpochError("stale epoch", error_code=47))
    assert tm.state is State.ABORTABLE_ERROR
    assert isinstance(tm.last_error, errors.AbortableError)
    assert "transaction_timeout_ms" in str(tm.last_error)
    result = tm.begin_abort()
    take(tm).handle_response(end_txn(producer_id=7, epoch=1))  # coordinator: retry of its own abort
    result.wait(1.0)
    assert tm.state is State.READY and tm.producer_id_and_epoch.epoch == 1


def test_producer_fenced_on_produce_is_fatal_and_fails_waiters() -> None:
    tm, _, _ = in_transaction(tv=2)
    offsets = tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(1, "", -1)}, "g1")
    fail_batch(tm, errors.ProducerFencedError("fenced", error_code=90))
    assert tm.state is State.FATAL_ERROR
    with pytest.raises(errors.ProducerFencedError):
        offsets.wait(1.0)
    assert not tm.is_send_to_partition_allowed(TP0)
    with pytest.raises(errors.ProducerFencedError):
        tm.begin_abort()


def test_failed_batch_during_abort_does_not_change_state() -> None:
    tm, _, _ = in_transaction(tv=2)
    produce_ok(tm, TP0)
    tm.begin_abort()
    fail_batch(tm, errors.TransactionAbortedError("aborted"))
    assert tm.state is State.ABORTING_TRANSACTION


def test_unknown_producer_id_failure_resets_partition_sequence() -> None:
    tm, _, _ = in_transaction(tv=2)
    produce_ok(tm, TP0, records=4)
    fail_batch(tm, errors.UnknownProducerIdError("lost", error_code=59))
    assert tm.sequence_number(TP0) == 0


# --- sequences -----------------------------------------------------------------------------------


def test_sequence_numbers_wrap_at_int_max() -> None:
    tm, _, _ = in_transaction(tv=2)
    tm.increment_sequence(TP0, 2**31 - 3)
    assert tm.sequence_number(TP0) == 2**31 - 3
    tm.increment_sequence(TP0, 5)
    assert tm.sequence_number(TP0) == 2


def test_failed_batch_with_adjust_pulls_later_sequences_back() -> None:
    tm, _, _ = in_transaction(tv=2)
    epoch = tm.producer_id_and_epoch.epoch
    tm.increment_sequence(TP0, 3)  # batch A: 0..2
    tm.increment_sequence(TP0, 2)  # batch B: 3..4
    tm.handle_failed_batch(TP0, 0, 3, epoch, errors.RecordTooLargeError("too big"), True)
    assert tm.sequence_number(TP0) == 2
    tm2, _, _ = in_transaction(tv=2)
    tm2.increment_sequence(TP0, 3)
    tm2.handle_failed_batch(TP0, 0, 3, epoch, errors.DeliveryTimeoutError("expired"), False)
    assert tm2.sequence_number(TP0) == 3  # retries exhausted: the broker may have it


def test_can_retry_rules() -> None:
    tm, _, _ = in_transaction(tv=2)
    epoch = tm.producer_id_and_epoch.epoch
    produce_ok(tm, TP0, records=3)  # acked 0..2
    assert tm.can_retry(TP0, 45, epoch, 6)  # collateral: an earlier batch (3..5) failed first
    assert not tm.can_retry(TP0, 45, epoch, 3)  # the next expected batch itself: a real gap
    assert tm.can_retry(TP0, 59, epoch, 3, log_start_offset=-1)
    assert not tm.can_retry(TP0, 59, epoch, 3, log_start_offset=10)
    assert tm.can_retry(TP0, 6, epoch, 3)  # NOT_LEADER_OR_FOLLOWER
    assert not tm.can_retry(TP0, 10, epoch, 3)  # MESSAGE_TOO_LARGE


# --- illegal calls in every state ----------------------------------------------------------------


def drive_to(state: State) -> TransactionManager:
    if state is State.UNINITIALIZED:
        return make_tm()[0]
    if state is State.INITIALIZING:
        tm = make_tm()[0]
        tm.initialize_transactions()
        return tm
    tm = initialized()[0]
    if state is State.READY:
        return tm
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
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
    "send": lambda tm: tm.maybe_add_partition(TP1),
    "send_offsets_to_transaction": lambda tm: tm.send_offsets_to_transaction(
        {TP0: OffsetAndMetadata(1, "", -1)}, "g"
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


@pytest.mark.parametrize(("state", "call"), [(s, c) for s in VALID for c in VALID[s]])
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
    tm, _, _ = in_transaction(tv=2)
    produce_ok(tm, TP0)
    result = tm.begin_commit()
    with pytest.raises(errors.TimeoutError, match="commit_transaction"):
        result.wait(0.0)
    assert tm.begin_commit() is result
    with pytest.raises(errors.IllegalStateError, match="commit_transaction"):
        tm.begin_abort()
    take(tm).handle_response(end_txn(producer_id=7, epoch=1))
    tm.begin_commit().wait(1.0)
    tm.begin_transaction()


def test_close_fails_pending_results_and_later_calls() -> None:
    tm, _, _ = make_tm()
    result = tm.initialize_transactions()
    tm.close()
    with pytest.raises(errors.ClosedError):
        result.wait(1.0)
    with pytest.raises(errors.ClosedError):
        tm.initialize_transactions()
    assert tm.next_request(False) is None


# --- priorities ----------------------------------------------------------------------------------


def test_add_partitions_go_before_end_txn_and_find_coordinator_first() -> None:
    tm, _, _ = initialized(tv=1)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    tm.begin_commit()
    tm.lookup_coordinator("transaction", TID)
    order = []
    for _ in range(2):
        h = take(tm)
        order.append(h.priority)
        if isinstance(h.request, FindCoordinatorRequest):
            h.handle_response(find_coordinator_ok(TID))
        else:
            h.handle_response(add_partitions({TP0: 0}))
    order.append(take(tm).priority)
    assert order == [Priority.FIND_COORDINATOR, Priority.ADD_PARTITIONS_OR_OFFSETS, Priority.END_TXN]


def test_metrics_snapshot_has_java_names_and_counts() -> None:
    tm, _, metrics = initialized()
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


# --- the recorded Kafka 4.1 exchanges ------------------------------------------------------------

RESPONSES = {
    "FindCoordinator": FindCoordinatorResponse,
    "InitProducerId": InitProducerIdResponse,
    "AddPartitionsToTxn": AddPartitionsToTxnResponse,
    "AddOffsetsToTxn": AddOffsetsToTxnResponse,
    "TxnOffsetCommit": TxnOffsetCommitResponse,
    "EndTxn": EndTxnResponse,
}


def _normalize(value: Any) -> Any:
    if isinstance(value, str):
        if value.startswith("$PID"):
            return 1000 + int(value[4:])
        return value.replace("$RUN", "r1")
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    return value


def _build(container_cls: Any, data: dict[str, Any], version: int | None = None) -> Any:
    fields = container_cls._struct.fields
    values: dict[str, Any] = {}
    for name, value in data.items():
        field = fields[name]
        if field.is_struct_array():
            values[name] = [_build(field.data_class, v) for v in value]
        elif field.is_struct():
            values[name] = _build(field.data_class, value)
        else:
            values[name] = value
    return container_cls[version](**values) if version is not None else container_cls(**values)


def _replay(
    name: str, tm: TransactionManager, actions: dict[int, Callable[[TransactionManager, dict[int, Any]], Any]]
) -> None:
    doc = _normalize(json.loads((CONFORMANCE / name).read_text()))
    steps = {s["step"]: s for s in doc["steps"] if "step" in s}
    results: list[Any] = []
    for number, step in steps.items():
        if number in actions:
            # the application observes each completed call before making the next one
            for result in results:
                result.wait(1.0)
            outcome = actions[number](tm, steps)
            results = [outcome] if outcome is not None else []
        api = step.get("api")
        if api == "Produce":
            for topic in step["request"]["topic_data"]:
                for part in topic["partition_data"]:
                    tp = TopicPartition(topic["name"], part["index"])
                    for batch in part["records"]:
                        assert tm.is_send_to_partition_allowed(tp), (number, tp)
                        assert tm.sequence_number(tp) == batch["base_sequence"], number
                        pid = tm.producer_id_and_epoch
                        assert (pid.producer_id, pid.epoch) == (batch["producer_id"], batch["producer_epoch"])
                        tm.increment_sequence(tp, batch["record_count"])
                        tm.handle_completed_batch(
                            tp, batch["base_sequence"], batch["record_count"], pid.epoch, 0
                        )
        elif api in RESPONSES:
            handler = take(tm)
            request = handler.request
            assert (request.API_KEY, request.version) == (step["api_key"], step["version"]), number
            assert request.to_dict() == step["request"], number
            handler.handle_response(_build(RESPONSES[api], step["response"], step["version"]))
    for result in results:
        result.wait(1.0)
    assert tm.next_request(False) is None


def _offsets_of(step: dict[str, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
    return {
        TopicPartition(t["name"], p["partition_index"]): OffsetAndMetadata(
            p["committed_offset"], p["committed_metadata"], p["committed_leader_epoch"]
        )
        for t in step["request"]["topics"]
        for p in t["partitions"]
    }


def _begin_and_add(*partitions: int) -> Callable[[TransactionManager, dict[int, Any]], None]:
    def act(tm: TransactionManager, steps: dict[int, Any]) -> None:
        topic = next(iter(s for s in steps.values() if s.get("api") == "Produce"))["request"]["topic_data"][
            0
        ]["name"]
        tm.begin_transaction()
        for p in partitions:
            tm.maybe_add_partition(TopicPartition(topic, p))

    return act


def _send_offsets(commit_step: int) -> Callable[[TransactionManager, dict[int, Any]], Any]:
    def act(tm: TransactionManager, steps: dict[int, Any]) -> Any:
        group = steps[commit_step]["request"]["group_id"]
        return tm.send_offsets_to_transaction(_offsets_of(steps[commit_step]), group)

    return act


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="conformance recordings not available")
def test_replays_recorded_tv2_commit_flow() -> None:
    doc_names = _normalize(json.loads((CONFORMANCE / "tv2_commit_flow.json").read_text()))["names"]
    tm = TransactionManager(doc_names["transactional_id"], 60000, 100, 20, None, None, clock=FakeClock())
    tm.set_transaction_version(2)
    _replay(
        "tv2_commit_flow.json",
        tm,
        {
            3: lambda tm, s: tm.initialize_transactions(),
            5: _begin_and_add(0, 1),
            6: _send_offsets(7),
            8: lambda tm, s: tm.begin_commit(),
            11: _begin_and_add(0, 1),
            12: lambda tm, s: tm.begin_abort(),
        },
    )
    assert (tm.producer_id_and_epoch.producer_id, tm.producer_id_and_epoch.epoch) == (1001, 2)


@pytest.mark.skipif(not CONFORMANCE.exists(), reason="conformance recordings not available")
def test_replays_recorded_tv1_commit_flow() -> None:
    doc_names = _normalize(json.loads((CONFORMANCE / "tv1_commit_flow.json").read_text()))["names"]
    caps = {FindCoordinatorRequest.API_KEY: 3}  # the recording used the single-key form
    tm = TransactionManager(
        doc_names["transactional_id"], 60000, 100, 20, None, None, max_versions=caps.get, clock=FakeClock()
    )
    tm.set_transaction_version(1)
    _replay(
        "tv1_commit_flow.json",
        tm,
        {
            3: lambda tm, s: tm.initialize_transactions(),
            5: _begin_and_add(0, 1),
            7: _send_offsets(9),
            10: lambda tm, s: tm.begin_commit(),
            13: _begin_and_add(0, 1),
            15: lambda tm, s: tm.begin_abort(),
            21: _begin_and_add(0),
            23: lambda tm, s: tm.begin_commit(),
        },
    )
    assert (tm.producer_id_and_epoch.producer_id, tm.producer_id_and_epoch.epoch) == (1001, 0)


# --- retries, version switches, abort clean-up ---------------------------------------------------


def test_sender_retry_backoff_rules() -> None:
    tm, clock, _ = make_tm()
    tm.initialize_transactions()
    init = tm.next_request(False)
    assert init is not None and isinstance(init.request, InitProducerIdRequest)
    tm.lookup_coordinator("transaction", TID)
    tm.lookup_coordinator("transaction", TID)  # deduplicated
    tm.retry(init)
    assert init.not_before == clock.now  # paced by the FindCoordinator queued ahead of it
    find = take(tm)
    find.handle_response(find_coordinator_ok(TID))
    again = tm.next_request(False)
    assert again is init
    tm.retry(again)  # e.g. the coordinator's connection is not ready: a real backoff this time
    assert tm.next_request_delay_ms() == pytest.approx(100.0)
    assert tm.next_request(False) is None


def test_transaction_version_change_waits_for_the_next_transaction() -> None:
    tm, _, _ = in_transaction(tv=1)
    tm.set_transaction_version(2)
    assert tm.transaction_version == 1  # the open transaction stays TV1
    tm.maybe_add_partition(TP1)
    add = take(tm)
    assert isinstance(add.request, AddPartitionsToTxnRequest)
    add.handle_response(add_partitions({TP1: 0}))
    commit(tm, end_txn(version=4))
    assert tm.transaction_version == 2
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    assert tm.is_send_to_partition_allowed(TP0) and tm.next_request(False) is None


def test_abort_drops_unsent_offset_commits() -> None:
    tm, _, _ = in_transaction(tv=2)
    offsets = tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(1, "", -1)}, "g1")
    abort = tm.begin_abort()
    with pytest.raises(errors.TransactionAbortedError, match="abort_transaction"):
        offsets.wait(1.0)
    take(tm).handle_response(end_txn(producer_id=7, epoch=1))  # offsets were requested: not empty
    abort.wait(1.0)


def test_tv1_epoch_bump_fenced_is_fatal() -> None:
    tm, _, _ = in_transaction(tv=1)
    fail_batch(tm, errors.DeliveryTimeoutError("expired"))
    result = tm.begin_abort()
    take(tm).handle_response(end_txn(version=4))
    take(tm).handle_response(init_pid(code=90, producer_id=-1, epoch=-1, version=4))
    with pytest.raises(errors.ProducerFencedError):
        result.wait(1.0)
    assert tm.state is State.FATAL_ERROR


def test_response_after_close_is_ignored() -> None:
    tm, _, _ = make_tm()
    tm.initialize_transactions()
    find = take(tm)
    tm.close()
    find.handle_response(find_coordinator_ok(TID))
    assert tm.coordinator("transaction") is None and not tm.has_in_flight_request()


def test_kafka_python_errors_are_classified_by_code() -> None:
    import kafka.errors as kerrors

    tm, _, _ = in_transaction(tv=2)
    fail_batch(tm, kerrors.OutOfOrderSequenceNumberError())
    assert tm.state is State.ABORTABLE_ERROR
    assert isinstance(tm.last_error, errors.TransactionAbortableError)
    assert tm.last_error.error_code == 45
    tm2, _, _ = in_transaction(tv=2)
    fail_batch(tm2, kerrors.ProducerFencedError())
    assert tm2.state is State.FATAL_ERROR and isinstance(tm2.last_error, errors.ProducerFencedError)


def test_malformed_response_fails_the_waiter_instead_of_hanging() -> None:
    tm, _, _ = make_tm()
    result = tm.initialize_transactions()
    take(tm).handle_response(object())  # not a FindCoordinatorResponse
    with pytest.raises(errors.FatalError, match="FindCoordinator response"):
        result.wait(1.0)
    assert tm.state is State.FATAL_ERROR


def test_sequence_book_wraps_when_pulling_sequences_back() -> None:
    from txnproducer._internal.protocol.record_batch import add_sequence
    from txnproducer._internal.txn.sequences import SequenceBook

    book = SequenceBook()
    book.assign(TP0, 2**31 - 2)  # 0 .. 2**31-3
    book.completed(TP0, 0, 2**31 - 2, base_offset=0)
    first = book.assign(TP0, 4)  # 2**31-2, 2**31-1, 0, 1
    second = book.assign(TP0, 2)  # 2, 3
    assert (first, second, book.next_sequence(TP0)) == (2**31 - 2, 2, 4)
    book.failed(TP0, first, 4, adjust=True)
    assert book.next_sequence(TP0) == 0
    assert book.in_flight_sequences(TP0) == [add_sequence(2, -4)] == [2**31 - 2]
    book.completed(TP0, 2**31 - 2, 2, base_offset=10)
    assert book.last_acked_sequence(TP0) == 2**31 - 1
    assert book.is_next_sequence(TP0, 0)  # after 2**31-1 comes 0


def test_concurrent_sends_from_many_threads_all_get_added() -> None:
    tm, _, _ = initialized(tv=1)
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
        handler = take(tm)
        handler.handle_response(add_partitions(dict.fromkeys(handler.partitions, 0)))  # type: ignore[attr-defined]
    assert all(tm.is_send_to_partition_allowed(tp) for tp in partitions)


def test_bad_offsets_are_rejected_in_the_calling_thread() -> None:
    tm, _, _ = in_transaction(tv=2)
    with pytest.raises(ValueError, match="orders-0"):
        tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(-5, "", -1)}, "g1")
    with pytest.raises(TypeError):
        tm.send_offsets_to_transaction({("orders", 0): OffsetAndMetadata(5, "", -1)}, "g1")
    with pytest.raises(TypeError):
        tm.send_offsets_to_transaction({TP0: OffsetAndMetadata(5, "", -1)}, 42)
    assert tm.next_request(False) is None and tm.state is State.IN_TRANSACTION
    result = tm.send_offsets_to_transaction({TP0: 9}, "g1")  # a bare offset is accepted
    take(tm).handle_response(find_coordinator_ok("g1"))
    handler = take(tm)
    assert handler.request.topics[0].partitions[0].committed_offset == 9
    handler.handle_response(txn_offset_commit({TP0: 0}))
    result.wait(1.0)
