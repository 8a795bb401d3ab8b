"""Metadata (key 3, v1-12): the cluster's brokers and the leaders of the topics we use.

Why a module of its own (one Kafka API per file): the request is built for the broker it goes to (the
highest version both it and kafka-python's message classes speak, capped at v12 - v13 only adds the
top-level REBOOTSTRAP_REQUIRED of KIP-1102, which we do not act on), and the answer is read into
:class:`~.cluster_metadata.ClusterMetadata` by one function whose rules are the Java client's
``MetadataResponse`` handling:

* a topic answered with a retriable error (LEADER_NOT_AVAILABLE while it is being created,
  UNKNOWN_TOPIC_OR_PARTITION before auto-creation or a create call reaches this broker) asks for another
  refresh after ``retry_backoff_ms``: a ``send()`` waiting for a new topic sees it within that time;
* TOPIC_AUTHORIZATION_FAILED is remembered (``unauthorized_topics``): a waiting ``send()`` raises it;
* leader epochs of answers before v9 are not kept (KAFKA-9212), nor those of a topic whose id changed
  (it was deleted and created again);
* an answer without brokers is a failed refresh, not an empty cluster.

Nothing here logs above DEBUG: a topic that does not exist yet is an ordinary answer, and what it means
for a call is said by that call's error (``wait_for_topic``).
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import MetadataRequest

from txnproducer._internal.protocol import error_codes as ec

from .cluster_metadata import BrokerAddress, ClusterMetadata, PartitionLeader, TopicMetadata

__all__ = ["METADATA_KEY", "build_request", "read_response"]

METADATA_KEY = 3
_MAX_VERSION = 12
_MIN_VERSION = 1  # v0 cannot ask for no topic at all (an empty list there means every topic)
_EPOCHS_FROM = 9  # KAFKA-9212
_TOPIC_IDS_FROM = 10  # KIP-516


def request_version(broker_max: int | None) -> int:
    """The version to send to a broker that speaks up to ``broker_max`` (None: it did not say)."""
    top = min(_MAX_VERSION, int(MetadataRequest.max_version))
    return top if broker_max is None else max(_MIN_VERSION, min(top, broker_max))


def build_request(topics: frozenset[str], broker_max: int | None) -> Any:
    """A Metadata request for ``topics`` (none: brokers only), auto-creation allowed as the Java producer."""
    version = request_version(broker_max)
    fields: dict[str, Any] = {
        "topics": [MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(topics)],
    }
    if version >= 4:
        fields["allow_auto_topic_creation"] = True
    return MetadataRequest(version=version, **fields)


def read_response(cluster: ClusterMetadata, response: Any, asked_for: frozenset[str] | None = None) -> bool:
    """Adopt ``response`` into ``cluster``; False when it named no broker (a failed refresh).
    ``asked_for``: the topics the request named (see :meth:`ClusterMetadata.update`)."""
    if not response.brokers:
        cluster.failed_update()
        return False
    version = response.API_VERSION
    brokers = [BrokerAddress(b.node_id, b.host, b.port, getattr(b, "rack", None)) for b in response.brokers]
    topics: list[TopicMetadata] = []
    retry: list[str] = []
    unauthorized: list[str] = []
    for topic in response.topics:
        code = topic.error_code
        if code == ec.TOPIC_AUTHORIZATION_FAILED:
            unauthorized.append(topic.name)
        elif code != ec.NONE and ec.is_retriable(code):
            retry.append(topic.name)
        partitions = {
            p.partition_index: PartitionLeader(int(p.leader_id), int(getattr(p, "leader_epoch", -1)))
            for p in (topic.partitions or ())
        }
        topic_id = getattr(topic, "topic_id", None) if version >= _TOPIC_IDS_FROM else None
        topics.append(TopicMetadata(topic.name, code, topic_id, partitions))
    cluster.update(brokers, topics, cluster_id=getattr(response, "cluster_id", None),
                   epochs_reliable=version >= _EPOCHS_FROM, retry=retry, unauthorized=unauthorized,
                   has_topic_ids=version >= _TOPIC_IDS_FROM, asked_for=asked_for)
    return True
