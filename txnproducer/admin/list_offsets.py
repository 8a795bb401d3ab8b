"""ListOffsets (key 2): v2+ - a partition's last stable offset and high watermark, from its leader.

Why: "which transaction holds this partition?" is answered by comparing the two. The latest offset asked
with READ_UNCOMMITTED is the high watermark; with READ_COMMITTED it is the last stable offset - the first
offset of the oldest open transaction, up to which ``read_committed`` consumers can read. A gap between
them means an open transaction holds the partition, and the producer whose transaction starts at the
LSO (DescribeProducers) is the one holding it.

Versions: the isolation level exists from v2 (Kafka 0.11); a broker that only speaks v1 cannot tell the
LSO (:class:`BrokerTooOldError`). Errors (per partition): NOT_LEADER_OR_FOLLOWER and
UNKNOWN_TOPIC_OR_PARTITION look the leader up again until the deadline. Authorization (Kafka 4.1's
``handleListOffsetRequest``): Describe on the topic.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from kafka.protocol.consumer.offsets import ListOffsetsRequest

from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, BrokerTooOldError, UnexpectedBrokerError
from .metadata import leaders_of
from .results import TopicPartition

__all__ = ["EARLIEST", "LATEST", "offsets_at", "stable_and_end_offsets"]

LATEST, EARLIEST = -1, -2
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
_MOVED = frozenset({ec.NOT_LEADER_OR_FOLLOWER, ec.UNKNOWN_TOPIC_OR_PARTITION})


def _latest(
    conn: AdminConnection, node: int, partitions: Sequence[TopicPartition], isolation: int,
    deadline: Deadline, timestamp: int = LATEST,
) -> tuple[dict[TopicPartition, int], list[TopicPartition]]:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)

    def build(version: int) -> Any:
        if version < 2:
            raise BrokerTooOldError(
                f"reading the last stable offset needs ListOffsets v2 (Kafka 0.11+);"
                f" broker {node} speaks up to v{version}"
            )
        topics = [
            ListOffsetsRequest.ListOffsetsTopic(
                name=t,
                partitions=[
                    ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                        partition_index=p, timestamp=timestamp
                    )
                    for p in ps
                ],
            )
            for t, ps in sorted(by_topic.items())
        ]
        return ListOffsetsRequest(version=version, replica_id=-1, isolation_level=isolation, topics=topics)

    answer = conn.send(node, ListOffsetsRequest, build, deadline, f"reading the end offsets on broker {node}")
    offsets: dict[TopicPartition, int] = {}
    moved: list[TopicPartition] = []
    for t in answer.topics:
        for p in t.partitions:
            tp, code = TopicPartition(str(t.name), int(p.partition_index)), int(p.error_code)
            if code == ec.NONE:
                offsets[tp] = int(p.offset)
            elif code == ec.TOPIC_AUTHORIZATION_FAILED:
                raise AdminAuthorizationError(
                    f"not authorized to read the offsets of {tp} (TOPIC_AUTHORIZATION_FAILED): grant Describe"
                    f" on Topic {tp.topic!r}",
                    error_code=code,
                    acl=f"Describe on Topic {tp.topic!r}",
                )
            elif code in _MOVED:
                moved.append(tp)
            else:
                raise UnexpectedBrokerError(
                    f"ListOffsets for {tp} answered {ec.error_name(code)}", error_code=code
                )
    return offsets, moved


def stable_and_end_offsets(
    conn: AdminConnection, partitions: Sequence[TopicPartition], deadline: Deadline
) -> dict[TopicPartition, tuple[int, int]]:
    """(last stable offset, high watermark) of each partition, from its leader."""
    out: dict[TopicPartition, tuple[int, int]] = {}
    pending = sorted(set(partitions))
    while pending:
        leaders = leaders_of(conn, pending, deadline)[1]
        by_node: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp, node in leaders.items():
            by_node[node].append(tp)
        moved: set[TopicPartition] = set()
        for node, tps in sorted(by_node.items()):
            # the high watermark first: an LSO read after it is never above it
            ends, lost_end = _latest(conn, node, tps, READ_UNCOMMITTED, deadline)
            stable, lost_stable = _latest(conn, node, tps, READ_COMMITTED, deadline)
            moved.update(lost_end, lost_stable)
            for tp in tps:
                if tp in ends and tp in stable:
                    out[tp] = (min(stable[tp], ends[tp]), ends[tp])
        pending = sorted(moved)
        if pending:
            conn.backoff(deadline, "finding the new leaders of " + ", ".join(str(tp) for tp in pending[:5]))
    return out


def offsets_at(
    conn: AdminConnection, partitions: Sequence[TopicPartition], timestamp: int, deadline: Deadline
) -> dict[TopicPartition, int]:
    """Each partition's ``EARLIEST`` (log start) or ``LATEST`` (high watermark) offset, from its leader."""
    out: dict[TopicPartition, int] = {}
    pending = sorted(set(partitions))
    while pending:
        by_node: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp, node in leaders_of(conn, pending, deadline)[1].items():
            by_node[node].append(tp)
        moved: list[TopicPartition] = []
        for node, tps in sorted(by_node.items()):
            found, lost = _latest(conn, node, tps, READ_UNCOMMITTED, deadline, timestamp)
            out.update(found)
            moved += lost
        pending = sorted(moved)
        if pending:
            conn.backoff(deadline, "finding the new leaders of " + ", ".join(str(tp) for tp in pending[:5]))
    return out
