"""What the client knows of the cluster: its brokers, each partition's leader and leader epoch, topic ids.

Why our own (the Java client's ``Metadata`` + ``Cluster``, not kafka-python's ``ClusterMetadata``): that one
belongs to kafka-python's connection layer (it drives its own refresh loop on kafka-python's event loop)
and logs ERROR lines for ordinary answers ("Topic ... not found in cluster metadata" while a producer waits
for a topic being created). Here it is a plain value holder: :mod:`.metadata` builds the request and reads
the answer into :meth:`ClusterMetadata.update`; :class:`~.client.NetworkClient` decides when to ask
(``metadata_max_age_ms``, on request, ``retry_backoff_ms`` after a failure).

Readers on application threads (``send()`` asks for a topic's partitions, the partitioner for the
available ones) never take a lock: every update replaces the dictionaries they read whole, and a KIP-951
leader hint replaces one entry (one dictionary store, atomic under the GIL).

Simplifications of the Java client's ``Metadata``: one backoff (``retry_backoff_ms``) after a failed
refresh, not KIP-580's exponential one; a topic's partitions are forgotten when an answer leaves it out
(Java keeps them until the topic expires from its topic list).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from .addresses import ServerAddress

__all__ = ["BrokerAddress", "ClusterMetadata", "PartitionLeader", "TopicMetadata"]


@attrs.frozen
class BrokerAddress:
    """Where broker ``node_id`` listens (a bootstrap server's node id is ``bootstrap-<n>``)."""

    node_id: Any
    host: str
    port: int
    rack: str | None = None


@attrs.frozen
class PartitionLeader:
    leader: int  # -1: no leader now
    epoch: int  # -1: unknown


@attrs.frozen
class TopicMetadata:
    """One topic of a Metadata answer, as :meth:`ClusterMetadata.update` takes it."""

    name: str
    error_code: int
    topic_id: uuid.UUID | None
    partitions: dict[int, PartitionLeader]


class ClusterMetadata:
    """See the module docstring. Written by the network thread; read from any thread."""

    def __init__(self, bootstrap: Iterable[ServerAddress], *, metadata_max_age_ms: int,
                 retry_backoff_ms: int) -> None:
        self._bootstrap = {f"bootstrap-{i}": BrokerAddress(f"bootstrap-{i}", a.host, a.port)
                           for i, a in enumerate(bootstrap)}
        self._max_age_s = metadata_max_age_ms / 1000
        self._backoff_s = retry_backoff_ms / 1000
        self._brokers: dict[int, BrokerAddress] = {}
        # brokers named outside Metadata (a coordinator from FindCoordinator, a KIP-951 endpoint)
        self._named: dict[Any, BrokerAddress] = {}
        self._leaders: dict[str, dict[int, PartitionLeader]] = {}
        # (topic, partition) -> leader, for the partitions that have one: the Sender's drain looks up
        # each partition's leader with one dict lookup (a TopicPartition is such a tuple)
        self._leader_ids: dict[tuple[str, int], int] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}
        self.topics: frozenset[str] = frozenset()  # the topics asked for in each request
        self.unauthorized_topics: frozenset[str] = frozenset()
        self.cluster_id: str | None = None
        self.need_update = True
        self.bootstrapped = False  # a Metadata answer came
        self._last_attempt = float("-inf")
        self._last_success = float("-inf")
        self._listeners: list[Callable[[ClusterMetadata], None]] = []

    # -- reading -----------------------------------------------------------------------------------

    def brokers(self) -> list[BrokerAddress]:
        """The brokers of the last answer (none before the first)."""
        return list(self._brokers.values())

    def bootstrap_brokers(self) -> list[BrokerAddress]:
        return list(self._bootstrap.values())

    def broker_metadata(self, node: Any) -> BrokerAddress | None:
        """Where ``node`` listens: a broker of the last answer, a bootstrap server, or one named by a
        FindCoordinator answer or a leader hint; None when unknown."""
        return self._brokers.get(node) or self._bootstrap.get(node) or self._named.get(node)

    def name_broker(self, node: int, host: str, port: int) -> None:
        """Make ``node`` connectable before a Metadata answer lists it (a coordinator, a new leader)."""
        if node not in self._brokers:
            self._named[node] = BrokerAddress(node, host, port)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        parts = self._leaders.get(topic)
        return None if parts is None else set(parts)

    def available_partitions_for_topic(self, topic: str) -> set[int] | None:
        parts = self._leaders.get(topic)
        return None if parts is None else {p for p, entry in parts.items() if entry.leader >= 0}

    def leader_for_partition(self, tp: Any) -> int | None:
        """The leader's node id, -1 when the partition has none now, None when unknown."""
        entry = self._leaders.get(tp.topic, {}).get(tp.partition)
        return None if entry is None else entry.leader

    def leader_ids(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> leader of every partition that has one now (not to be modified;
        the next answer replaces it, a leader hint changes it in place)."""
        return self._leader_ids

    def leader_epoch_for_partition(self, tp: Any) -> int | None:
        entry = self._leaders.get(tp.topic, {}).get(tp.partition)
        return None if entry is None else entry.epoch

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self._topic_ids.get(topic)

    # -- when to ask -----------------------------------------------------------------------------

    def ttl(self, now: float | None = None) -> float:
        """Seconds until the next refresh is due: at once when one was requested (but not sooner than
        ``retry_backoff_ms`` after the last attempt), else when the last answer is
        ``metadata_max_age_ms`` old."""
        now = time.monotonic() if now is None else now
        backoff = self._last_attempt + self._backoff_s - now
        if self.need_update:
            return max(0.0, backoff)
        return max(0.0, backoff, self._last_success + self._max_age_s - now)

    def request_update(self) -> None:
        self.need_update = True

    def add_topic(self, topic: str) -> bool:
        """Ask for ``topic`` in every request from now on; True when it is new: a refresh is requested,
        without the backoff (the Java client's ``requestUpdateForNewTopics``: a ``send()`` waits for it)."""
        if topic in self.topics:
            return False
        self.topics = self.topics | {topic}
        self.need_update = True
        self._last_attempt = float("-inf")
        return True

    def attempted(self, now: float | None = None) -> None:
        """A request was sent (the next one waits ``retry_backoff_ms`` unless this one is answered)."""
        self._last_attempt = time.monotonic() if now is None else now

    def failed_update(self) -> None:
        """The request failed: try again after ``retry_backoff_ms``."""
        self._last_attempt = time.monotonic()

    # -- writing ---------------------------------------------------------------------------------

    def add_listener(self, listener: Callable[[ClusterMetadata], None]) -> None:
        self._listeners.append(listener)

    def update(self, brokers: Iterable[BrokerAddress], topics: Iterable[TopicMetadata], *,
               cluster_id: str | None, epochs_reliable: bool, retry: Iterable[str] = (),
               unauthorized: Iterable[str] = (), has_topic_ids: bool = True,
               asked_for: frozenset[str] | None = None) -> None:
        """Adopt an answer. ``retry``: topics whose error is retriable (another refresh is requested);
        ``epochs_reliable``: False for answers before v9, whose leader epochs may be stale (KAFKA-9212:
        caching them would loop on FENCED_LEADER_EPOCH); ``has_topic_ids``: False before v10, which
        carries no ids (known ones are kept, not wiped, during a rolling downgrade); ``asked_for``: the
        topics the answered request named (:attr:`topics` when it was built). A topic added since then
        is not in this answer: its refresh is still due, at once (the Java client's request version;
        without it a ``send()`` to a new topic made while another refresh was on its way waited for
        the next one, ``metadata_max_age_ms`` later, and timed out after ``max_block_ms``)."""
        new_brokers = {b.node_id: b for b in brokers}
        leaders: dict[str, dict[int, PartitionLeader]] = {}
        ids: dict[str, uuid.UUID] = {}
        for topic in topics:
            known_id = self._topic_ids.get(topic.name)
            recreated = topic.topic_id is not None and known_id is not None and known_id != topic.topic_id
            if topic.topic_id is not None and topic.topic_id.int != 0:
                ids[topic.name] = topic.topic_id
            if topic.error_code != 0:
                continue
            if epochs_reliable and not recreated:
                leaders[topic.name] = dict(topic.partitions)
            else:  # a recreated topic's old epochs mean nothing for the new one
                leaders[topic.name] = {p: PartitionLeader(e.leader, -1) for p, e in topic.partitions.items()}
        self._brokers = new_brokers
        self._named = {n: b for n, b in self._named.items() if n not in new_brokers}
        self._leaders = leaders
        self._leader_ids = {(name, p): e.leader for name, parts in leaders.items() for p, e in parts.items()
                            if e.leader >= 0}
        if has_topic_ids:
            self._topic_ids = ids
        self.unauthorized_topics = frozenset(unauthorized)
        self.cluster_id = cluster_id
        self.need_update = bool(set(retry))
        now = time.monotonic()
        self._last_attempt = self._last_success = now
        if asked_for is not None and asked_for != self.topics:  # asked for more since: not a retry
            self.need_update = True
            self._last_attempt = float("-inf")
        self.bootstrapped = True
        for listener in self._listeners:
            listener(self)

    def update_partition_leader(self, tp: Any, leader: int, epoch: int) -> bool:
        """Apply a KIP-951 current-leader hint if its epoch is newer than the one known; True if applied."""
        parts = self._leaders.get(tp.topic)
        entry = None if parts is None else parts.get(tp.partition)
        if parts is None or entry is None or epoch < 0 or epoch <= entry.epoch:
            return False
        parts[tp.partition] = PartitionLeader(leader, epoch)
        if leader >= 0:
            self._leader_ids[(tp.topic, tp.partition)] = leader
        else:
            self._leader_ids.pop((tp.topic, tp.partition), None)
        return True
