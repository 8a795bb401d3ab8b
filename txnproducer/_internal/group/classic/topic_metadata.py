"""Metadata (key 3) for the assignor: how many partitions each of the group's topics has.

Why the member asks itself, fresh, instead of reading a cache: the leader's assignment must count
the partitions as they are when the generation starts (the Java leader calls
``ensureFreshMetadata`` for the same reason), and the leader compares later answers with that count
to notice partitions added to a topic - which rebalances the group, as in Java. A topic that does
not exist (yet) or that the principal may not describe counts as no partitions: it gets none until
an answer shows it, and that change rebalances the group too; while an answer names a retriable
error for one (not created yet, no leader yet) the leader asks again after ``retry_backoff_max_ms``
rather than ``metadata_max_age_ms``, as the Java client refreshes its metadata then.

Versions: v12 preferred (``versions.py``); ``allow_auto_topic_creation`` false (v4+): a consumer
group does not create topics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kafka.protocol.metadata import MetadataRequest

from txnproducer._internal.protocol import error_codes as ec

from ..versions import choose_version

__all__ = ["build_request", "partition_counts"]


def build_request(topics: Iterable[str], max_version: Callable[[int], int | None]) -> Any:
    version = choose_version(MetadataRequest, max_version(MetadataRequest.API_KEY))
    wanted = [MetadataRequest.MetadataRequestTopic(name=name) for name in sorted(set(topics))]
    if version >= 4:
        return MetadataRequest(version=version, topics=wanted, allow_auto_topic_creation=False)
    return MetadataRequest(version=version, topics=wanted)


def partition_counts(topics: Iterable[str], response: Any) -> tuple[dict[str, int], frozenset[str]]:
    """({topic: partition count}, unsettled) for ``topics``: a topic the answer describes with an
    error counts 0 partitions and is *unsettled* when the error is retriable (not created yet, no
    leader yet) - worth asking again soon, as the Java client refreshes its metadata after a
    retriable topic error instead of waiting ``metadata_max_age_ms``."""
    counts = dict.fromkeys(topics, 0)
    unsettled: set[str] = set()
    for topic in response.topics or ():
        name = str(topic.name or "")
        if name not in counts:
            continue
        code = int(topic.error_code)
        if code == ec.NONE:
            counts[name] = len(topic.partitions or ())
        elif ec.is_retriable(code):
            unsettled.add(name)
    unsettled.update(name for name in counts if not counts[name] and name not in _described(response))
    return counts, frozenset(unsettled)


def _described(response: Any) -> set[str]:
    return {str(topic.name) for topic in response.topics or () if topic.name}
