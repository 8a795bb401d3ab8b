"""Metadata (key 3) for the assignor: how many partitions each of the group's topics has.

Why the member asks itself, fresh, instead of reading a cache: the leader's assignment must count
the partitions as they are when the generation starts (the Java leader calls
``ensureFreshMetadata`` for the same reason), and the leader compares later answers with that count
to notice partitions added to a topic - which rebalances the group, as in Java. A topic that does
not exist (yet) or that the principal may not describe counts as no partitions: it gets none until
an answer shows it, and that change rebalances the group too.

Versions: v12 preferred (``versions.py``); ``allow_auto_topic_creation`` false (v4+): a consumer
group does not create topics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kafka.protocol.metadata import MetadataRequest

from txnproducer._internal.protocol import error_codes as ec

from .versions import choose_version

__all__ = ["build_request", "partition_counts"]


def build_request(topics: Iterable[str], max_version: Callable[[int], int | None]) -> Any:
    version = choose_version(MetadataRequest, max_version(MetadataRequest.API_KEY))
    wanted = [MetadataRequest.MetadataRequestTopic(name=name) for name in sorted(set(topics))]
    if version >= 4:
        return MetadataRequest(version=version, topics=wanted, allow_auto_topic_creation=False)
    return MetadataRequest(version=version, topics=wanted)


def partition_counts(response: Any) -> dict[str, int]:
    """{topic: partition count} of the topics the answer describes without error."""
    counts: dict[str, int] = {}
    for topic in response.topics or ():
        if int(topic.error_code) == ec.NONE and topic.name:
            counts[str(topic.name)] = len(topic.partitions or ())
    return counts
