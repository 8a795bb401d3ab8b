"""DescribeProducers (key 61): v0 - the producers a partition's replica knows, and their open transactions.

This is the partition leader's side of a transaction - the side that holds the last stable offset - and
so the only way to see a transaction its coordinator has forgotten. Sent to each partition's leader
(Metadata first), or to one chosen broker (``broker_id``: any replica answers, from its own copy of the
producer state), at most 500 partitions per request as ``kafka-transactions.sh`` does.

Errors, per partition (the Java Admin's ``DescribeProducersHandler``): NOT_LEADER_OR_FOLLOWER and
UNKNOWN_TOPIC_OR_PARTITION mean the leadership moved - the leaders are looked up again until the deadline
- unless a broker was chosen, then that broker is no replica of the partition (an error naming it).
Authorization (Kafka 4.1's ``handleDescribeProducersRequest``): Read on each topic
(TOPIC_AUTHORIZATION_FAILED, an :class:`AdminAuthorizationError`), plus Describe on the topics for the
Metadata that finds the leaders.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from kafka.protocol.admin.transactions import DescribeProducersRequest

from txnproducer._internal.protocol import error_codes as ec

from .connection import AdminConnection, Deadline
from .errors import AdminAuthorizationError, UnexpectedBrokerError, UnknownPartitionError
from .metadata import check_partitions, fetch_layout, leaders_of
from .results import PartitionProducers, ProducerState, TopicPartition

__all__ = ["describe_producers"]

BATCH = 500  # partitions per request, as kafka-transactions.sh find-hanging sends them
_MOVED = frozenset({ec.NOT_LEADER_OR_FOLLOWER, ec.UNKNOWN_TOPIC_OR_PARTITION})


def _state(p: Any) -> ProducerState:
    epoch, start = int(p.coordinator_epoch), int(p.current_txn_start_offset)
    return ProducerState(
        int(p.producer_id),
        int(p.producer_epoch),
        int(p.last_sequence),
        int(p.last_timestamp),
        epoch if epoch >= 0 else None,
        start if start >= 0 else None,
    )


def _ask(
    conn: AdminConnection, node: int, partitions: Sequence[TopicPartition], deadline: Deadline, chosen: bool
) -> tuple[dict[TopicPartition, PartitionProducers], list[TopicPartition]]:
    """One request to ``node``: the answered partitions, and those whose leader moved."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    topics = [
        DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps)
        for t, ps in sorted(by_topic.items())
    ]
    answer = conn.send(
        node,
        DescribeProducersRequest,
        lambda v: DescribeProducersRequest(version=v, topics=topics),
        deadline,
        f"describing the producers of {len(partitions)} partition(s) on broker {node}",
    )
    done: dict[TopicPartition, PartitionProducers] = {}
    moved: list[TopicPartition] = []
    for t in answer.topics:
        for p in t.partitions:
            tp, code = TopicPartition(str(t.name), int(p.partition_index)), int(p.error_code)
            if code == ec.NONE:
                done[tp] = PartitionProducers(tp, node, tuple(_state(a) for a in p.active_producers))
            elif code == ec.TOPIC_AUTHORIZATION_FAILED:
                raise AdminAuthorizationError(
                    f"not authorized to describe the producers of {tp} (TOPIC_AUTHORIZATION_FAILED): grant"
                    f" Read on Topic {tp.topic!r}",
                    error_code=code,
                    acl=f"Read on Topic {tp.topic!r}",
                )
            elif code in _MOVED and chosen:
                raise UnknownPartitionError(
                    f"broker {node} has no replica of {tp} ({ec.error_name(code)}): choose one of its"
                    " replicas, or leave --broker-id out to ask the leader",
                    error_code=code,
                )
            elif code in _MOVED:
                moved.append(tp)
            else:
                raise UnexpectedBrokerError(
                    f"DescribeProducers for {tp} on broker {node} answered {ec.error_name(code)}",
                    error_code=code,
                )
    return done, moved


def describe_producers(
    conn: AdminConnection,
    partitions: Sequence[TopicPartition],
    deadline: Deadline,
    broker_id: int | None = None,
) -> dict[TopicPartition, PartitionProducers]:
    """The producer state of each partition, from its leader or from ``broker_id``."""
    out: dict[TopicPartition, PartitionProducers] = {}
    pending = sorted(set(partitions))
    while pending:
        if broker_id is not None:
            check_partitions(fetch_layout(conn, sorted({tp.topic for tp in pending}), deadline), pending)
            targets = {tp: broker_id for tp in pending}
        else:
            targets = leaders_of(conn, pending, deadline)[1]
        by_node: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp, node in targets.items():
            by_node[node].append(tp)
        moved: list[TopicPartition] = []
        for node, tps in sorted(by_node.items()):
            for i in range(0, len(tps), BATCH):
                done, lost = _ask(conn, node, tps[i : i + BATCH], deadline, broker_id is not None)
                out.update(done)
                moved.extend(lost)
        pending = sorted(moved)
        if pending:
            conn.backoff(deadline, f"finding the new leaders of {', '.join(str(tp) for tp in pending[:5])}")
    return out
