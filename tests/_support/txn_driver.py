"""Drive a TransactionManager the way the Sender does, with kafka-python response objects.

Shared by the transaction manager's unit tests (``tests/unit/test_txn_*.py``): a test plays the
Sender - it takes handlers with ``next_request()``, marks them in flight, checks the request the
manager built (API, version, fields) and completes it with a response of the shape a Kafka 4.1
broker sends (see ``shared/conformance/kafka-4.1.0``). Time is a fake clock.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer.transaction import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnResponse,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
)
from kafka.structs import TopicPartition

from txnproducer._internal.metrics import ProducerMetrics
from txnproducer._internal.protocol.end_txn import EndTxnRequestData
from txnproducer._internal.txn.handler import TxnRequestHandler
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
    base = tm.assign_sequence(tp, records)
    tm.handle_completed_batches([(tp, base, records, tm.producer_id_and_epoch.epoch, base_offset)])
    return base


def commit(tm: TransactionManager, response: Any) -> None:
    result = tm.begin_commit()
    handler = take(tm)
    assert isinstance(handler.request, EndTxnRequestData) and handler.request.committed
    handler.handle_response(response)
    result.wait(1.0)


def fail_batch(
    tm: TransactionManager, exc: BaseException, tp: TopicPartition = TP0, records: int = 3
) -> None:
    """Simulate one batch of ``tp`` failing for good with ``exc``."""
    base = tm.assign_sequence(tp, records)
    tm.handle_failed_batch(tp, base, records, tm.producer_id_and_epoch.epoch, exc, True)
