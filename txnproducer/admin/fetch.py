"""Fetch (key 1): v4-12 - the records of one partition in an offset range, from its leader.

Why the tools read records: the Spark sink reads its state topic (``spark/state_topic.py``) - a short
range of one partition at a time, backwards from its end for the latest decision - and a consumer's
machinery (positions, sessions, a poll loop) is more than such a read needs. Each request is a
session-less full fetch (session id 0, epoch -1) with READ_UNCOMMITTED: the state topic holds no
transactions, so every record below the high watermark is readable. Control batches are skipped.

Errors: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION and the other retriable codes look the leader
up again after ``retry_backoff_ms``, until the deadline; OFFSET_OUT_OF_RANGE (retention or compaction
removed the start) is an :class:`UnexpectedBrokerError` naming the range. Authorization (Kafka 4.1's
``handleFetchRequest``): Read on the topic.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kafka.protocol.consumer import FetchRequest
from kafka.record.memory_records import MemoryRecords

from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, BrokerTooOldError, UnexpectedBrokerError
from .metadata import leaders_of
from .results import TopicPartition

__all__ = ["StoredRecord", "read_range"]

_FETCH_MAX = 12  # v13 names topics by id
_MAX_BYTES = 1 << 20
_WAIT_MS = 20


class StoredRecord(NamedTuple):
    offset: int
    key: bytes | None
    value: bytes | None


def read_range(conn: AdminConnection, tp: TopicPartition, start: int, end: int,
               deadline: Deadline) -> list[StoredRecord]:
    """Every record of ``tp`` with an offset in ``[start, end)``."""
    records: list[StoredRecord] = []
    position = start
    last = ""
    while position < end:
        leader = leaders_of(conn, [tp], deadline)[1][tp]

        def build(version: int, offset: int = position) -> Any:
            if version < 4:
                raise BrokerTooOldError("reading a record batch v2 needs Fetch v4 (Kafka 0.11+)")
            partition = FetchRequest.FetchTopic.FetchPartition(
                partition=tp.partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=_MAX_BYTES)
            return FetchRequest(version=min(version, _FETCH_MAX), replica_id=-1, max_wait_ms=_WAIT_MS,
                                min_bytes=1, max_bytes=_MAX_BYTES, isolation_level=0, session_id=0,
                                session_epoch=-1,
                                topics=[FetchRequest.FetchTopic(topic=tp.topic, partitions=[partition])],
                                forgotten_topics_data=[], rack_id="")

        what = f"reading {tp} from offset {position}{last}"
        answer = conn.send(leader, FetchRequest, build, deadline, what)
        part = answer.responses[0].partitions[0]
        code = int(part.error_code)
        if code == ec.TOPIC_AUTHORIZATION_FAILED:
            raise AdminAuthorizationError(
                f"not authorized to read {tp} (TOPIC_AUTHORIZATION_FAILED): grant Read on Topic {tp.topic!r}",
                error_code=code, acl=f"Read on Topic {tp.topic!r}")
        if code != ec.NONE:
            if not ec.is_retriable(code):
                raise UnexpectedBrokerError(
                    f"reading {tp} from offset {position} (up to {end}): {ec.error_name(code)}",
                    error_code=code)
            last = f" (last answer: {ec.error_name(code)})"
            conn.backoff(deadline, f"reading {tp}{last}")
            continue
        position = _decode(part.records, position, end, records)
        if position < end and not part.records:
            conn.backoff(deadline, f"reading {tp} up to offset {end}")  # not replicated that far yet
    return records


def _decode(data: Any, position: int, end: int, into: list[StoredRecord]) -> int:
    """Append the records of ``data`` in ``[position, end)``; the position after the last batch read."""
    if not data:
        return position
    batches = MemoryRecords(bytes(data))
    while batches.has_next():
        batch = batches.next_batch()
        if batch is None:
            break
        if not batch.is_control_batch:
            for record in batch:
                if position <= record.offset < end:
                    into.append(StoredRecord(record.offset, record.key, record.value))
        # past the whole batch, whatever compaction left of it (a batch keeps its last offset)
        position = max(position, int(batch.last_offset) + 1)
    return position
