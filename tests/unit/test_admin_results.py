"""The admin tools' result values (``admin/results.py``)."""

from __future__ import annotations

import pytest

from txnproducer.admin import PartitionProducers, ProducerState, TopicPartition
from txnproducer.admin.results import to_jsonable

TP = TopicPartition("orders-eu", 3)


def producer(pid: int, start: int | None) -> ProducerState:
    return ProducerState(pid, 0, 5, 1000, None, start)


def test_topic_partition_spelling() -> None:
    assert str(TP) == "orders-eu-3" and TopicPartition.parse("orders-eu-3") == TP
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 2), TopicPartition("a", 1)])[
        0
    ] == TopicPartition("a", 1)
    with pytest.raises(ValueError, match="not a topic-partition"):
        TopicPartition.parse("orders")


def test_the_lso_holder_is_the_open_transaction_starting_at_the_lso() -> None:
    found = PartitionProducers(TP, 1, (producer(1, None), producer(2, 7), producer(3, 4)), 4, 9)
    assert [p.producer_id for p in found.open_transactions] == [2, 3]
    assert found.lso_holder == producer(3, 4)
    assert PartitionProducers(TP, 1, (producer(3, 4),), 9, 9).lso_holder is None  # nothing held back
    assert PartitionProducers(TP, 1, (producer(3, 4),)).lso_holder is None  # offsets not read


def test_json_shape() -> None:
    assert to_jsonable([PartitionProducers(TP, 1, (producer(2, None),), 4, 4)]) == [
        {
            "partition": {"topic": "orders-eu", "partition": 3},
            "broker_id": 1,
            "last_stable_offset": 4,
            "high_watermark": 4,
            "producers": [
                {
                    "producer_id": 2,
                    "producer_epoch": 0,
                    "last_sequence": 5,
                    "last_timestamp": 1000,
                    "coordinator_epoch": None,
                    "txn_start_offset": None,
                }
            ],
        }
    ]
