"""ListOffsets (key 2): v2+ - a partition's offsets (earliest, last stable, high watermark, by timestamp).

Why: "which transaction holds this partition?" is answered by comparing the last stable offset and
the high watermark; the Spark source's driver plans its reads with the earliest and latest offsets
and those found by timestamp (``list_offsets``). The latest offset asked
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
from collections.abc import Mapping, Sequence
from typing import Any

from kafka.protocol.consumer.offsets import ListOffsetsRequest

from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, BrokerTooOldError, UnexpectedBrokerError
from .metadata import leaders_of
from .results import TopicPartition

__all__ = ["EARLIEST", "LATEST", "list_offsets", "offsets_at", "stable_and_end_offsets"]

EARLIEST, LATEST = -2, -1
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
_MOVED = frozenset({ec.NOT_LEADER_OR_FOLLOWER, ec.UNKNOWN_TOPIC_OR_PARTITION})


def _list(
    conn: AdminConnection, node: int, wanted: Mapping[TopicPartition, int], isolation: int, deadline: Deadline
) -> tuple[dict[TopicPartition, int], list[TopicPartition]]:
    """One ListOffsets to the leader ``node``: ``{tp: timestamp spec}`` -> ({tp: offset}, the
    partitions it no longer leads)."""
    by_topic: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for tp, spec in wanted.items():
        by_topic[tp.topic].append((tp.partition, spec))

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
                        partition_index=p, timestamp=spec
                    )
                    for p, spec in ps
                ],
            )
            for t, ps in sorted(by_topic.items())
        ]
        return ListOffsetsRequest(version=version, replica_id=-1, isolation_level=isolation, topics=topics)

    answer = conn.send(node, ListOffsetsRequest, build, deadline, f"reading the offsets on broker {node}")
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


def list_offsets(
    conn: AdminConnection, wanted: Mapping[TopicPartition, int], deadline: Deadline, *, read_committed: bool
) -> dict[TopicPartition, int]:
    """The offset of each partition for its timestamp spec, from its leader: ``EARLIEST`` (-2, the
    log start), ``LATEST`` (-1: the last stable offset with ``read_committed``, else the high
    watermark), or a timestamp (the first offset whose record's timestamp is at least it; -1 when
    there is none). A partition whose leader moved is asked again until the deadline."""
    out: dict[TopicPartition, int] = {}
    isolation = READ_COMMITTED if read_committed else READ_UNCOMMITTED
    pending = sorted(set(wanted))
    while pending:
        leaders = leaders_of(conn, pending, deadline)[1]
        by_node: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp, node in leaders.items():
            by_node[node].append(tp)
        moved: set[TopicPartition] = set()
        for node, tps in sorted(by_node.items()):
            found, lost = _list(conn, node, {tp: wanted[tp] for tp in tps}, isolation, deadline)
            out.update(found)
            moved.update(lost)
        pending = sorted(moved)
        if pending:
            conn.backoff(deadline, "finding the new leaders of " + ", ".join(str(tp) for tp in pending[:5]))
    return out


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
            latest = dict.fromkeys(tps, LATEST)
            # the high watermark first: an LSO read after it is never above it
            ends, lost_end = _list(conn, node, latest, READ_UNCOMMITTED, deadline)
            stable, lost_stable = _list(conn, node, latest, READ_COMMITTED, deadline)
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
    return list_offsets(conn, dict.fromkeys(partitions, timestamp), deadline, read_committed=False)
