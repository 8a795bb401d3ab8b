"""OffsetForLeaderEpoch (key 23): v2-4 requests that validate a consumer's position (KIP-320).

Why: after a partition's leader changes, the log the consumer read may have been truncated by the
new leader (an unclean election, or records the old leader had not replicated). The consumer asks
the new leader for the end offset of the leader epoch of the last record it consumed; an end offset
below its position means those records are gone - the consumer detects it instead of reading on
from an offset that now holds other records. Rare (once per leader change per partition), so
kafka-python's classes encode; this module builds the request and reads the answer into
:class:`EpochEndOffset` values.

Versions (Kafka's ``OffsetForLeaderEpochRequest.json``; Kafka 4.1 speaks v2-4): v2 has the
current leader epoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH); v3 the replica id (-1: a
consumer, as the Java client's ``forConsumer``); v4 is flexible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest

__all__ = ["OFFSET_FOR_LEADER_EPOCH_API_KEY", "OFFSET_FOR_LEADER_EPOCH_MAX_VERSION",
           "OFFSET_FOR_LEADER_EPOCH_MIN_VERSION", "EpochEndOffset", "epoch_end_offsets",
           "offset_for_leader_epoch_request"]

OFFSET_FOR_LEADER_EPOCH_API_KEY = 23
OFFSET_FOR_LEADER_EPOCH_MIN_VERSION = 2
OFFSET_FOR_LEADER_EPOCH_MAX_VERSION = 4


class EpochEndOffset(NamedTuple):
    """One partition's answer: the largest epoch <= the one asked, and where it ends (-1: unknown)."""

    error_code: int
    leader_epoch: int
    end_offset: int


def offset_for_leader_epoch_request(version: int,
                                    partitions: Mapping[str, Iterable[tuple[int, int, int]]]) -> Any:
    """A request of ``version`` for ``{topic: [(partition, current leader epoch, epoch to look up)]}``."""
    if not OFFSET_FOR_LEADER_EPOCH_MIN_VERSION <= version <= OFFSET_FOR_LEADER_EPOCH_MAX_VERSION:
        raise ValueError(f"OffsetForLeaderEpoch version {version} is not supported "
                         f"(v{OFFSET_FOR_LEADER_EPOCH_MIN_VERSION}-v{OFFSET_FOR_LEADER_EPOCH_MAX_VERSION})")
    topic_cls = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    part_cls = topic_cls.OffsetForLeaderPartition
    topics = [topic_cls(topic=topic, partitions=[
        part_cls(partition=p, current_leader_epoch=current, leader_epoch=epoch)
        for p, current, epoch in parts])
        for topic, parts in partitions.items()]
    return OffsetForLeaderEpochRequest[version](replica_id=-1, topics=topics)


def epoch_end_offsets(response: Any) -> dict[tuple[str, int], EpochEndOffset]:
    """``{(topic, partition): EpochEndOffset}`` of an OffsetForLeaderEpoch answer."""
    out: dict[tuple[str, int], EpochEndOffset] = {}
    for topic in response.topics:
        for p in topic.partitions:
            out[(topic.topic, p.partition)] = EpochEndOffset(p.error_code, p.leader_epoch, p.end_offset)
    return out
