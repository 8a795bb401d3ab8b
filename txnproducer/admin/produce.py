"""Produce (key 0): v3-11 - write one record idempotently with acks=all, and wait for its offset.

Why the tools write at all: the Spark sink keeps its decisions and announcements in its state topic
(``spark/state_topic.py``), one record at a time, each waited for before the next is written. What it
relies on is the Java idempotent producer's promise for that pattern: a record acknowledged is below the
high watermark (acks=all), and a retry after a lost answer does not write it twice. So the writer takes
a producer id (InitProducerId without a transactional id, from any broker) and numbers its records per
partition; a retry carries the same sequence, which the leader answers DUPLICATE_SEQUENCE_NUMBER with
the first write's offset. After an error that breaks the sequence (OUT_OF_ORDER_SEQUENCE_NUMBER,
UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH) the writer takes a new producer id and starts again at 0,
as a new producer would.

Errors: NOT_LEADER_OR_FOLLOWER, a lost connection and the other retriable codes look the leader up
again after ``retry_backoff_ms``, until the deadline. Authorization (Kafka 4.1's
``handleProduceRequest``): Write on the topic (TOPIC_AUTHORIZATION_FAILED, an
:class:`AdminAuthorizationError`).
"""

from __future__ import annotations

import time
from typing import Any

from kafka.protocol.producer import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest
from kafka.record.memory_records import MemoryRecordsBuilder

from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, BrokerTooOldError, UnexpectedBrokerError
from .metadata import leaders_of
from .results import TopicPartition

__all__ = ["IdempotentWriter"]

_PRODUCE_MAX = 11  # v12 only adds TV2's implicit partitions; v13 names topics by id
_MAGIC = 2
_NEW_PRODUCER = frozenset({ec.OUT_OF_ORDER_SEQUENCE_NUMBER, ec.UNKNOWN_PRODUCER_ID,
                           ec.INVALID_PRODUCER_EPOCH, ec.INVALID_PRODUCER_ID_MAPPING})


class IdempotentWriter:
    """Writes records one at a time (see the module docstring); the network thread is the caller's."""

    def __init__(self, conn: AdminConnection) -> None:
        self._conn = conn
        self._producer: tuple[int, int] | None = None
        self._sequences: dict[TopicPartition, int] = {}

    def write(self, tp: TopicPartition, key: bytes | None, value: bytes | None, deadline: Deadline) -> int:
        """Write one record to ``tp`` and return its offset."""
        last = ""
        while True:
            if self._producer is None:
                self._producer = self._init_producer_id(deadline)
                self._sequences.clear()
            producer_id, epoch = self._producer
            sequence = self._sequences.get(tp, 0)
            leader = leaders_of(self._conn, [tp], deadline)[1][tp]
            records = _one_record(key, value, producer_id, epoch, sequence)

            def build(version: int, records: bytes = records) -> Any:
                if version < 3:
                    raise BrokerTooOldError("writing a record batch v2 needs Produce v3 (Kafka 0.11+)")
                partition = ProduceRequest.TopicProduceData.PartitionProduceData(index=tp.partition,
                                                                                 records=records)
                return ProduceRequest(version=min(version, _PRODUCE_MAX), transactional_id=None, acks=-1,
                                      timeout_ms=max(1, int(deadline.remaining() * 1000)),
                                      topic_data=[ProduceRequest.TopicProduceData(name=tp.topic,
                                                                                  partition_data=[partition])])

            answer = self._conn.send(leader, ProduceRequest, build, deadline, f"writing to {tp}{last}")
            part = answer.responses[0].partition_responses[0]
            code = int(part.error_code)
            if code in (ec.NONE, ec.DUPLICATE_SEQUENCE_NUMBER):
                self._sequences[tp] = (sequence + 1) & 0x7FFFFFFF
                return int(part.base_offset)
            if code == ec.TOPIC_AUTHORIZATION_FAILED:
                raise AdminAuthorizationError(
                    f"not authorized to write to {tp} (TOPIC_AUTHORIZATION_FAILED): grant Write on Topic"
                    f" {tp.topic!r}", error_code=code, acl=f"Write on Topic {tp.topic!r}")
            if code in _NEW_PRODUCER:
                self._producer = None
            elif not ec.is_retriable(code):
                message = getattr(part, "error_message", None) or ec.error_name(code)
                raise UnexpectedBrokerError(f"writing to {tp}: {message}", error_code=code)
            last = f" (last answer: {ec.error_name(code)})"
            self._conn.backoff(deadline, f"writing to {tp}{last}")

    def _init_producer_id(self, deadline: Deadline) -> tuple[int, int]:
        def build(version: int) -> Any:
            values: dict[str, Any] = {"transactional_id": None, "transaction_timeout_ms": -1}
            if version >= 3:
                values.update(producer_id=-1, producer_epoch=-1)
            return InitProducerIdRequest(version=version, **values)

        while True:
            node = self._conn.any_node(deadline)
            answer = self._conn.send(node, InitProducerIdRequest, build, deadline, "taking a producer id")
            code = int(answer.error_code)
            if code == ec.NONE:
                return int(answer.producer_id), int(answer.producer_epoch)
            if code == ec.CLUSTER_AUTHORIZATION_FAILED:
                raise AdminAuthorizationError(
                    "not authorized to take a producer id (CLUSTER_AUTHORIZATION_FAILED): grant"
                    " IdempotentWrite on the cluster, or Write on the topic (Kafka 2.8+)", error_code=code,
                    acl="IdempotentWrite on the cluster")
            if not ec.is_retriable(code):
                raise UnexpectedBrokerError(f"InitProducerId answered {ec.error_name(code)}", error_code=code)
            self._conn.backoff(deadline, f"taking a producer id (last answer: {ec.error_name(code)})")


def _one_record(key: bytes | None, value: bytes | None, producer_id: int, epoch: int, sequence: int) -> bytes:
    builder = MemoryRecordsBuilder(_MAGIC, 0, 1 << 20, producer_id=producer_id, producer_epoch=epoch,
                                   base_sequence=sequence)
    builder.append(int(time.time() * 1000), key, value, [])
    builder.close()
    return bytes(builder.buffer())
