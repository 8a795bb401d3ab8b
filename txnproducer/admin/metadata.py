"""Metadata (key 3): which brokers exist, which partitions a topic has, who leads and replicates them.

Why our own request rather than kafka-python's cached cluster view: the tools must tell "the topic does
not exist" from "the principal may not describe it" from "the partition has no leader", each with its
own message, and kafka-python's cache folds those into "unknown". Topics are never auto-created
(``allow_auto_topic_creation`` false from v4; older brokers are not asked for named topics they may
create - a v0-3 Metadata request for a missing topic creates it on brokers that allow it, so for those
the tools ask for all topics and pick).

Authorization (Kafka 4.1's ``KafkaApis.handleTopicMetadataRequest``): Describe on each named topic;
an all-topics request lists only the topics the principal may describe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from kafka.protocol.metadata import MetadataRequest

from txnproducer._internal.protocol import error_codes as ec
from txnproducer.errors import TimeoutError

from .connection import AdminConnection, Deadline
from .errors import (
    AdminAuthorizationError,
    LeaderNotAvailableError,
    UnexpectedBrokerError,
    UnknownPartitionError,
)
from .results import TopicPartition

__all__ = ["ClusterLayout", "PartitionLayout", "fetch_layout", "leaders_of"]


@attrs.frozen
class PartitionLayout:
    """One partition: ``leader`` -1 when it has none (``error`` then says why: LEADER_NOT_AVAILABLE)."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    error: int = ec.NONE


@attrs.frozen
class TopicLayout:
    name: str
    error: int
    internal: bool
    partitions: dict[int, PartitionLayout]


@attrs.frozen
class ClusterLayout:
    """Brokers (id -> (host, port)) and the topics asked for, as one Metadata answer gave them."""

    brokers: dict[int, tuple[str, int]]
    topics: dict[str, TopicLayout]


def fetch_layout(conn: AdminConnection, topics: Sequence[str] | None, deadline: Deadline) -> ClusterLayout:
    """The cluster's brokers and the layout of ``topics`` (None: every topic the principal may
    describe). A refused topic raises :class:`AdminAuthorizationError`; an unknown one is answered
    with its error code (``TopicLayout.error``) for the caller to report in its own words."""
    wanted = None if topics is None else sorted(set(topics))

    def build(version: int) -> Any:
        if version < 4 and wanted is not None:  # would auto-create a missing topic: ask for all
            return MetadataRequest(version=version, topics=None if version > 0 else [])
        named = (
            None
            if wanted is None
            else [MetadataRequest.MetadataRequestTopic(name=t, topic_id=None) for t in wanted]
        )
        return MetadataRequest(
            version=version,
            topics=named,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )

    answer = conn.send_any(MetadataRequest, build, deadline, "reading cluster metadata")
    brokers = {int(b.node_id): (str(b.host), int(b.port)) for b in answer.brokers}
    for broker_id, (host, port) in brokers.items():
        conn.know_broker(broker_id, host, port)
    layouts: dict[str, TopicLayout] = {}
    for t in answer.topics:
        if wanted is not None and t.name not in wanted:
            continue
        if t.error_code == ec.TOPIC_AUTHORIZATION_FAILED:
            raise AdminAuthorizationError(
                f"not authorized to describe topic {t.name!r} (TOPIC_AUTHORIZATION_FAILED): grant Describe"
                f" on Topic {t.name!r}",
                error_code=t.error_code,
                acl=f"Describe on Topic {t.name!r}",
            )
        if t.error_code not in (ec.NONE, ec.UNKNOWN_TOPIC_OR_PARTITION, ec.LEADER_NOT_AVAILABLE):
            raise UnexpectedBrokerError(
                f"Metadata for topic {t.name!r} answered {ec.error_name(t.error_code)}",
                error_code=t.error_code,
            )
        parts = {
            int(p.partition_index): PartitionLayout(
                int(p.partition_index),
                int(p.leader_id),
                tuple(int(r) for r in p.replica_nodes),
                int(p.error_code),
            )
            for p in t.partitions
        }
        layouts[str(t.name)] = TopicLayout(str(t.name), int(t.error_code), bool(t.is_internal), parts)
    if wanted is not None:
        for name in wanted:
            layouts.setdefault(name, TopicLayout(name, ec.UNKNOWN_TOPIC_OR_PARTITION, False, {}))
    return ClusterLayout(brokers, layouts)


def check_partitions(layout: ClusterLayout, partitions: Sequence[TopicPartition]) -> None:
    """UnknownPartitionError for a topic or partition the layout does not have."""
    for tp in partitions:
        topic = layout.topics.get(tp.topic)
        if topic is None or topic.error == ec.UNKNOWN_TOPIC_OR_PARTITION:
            raise UnknownPartitionError(f"topic {tp.topic!r} does not exist (UNKNOWN_TOPIC_OR_PARTITION)")
        if tp.partition not in topic.partitions:
            raise UnknownPartitionError(
                f"partition {tp} does not exist: topic {tp.topic!r} has {len(topic.partitions)} partition(s),"
                f" 0-{len(topic.partitions) - 1}"
            )


def leaders_of(
    conn: AdminConnection, partitions: Sequence[TopicPartition], deadline: Deadline
) -> tuple[ClusterLayout, dict[TopicPartition, int]]:
    """The current leader of each partition. A partition without one is asked about again (after
    ``retry_backoff_ms``) until the deadline, then :class:`LeaderNotAvailableError` names it."""
    topics = sorted({tp.topic for tp in partitions})
    names = ""  # the partitions the last answer left without a leader
    while True:
        try:
            if names:
                conn.backoff(deadline, "waiting for a partition leader")
            layout = fetch_layout(conn, topics, deadline)
        except TimeoutError:
            if not names:
                raise
            # the deadline came while waiting to ask again, or while asking: the last answer stands
            raise LeaderNotAvailableError(
                f"partition(s) {names} had no leader for {deadline.timeout_ms} ms (LEADER_NOT_AVAILABLE):"
                " every replica is down or an election is under way; retry once they are online"
            ) from None
        check_partitions(layout, partitions)
        leaders = {tp: layout.topics[tp.topic].partitions[tp.partition].leader for tp in partitions}
        leaderless = sorted(tp for tp, leader in leaders.items() if leader < 0)
        if not leaderless:
            return layout, leaders
        names = ", ".join(str(tp) for tp in leaderless[:5]) + (" ..." if len(leaderless) > 5 else "")
