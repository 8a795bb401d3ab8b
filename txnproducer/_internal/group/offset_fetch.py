"""OffsetFetch (key 9): the group's committed offsets, stable ones only (KIP-447).

Versions: v9 preferred, v7 at least (``versions.py``): ``require_stable`` is what makes a fetch wait
for a transaction's pending offsets to be committed or aborted (UNSTABLE_OFFSET_COMMIT meanwhile), so
that a member never resumes from an offset an open transaction is about to move. v8+ batches groups
(here: one), with a group-level error; v2-7 have a top-level error; v1 sets errors per partition.
A broker older than Kafka 2.5 (no v7) is refused: exactly-once reading needs it.

A consumer-protocol member (KIP-848) names itself in v9+: its member id and epoch, which the
coordinator checks as it checks an offset commit's (STALE_MEMBER_EPOCH for another epoch,
UNKNOWN_MEMBER_ID for a member it does not know); a member that is not in the group (yet) sends no
id and epoch -1, as the Java client does, and is answered as an administrator would be.

Answers (Java's ``OffsetFetchResponseHandler``): group errors - GROUP_AUTHORIZATION_FAILED raises;
COORDINATOR_LOAD_IN_PROGRESS is retried; COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR forget the
coordinator and are retried; STALE_MEMBER_EPOCH and UNKNOWN_MEMBER_ID are retried (with the epoch
the member has by then: its heartbeats move it on, or it rejoins); anything else raises. Partition
errors - UNSTABLE_OFFSET_COMMIT retries the whole fetch (within the caller's timeout);
TOPIC_AUTHORIZATION_FAILED raises naming the topics; UNKNOWN_TOPIC_OR_PARTITION and anything else
raise. Offset -1 means "nothing committed".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import attrs
from kafka.protocol.consumer.group import OffsetFetchRequest
from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.protocol import error_codes as ec

from .failures import group_authorization_error, unexpected_error
from .versions import choose_version

__all__ = ["CommittedOffset", "FetchOutcome", "build_request", "read_response"]

_REQUIRE_STABLE_VERSION = 7
_COORDINATOR_ERRORS = (ec.COORDINATOR_LOAD_IN_PROGRESS, ec.COORDINATOR_NOT_AVAILABLE, ec.NOT_COORDINATOR)


class CommittedOffset(NamedTuple):
    """A partition's committed position: the next offset to read, the leader epoch of the record
    before it (-1: unknown) and the commit's metadata string."""

    offset: int
    leader_epoch: int
    metadata: str


@attrs.frozen
class FetchOutcome:
    """What an answer means: the offsets, or a retry (with why), or an error to raise."""

    offsets: dict[TopicPartition, CommittedOffset] | None = None
    retry_because: str | None = None
    error: BaseException | None = None


def build_request(group_id: str, partitions: Iterable[TopicPartition],
                  max_version: Callable[[int], int | None], member: tuple[str, int] | None = None) -> Any:
    """The request; ``member``: (member id, member epoch) of a consumer-protocol member in its group
    (sent from v9 on)."""
    version = choose_version(OffsetFetchRequest, max_version(OffsetFetchRequest.API_KEY))
    if version < _REQUIRE_STABLE_VERSION:
        raise errors.UnsupportedVersionError(
            f"the group coordinator speaks OffsetFetch only up to v{version}; reading committed offsets "
            "that no open transaction is about to change (require_stable, KIP-447) needs v7, Kafka >= "
            "2.5: upgrade the broker", error_code=ec.UNSUPPORTED_VERSION)
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if version >= 8:
        topic_cls = OffsetFetchRequest.OffsetFetchRequestGroup.OffsetFetchRequestTopics
        identity: dict[str, Any] = {}
        if version >= 9 and member is not None:
            identity = {"member_id": member[0], "member_epoch": member[1]}
        group = OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=group_id, topics=[topic_cls(name=t, partition_indexes=sorted(ps))
                                       for t, ps in sorted(by_topic.items())], **identity)
        return OffsetFetchRequest(version=version, groups=[group], require_stable=True)
    topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=sorted(ps))
              for t, ps in sorted(by_topic.items())]
    return OffsetFetchRequest(version=version, group_id=group_id, topics=topics, require_stable=True)


def read_response(group_id: str, response: Any, forget_coordinator: Callable[[], None]) -> FetchOutcome:
    groups = getattr(response, "groups", None)
    if groups:
        group = groups[0]
        code, topics = int(group.error_code), group.topics
    else:
        code, topics = int(getattr(response, "error_code", 0) or 0), response.topics
    if code != ec.NONE:
        return _group_error(group_id, code, forget_coordinator)
    offsets: dict[TopicPartition, CommittedOffset] = {}
    unstable: list[TopicPartition] = []
    refused: set[str] = set()
    for topic in topics or ():
        for p in topic.partitions:
            tp = TopicPartition(topic.name, int(p.partition_index))
            error = int(p.error_code)
            if error == ec.UNSTABLE_OFFSET_COMMIT:
                unstable.append(tp)
            elif error == ec.TOPIC_AUTHORIZATION_FAILED:
                refused.add(tp.topic)
            elif error != ec.NONE:
                if error in _COORDINATOR_ERRORS:  # v1 puts group errors on the partitions
                    return _group_error(group_id, error, forget_coordinator)
                if error == ec.GROUP_AUTHORIZATION_FAILED:
                    return FetchOutcome(error=group_authorization_error(group_id, "OffsetFetch"))
                return FetchOutcome(error=unexpected_error(group_id, error, f"OffsetFetch of {tp}"))
            elif int(p.committed_offset) >= 0:
                epoch = getattr(p, "committed_leader_epoch", -1)
                offsets[tp] = CommittedOffset(int(p.committed_offset), -1 if epoch is None else int(epoch),
                                              p.metadata or "")
    if refused:
        return FetchOutcome(error=errors.TopicAuthorizationError(
            f"not authorized to read the committed offsets of topics {sorted(refused)} in group "
            f"{group_id!r} (TOPIC_AUTHORIZATION_FAILED): grant this principal DESCRIBE on them",
            error_code=ec.TOPIC_AUTHORIZATION_FAILED))
    if unstable:
        return FetchOutcome(retry_because=(
            f"partitions {sorted(str(tp) for tp in unstable)} have offsets of an open transaction "
            "(UNSTABLE_OFFSET_COMMIT)"))
    return FetchOutcome(offsets=offsets)


def _group_error(group_id: str, code: int, forget_coordinator: Callable[[], None]) -> FetchOutcome:
    if code == ec.GROUP_AUTHORIZATION_FAILED:
        return FetchOutcome(error=group_authorization_error(group_id, "OffsetFetch"))
    if code == ec.COORDINATOR_LOAD_IN_PROGRESS:
        return FetchOutcome(retry_because="the coordinator is loading the group "
                                          "(COORDINATOR_LOAD_IN_PROGRESS)")
    if code in (ec.COORDINATOR_NOT_AVAILABLE, ec.NOT_COORDINATOR):
        forget_coordinator()
        return FetchOutcome(retry_because=f"the coordinator moved ({ec.error_name(code)})")
    if code in (ec.STALE_MEMBER_EPOCH, ec.UNKNOWN_MEMBER_ID):
        return FetchOutcome(retry_because=f"the member epoch is not the group's ({ec.error_name(code)})")
    return FetchOutcome(error=unexpected_error(group_id, code, "OffsetFetch"))
