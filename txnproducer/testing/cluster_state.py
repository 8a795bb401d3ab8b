"""The MockCluster's shared state: brokers, topics and their partition logs, coordinator placement.

One ``RLock`` guards everything; every request handler runs with it held, so handlers see and change
a consistent cluster. ``cond`` (a Condition on that lock) is how a handler waits for something another
request changes (a Fetch waiting for data, a JoinGroup waiting for members); whoever changes such state
calls :meth:`ClusterState.notify_all`.

The two coordinators hang off this state (``txn``, ``groups``, attached by ``MockCluster``) but do not
import it: each reaches the cluster through its own narrow interface
(``txn_coordinator_host.CoordinatorHost``, ``group_coordinator``'s state view), so the dependency runs
one way, from here to them.
"""

from __future__ import annotations

import threading
import time
import uuid
import zlib
from typing import TYPE_CHECKING, Any

import attrs

from .fetch_sessions import FetchSessions
from .partition_log import PartitionLog

if TYPE_CHECKING:  # pragma: no cover
    from .group_coordinator import GroupCoordinator
    from .txn_coordinator import TransactionCoordinator

GROUP_KEY = 0
TRANSACTION_KEY = 1


@attrs.define
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    alive: bool = True


#: Kafka's default ``max.message.bytes`` (the largest record batch a partition accepts).
DEFAULT_MAX_MESSAGE_BYTES = 1048588


@attrs.define
class TopicState:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionLog]
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    #: configs set when the topic was created (CreateTopics ``configs``), reported by DescribeConfigs
    configs: dict[str, str] = attrs.field(factory=dict)


def _stable_hash(text: str) -> int:
    """A hash that is the same in every process (Python's ``hash`` of str is salted)."""
    return zlib.crc32(text.encode("utf-8"))


class ClusterState:
    """Everything the brokers and coordinators share; see the module docstring for locking."""

    def __init__(
        self,
        broker_ids: list[int],
        host: str = "127.0.0.1",
        transaction_version: int = 2,
        auto_create_topics: bool = True,
        default_partitions: int = 3,
        transaction_max_timeout_ms: int = 900000,
        cluster_id: str | None = None,
    ) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.transaction_version = transaction_version
        self.cluster_id = cluster_id or "mock-" + uuid.uuid4().hex[:16]
        self.controller_id = broker_ids[0]
        self.brokers: dict[int, BrokerInfo] = {b: BrokerInfo(b, host, 0) for b in broker_ids}
        self.topics: dict[str, TopicState] = {}
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.transaction_max_timeout_ms = transaction_max_timeout_ms
        self.features_epoch = 1
        # (key_type, key) -> broker id, set by MockCluster.move_coordinator
        self.coordinator_overrides: dict[tuple[int, str], int] = {}
        # broker id -> api key -> (min, max): an older broker of a rolling upgrade speaks less
        self.broker_api_caps: dict[int, dict[int, tuple[int, int]]] = {}
        self.txn: TransactionCoordinator = None  # type: ignore[assignment]  # set by MockCluster
        self.groups: GroupCoordinator = None  # type: ignore[assignment]  # set by MockCluster
        # free-form per-cluster settings other modules may read (e.g. group timeouts)
        self.settings: dict[str, Any] = {}
        # every broker's incremental fetch sessions (KIP-227)
        self.fetch_sessions = FetchSessions()
        # set when the cluster closes: handlers waiting on ``cond`` should answer and return
        self.closed = False

    # ----------------------------------------------------------------- basics
    def capped_versions(self, broker_id: int,
                        advertised: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """``advertised`` (api key, min, max) as broker ``broker_id`` reports it: within its caps."""
        caps = self.broker_api_caps.get(broker_id)
        if not caps:
            return advertised
        out = []
        for key, lo, hi in advertised:
            if key in caps:
                lo, hi = max(lo, caps[key][0]), min(hi, caps[key][1])
            if lo <= hi:
                out.append((key, lo, hi))
        return out

    def speaks(self, broker_id: int, api_key: int, version: int) -> bool:
        """False when ``broker_id`` was capped below ``version`` of ``api_key``."""
        cap = self.broker_api_caps.get(broker_id, {}).get(api_key)
        return cap is None or cap[0] <= version <= cap[1]

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def notify_all(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def alive_broker_ids(self) -> list[int]:
        return sorted(b for b, info in self.brokers.items() if info.alive)

    def _ring_pick(self, start_index: int) -> int:
        """The first alive broker at or after ``start_index`` in id order (wrapping)."""
        ids = sorted(self.brokers)
        n = len(ids)
        for i in range(n):
            candidate = ids[(start_index + i) % n]
            if self.brokers[candidate].alive:
                return candidate
        return ids[start_index % n]  # none alive: the preferred one (requests cannot reach it anyway)

    # ----------------------------------------------------------------- topics
    def preferred_leader(self, topic: str, partition: int) -> int:
        return self._ring_pick(_stable_hash(topic) + partition)

    def create_topic(self, name: str, partitions: int | None = None,
                     max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> TopicState:
        """Create ``name`` (idempotent: an existing topic is returned unchanged)."""
        existing = self.topics.get(name)
        if existing is not None:
            return existing
        count = self.default_partitions if partitions is None or partitions <= 0 else partitions
        ids = sorted(self.brokers)
        logs = []
        for p in range(count):
            preferred = ids[(_stable_hash(name) + p) % len(ids)]
            logs.append(PartitionLog(name, p, self._ring_pick(ids.index(preferred))))
        topic = TopicState(name, uuid.uuid4(), logs, max_message_bytes)
        self.topics[name] = topic
        self.notify_all()
        return topic

    def add_partitions(self, name: str, total: int) -> TopicState:
        """Grow ``name`` to ``total`` partitions (Kafka's CreatePartitions): the new ones get leaders
        as a new topic's do; existing partitions are untouched. ValueError for an unknown topic or a
        count that is not larger."""
        topic = self.topics.get(name)
        if topic is None:
            raise ValueError(f"no topic {name!r}")
        if total <= len(topic.partitions):
            raise ValueError(f"topic {name!r} has {len(topic.partitions)} partitions; {total} is not more")
        ids = sorted(self.brokers)
        for p in range(len(topic.partitions), total):
            preferred = ids[(_stable_hash(name) + p) % len(ids)]
            topic.partitions.append(PartitionLog(name, p, self._ring_pick(ids.index(preferred))))
        self.notify_all()
        return topic

    def delete_topic(self, name: str) -> None:
        """Delete ``name`` and its partitions' logs (Kafka's DeleteTopics); ValueError for an unknown
        topic. A topic created again under the name is a new one (a new id, offsets from 0)."""
        if self.topics.pop(name, None) is None:
            raise ValueError(f"no topic {name!r}")
        self.notify_all()

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicState | None:
        for topic in self.topics.values():
            if topic.topic_id == topic_id:
                return topic
        return None

    def partition_log(self, topic: str, partition: int) -> PartitionLog | None:
        state = self.topics.get(topic)
        if state is None or not 0 <= partition < len(state.partitions):
            return None
        return state.partitions[partition]

    def leader_of(self, topic: str, partition: int) -> int:
        log = self.partition_log(topic, partition)
        if log is None:
            return -1
        return log.leader_id

    def replicas_of(self, topic: str, partition: int) -> list[int]:
        """All brokers, starting at the partition's preferred leader (replication factor = cluster size)."""
        ids = sorted(self.brokers)
        start = (_stable_hash(topic) + partition) % len(ids)
        return [ids[(start + i) % len(ids)] for i in range(len(ids))]

    def rebalance_leaders(self) -> None:
        """Move leadership off dead brokers and back to preferred leaders; bump epochs on every move.
        An offline partition keeps no leader (-1), and so does one whose every replica (every broker) is
        down: KRaft's controller leaves it without a leader (epoch + 1) and elects the first replica back
        (epoch + 1 again) - a one-node cluster's restart moves the epoch by 2, as the 4.1 recording shows."""
        for topic in self.topics.values():
            for log in topic.partitions:
                if log.offline:
                    continue
                wanted = self._ring_pick(
                    sorted(self.brokers).index(self.replicas_of(topic.name, log.partition)[0])
                )
                if not self.brokers[wanted].alive:
                    wanted = -1
                if wanted != log.leader_id:
                    log.set_leader(wanted, log.leader_epoch + 1)
        self.notify_all()

    def set_offline(self, topic: str, partition: int, offline: bool) -> None:
        """Take a partition offline (no leader, as when every replica is down) or bring it back."""
        log = self.partition_log(topic, partition)
        if log is None:
            raise ValueError(f"no partition {topic}-{partition}")
        log.offline = offline
        if offline:
            log.set_leader(-1, log.leader_epoch + 1)
        self.rebalance_leaders()

    # ----------------------------------------------------------- coordinators
    def coordinator_for(self, key_type: int, key: str) -> int:
        """The broker that coordinates ``key`` (0 = group, 1 = transactional id): where
        ``MockCluster.move_coordinator`` put it, else a stable hash of the key over the brokers - the
        next alive broker when that one is down or fenced, as Kafka's controller elects another replica
        of the key's internal partition."""
        ids = sorted(self.brokers)
        moved = self.coordinator_overrides.get((key_type, key))
        if moved is not None:
            info = self.brokers.get(moved)
            return moved if info is None or info.alive else self._ring_pick(ids.index(moved))
        return self._ring_pick(_stable_hash(key) % len(ids))
