"""ListOffsets (key 2): v2-10 requests for a consumer's offset reset, and their answers as values.

Why a module: the consumer asks for the earliest (-2) or latest (-1) offset of a partition when its
position is unknown or out of range (``auto_offset_reset``). It is rare - once per partition per
reset - so kafka-python's request and response classes do the encoding; this module builds the
request for a version and reads the answer into :class:`ListedOffset` values, so the fetcher never
touches kafka-python's containers.

Versions (Kafka's ``ListOffsetsRequest.json``): v2 is the first with the isolation level (a
read_committed consumer's "latest" is the last stable offset); v4 adds the partition's current
leader epoch (KIP-320: the broker answers FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH to a stale or
future one) and returns the leader epoch of the offset; v6+ is flexible; v10 adds the request
timeout (KIP-1075). Kafka 4.1 speaks v1-10.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kafka.protocol.consumer.offsets import ListOffsetsRequest

__all__ = ["EARLIEST", "LATEST", "LIST_OFFSETS_API_KEY", "LIST_OFFSETS_MAX_VERSION",
           "LIST_OFFSETS_MIN_VERSION", "ListedOffset", "list_offsets_request", "listed_offsets"]

LIST_OFFSETS_API_KEY = 2
LIST_OFFSETS_MIN_VERSION = 2
LIST_OFFSETS_MAX_VERSION = 10
EARLIEST = -2
LATEST = -1


class ListedOffset(NamedTuple):
    """One partition's answer."""

    error_code: int
    offset: int
    timestamp: int
    leader_epoch: int  # -1 before v4 or when unknown


def list_offsets_request(version: int, partitions: Mapping[str, Iterable[tuple[int, int, int]]],
                         *, read_committed: bool = True, timeout_ms: int = 30_000) -> Any:
    """A ListOffsets request of ``version`` for
    ``{topic: [(partition, current leader epoch, timestamp)]}``."""
    if not LIST_OFFSETS_MIN_VERSION <= version <= LIST_OFFSETS_MAX_VERSION:
        raise ValueError(f"ListOffsets version {version} is not supported "
                         f"(v{LIST_OFFSETS_MIN_VERSION}-v{LIST_OFFSETS_MAX_VERSION})")
    topic_cls = ListOffsetsRequest.ListOffsetsTopic
    part_cls = topic_cls.ListOffsetsPartition
    topics = [topic_cls(name=topic, partitions=[
        part_cls(partition_index=p, current_leader_epoch=epoch, timestamp=ts) for p, epoch, ts in parts])
        for topic, parts in partitions.items()]
    return ListOffsetsRequest[version](replica_id=-1, isolation_level=1 if read_committed else 0,
                                       topics=topics, timeout_ms=timeout_ms)


def listed_offsets(response: Any) -> dict[tuple[str, int], ListedOffset]:
    """``{(topic, partition): ListedOffset}`` of a ListOffsets answer."""
    out: dict[tuple[str, int], ListedOffset] = {}
    for topic in response.topics:
        for p in topic.partitions:
            out[(topic.name, p.partition_index)] = ListedOffset(
                p.error_code, p.offset, p.timestamp, getattr(p, "leader_epoch", -1))
    return out
