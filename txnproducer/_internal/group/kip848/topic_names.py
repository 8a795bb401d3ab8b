"""Metadata (key 3) by topic id: the names of the topics an assignment names only by id.

Why the member asks: a consumer-protocol assignment lists partitions by topic id (KIP-516), and the
consumer, its listener and the offsets it commits speak topic names. The Java client resolves ids from
its metadata cache and asks for a metadata update when one is missing (``AbstractMembershipManager
.findResolvableAssignmentAndTriggerMetadataUpdate``); this member asks the cluster for exactly the ids
it misses - Metadata v12+ takes topic ids - or, from a broker older than that, for every topic
(``topics`` null), which is what the Java client's metadata asks for under a pattern subscription
anyway. A topic the answer does not name (deleted, not authorized) stays unresolved: the member
reconciles the rest of its assignment, as Java's does, and asks again after the backoff.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from kafka.protocol.metadata import MetadataRequest

from txnproducer._internal.protocol import error_codes as ec

__all__ = ["build_request", "names_by_id"]

_BY_ID_VERSION = 12


def build_request(topic_ids: Iterable[uuid.UUID], max_version: Callable[[int], int | None]) -> Any:
    broker_max = max_version(MetadataRequest.API_KEY)
    version = min(_BY_ID_VERSION, int(MetadataRequest.max_version), broker_max if broker_max is not None
                  else _BY_ID_VERSION)
    if version >= _BY_ID_VERSION:
        topics = [MetadataRequest.MetadataRequestTopic(topic_id=topic_id, name=None)
                  for topic_id in sorted(set(topic_ids), key=str)]
        return MetadataRequest(version=version, topics=topics, allow_auto_topic_creation=False,
                               include_topic_authorized_operations=False)
    if version >= 4:
        return MetadataRequest(version=version, topics=None, allow_auto_topic_creation=False)
    return MetadataRequest(version=version, topics=None)


def names_by_id(response: Any) -> dict[uuid.UUID, str]:
    """{topic id: name} of every topic the answer describes without an error."""
    found: dict[uuid.UUID, str] = {}
    for topic in response.topics or ():
        topic_id = getattr(topic, "topic_id", None)
        if int(topic.error_code) == ec.NONE and topic.name and topic_id is not None and topic_id.int != 0:
            found[topic_id] = str(topic.name)
    return found
