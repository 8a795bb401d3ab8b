"""TransactionManager: the recorded Kafka 4.1 exchanges (shared/conformance) replayed request by request.

Driven like the Sender drives it (``tests/_support/txn_driver.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    EndTxnResponse,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
)
from kafka.structs import OffsetAndMetadata, TopicPartition

from tests._support import txn_driver as drv
from txnproducer._internal.txn.manager import TransactionManager

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
    doc = _normalize(json.loads((drv.CONFORMANCE / name).read_text()))
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
                        assert tm.assign_sequence(tp, batch["record_count"]) == batch["base_sequence"], number
                        tm.handle_completed_batches(
                            [(tp, batch["base_sequence"], batch["record_count"], pid.epoch, 0)]
                        )
        elif api in RESPONSES:
            handler = drv.take(tm)
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


@pytest.mark.skipif(not drv.CONFORMANCE.exists(), reason="conformance recordings not available")
def test_replays_recorded_tv2_commit_flow() -> None:
    doc_names = _normalize(json.loads((drv.CONFORMANCE / "tv2_commit_flow.json").read_text()))["names"]
    tm = TransactionManager(doc_names["transactional_id"], 60000, 100, 20, None, None, clock=drv.FakeClock())
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


@pytest.mark.skipif(not drv.CONFORMANCE.exists(), reason="conformance recordings not available")
def test_replays_recorded_tv1_commit_flow() -> None:
    doc_names = _normalize(json.loads((drv.CONFORMANCE / "tv1_commit_flow.json").read_text()))["names"]
    caps = {FindCoordinatorRequest.API_KEY: 3}  # the recording used the single-key form
    tm = TransactionManager(
        doc_names["transactional_id"], 60000, 100, 20, None, None, max_versions=caps.get,
        clock=drv.FakeClock(),
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
