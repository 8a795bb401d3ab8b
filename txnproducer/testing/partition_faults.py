"""What can happen to a partition's log and leadership: MockCluster's faults on partitions.

Why apart from ``cluster.py``: these are the faults a read path must survive (a leader moved or
elected uncleanly over a truncated log, a corrupt batch, records deleted under a consumer, a
partition without a leader, a transaction its coordinator forgot), each a few lines on
:class:`~.partition_log.PartitionLog` and :class:`~.cluster_state.ClusterState` under the state's
lock. :class:`MockCluster` takes them as methods of this mixin, so tests call
``cluster.truncate_log(...)`` like any other fault.
"""

from __future__ import annotations

from .cluster_state import ClusterState
from .hanging import PlantedTransaction, forget_partition, plant_orphan
from .partition_log import PartitionLog

__all__ = ["PartitionFaults"]


class PartitionFaults:
    """Faults on partitions; the class using it provides ``state``."""

    state: ClusterState

    def _log_of(self, topic: str, partition: int) -> PartitionLog:
        """The partition's log (the caller holds ``state.lock``); ValueError for an unknown partition."""
        log = self.state.partition_log(topic, partition)
        if log is None:
            raise ValueError(f"no partition {topic}-{partition}")
        return log

    def move_leader(self, topic: str, partition: int, to_broker: int) -> None:
        """Make ``to_broker`` the partition's leader (epoch + 1), as a reassignment or a
        preferred-leader election does, while the old leader stays up: it answers Produce and
        Fetch NOT_LEADER_OR_FOLLOWER with the new leader (KIP-951) until clients follow. A later
        broker stop or start puts leaders back on their preferred brokers."""
        with self.state.lock:
            log = self._log_of(topic, partition)
            if to_broker not in self.state.alive_broker_ids():
                raise ValueError(f"broker {to_broker} is not alive")
            if to_broker != log.leader_id:
                log.set_leader(to_broker, log.leader_epoch + 1)
            self.state.notify_all()

    def truncate_log(self, topic: str, partition: int, to_offset: int, new_leader: int | None = None) -> None:
        """An unclean leader election: the partition gets a new leader (``new_leader``, default the next
        alive broker; leader epoch + 1) whose log ends at ``to_offset`` - every record from there on is
        gone, and the new epoch starts there. A consumer that had read past ``to_offset`` must detect it
        (KIP-320: OffsetForLeaderEpoch answers the old epoch's end at ``to_offset``)."""
        with self.state.lock:
            log = self._log_of(topic, partition)
            alive = self.state.alive_broker_ids()
            if new_leader is None:
                others = [b for b in alive if b != log.leader_id]
                new_leader = others[0] if others else log.leader_id
            if new_leader not in alive:
                raise ValueError(f"broker {new_leader} is not alive")
            log.truncate_to(to_offset)
            log.set_leader(new_leader, log.leader_epoch + 1)
            self.state.notify_all()

    def corrupt_batch(self, topic: str, partition: int, offset: int) -> int:
        """Damage the stored batch holding ``offset`` (one flipped bit: its CRC-32C no longer matches), as
        a disk fault would; Fetch returns it as stored. Returns the batch's base offset."""
        with self.state.lock:
            log = self._log_of(topic, partition)
            return log.corrupt(offset)

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Delete the partition's records below ``before_offset`` (as retention or DeleteRecords
        would): the log start moves there and producers whose batches all went lose their state."""
        with self.state.lock:
            log = self._log_of(topic, partition)
            log.delete_before(before_offset)

    def set_partition_offline(self, topic: str, partition: int, offline: bool = True) -> None:
        """Leave a partition without a leader (Metadata: LEADER_NOT_AVAILABLE, leader -1), as when every
        replica is down, until called again with ``offline=False``."""
        with self.state.lock:
            self.state.set_offline(topic, partition, offline)

    def plant_hanging_transaction(self, topic: str, partition: int, age_ms: int = 1_200_000,
                                  records: int = 1) -> PlantedTransaction:
        """Leave ``topic-partition`` holding an open transaction of a producer id no transactional id maps
        to, its records time-stamped ``age_ms`` ago (default 20 min: past Kafka's default
        ``transaction.max.timeout.ms``): a hanging transaction (``hanging.py``); only an ABORT marker
        (WriteTxnMarkers) ends it."""
        with self.state.lock:
            return plant_orphan(self.state, topic, partition, age_ms, records)

    def forget_transaction_partition(self, transactional_id: str, topic: str, partition: int) -> None:
        """Make the coordinator forget ``topic-partition`` in ``transactional_id``'s ongoing transaction:
        its end writes no marker there, and the partition keeps a hanging transaction."""
        with self.state.lock:
            forget_partition(self.state, transactional_id, topic, partition)
