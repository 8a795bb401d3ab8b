"""Checks and answer fragments that several handler modules share, written once.

Coordinator placement (NOT_COORDINATOR when this broker does not coordinate the key), partition
leadership (``led_here``: the checks before a partition's data is answered), the KIP-588
mapping of PRODUCER_FENCED for old request versions, the broker list of Metadata and Produce v10+, and
the leader hint of NOT_LEADER_OR_FOLLOWER answers. Imports the domain modules only, never a handler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from txnproducer._internal.protocol import error_codes as ec

from .api import RequestContext

if TYPE_CHECKING:  # pragma: no cover
    from ..cluster_state import ClusterState
    from ..group_coordinator import GroupCoordinator
    from ..partition_log import PartitionLog


class CoordinatorPlacement(Protocol):
    """Who coordinates a key (``ClusterState.coordinator_for``)."""

    def coordinator_for(self, key_type: int, key: str) -> int: ...


class GroupHost(CoordinatorPlacement, Protocol):
    """The parts of ``ClusterState`` the group handlers use (a small fake satisfies it in tests)."""

    @property
    def groups(self) -> GroupCoordinator: ...

    @property
    def topics(self) -> Mapping[str, Any]: ...


def is_coordinator(state: CoordinatorPlacement, ctx: RequestContext, key_type: int, key: str) -> bool:
    """Whether this broker coordinates ``key`` (``GROUP_KEY`` or ``TRANSACTION_KEY``)."""
    return int(state.coordinator_for(key_type, key)) == ctx.broker_id


def fenced_for_version(version: int, first_fenced_version: int, error: int) -> int:
    """KIP-588: versions older than the one that introduced PRODUCER_FENCED get INVALID_PRODUCER_EPOCH."""
    if error == ec.PRODUCER_FENCED and version < first_fenced_version:
        return ec.INVALID_PRODUCER_EPOCH
    return error


def led_here(state: ClusterState, ctx: RequestContext, topic: str, partition: int,
             authorized: bool, current_leader_epoch: int = -1) -> tuple[int, PartitionLog | None]:
    """(error code, log): whether this broker may answer for a partition, checked in Kafka's order -
    TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION, then the asker's ``current_leader_epoch`` as
    ``Partition.getLocalLog`` checks it on every replica (every broker of the mock holds one): older than
    the partition's FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (-1 is not checked), and only then
    NOT_LEADER_OR_FOLLOWER - and the log when it may (NONE)."""
    log = state.partition_log(topic, partition)
    if not authorized:
        return ec.TOPIC_AUTHORIZATION_FAILED, None
    if log is None:
        return ec.UNKNOWN_TOPIC_OR_PARTITION, None
    if 0 <= current_leader_epoch < log.leader_epoch:
        return ec.FENCED_LEADER_EPOCH, None
    if current_leader_epoch > log.leader_epoch:
        return ec.UNKNOWN_LEADER_EPOCH, None
    if log.leader_id != ctx.broker_id:
        return ec.NOT_LEADER_OR_FOLLOWER, None
    return ec.NONE, log


def broker_list(state: ClusterState) -> list[dict[str, Any]]:
    """The alive brokers in node id order, as Metadata (and Produce v10+ node_endpoints) list them."""
    return [
        {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
        for b in sorted(state.brokers.values(), key=lambda b: b.node_id)
        if b.alive
    ]


def leader_hint(state: ClusterState, topic: str, partition: int) -> dict[str, Any] | None:
    """``current_leader`` of a NOT_LEADER_OR_FOLLOWER answer (Produce v10+, Fetch v12+)."""
    log = state.partition_log(topic, partition)
    if log is None:
        return None
    return {"leader_id": log.leader_id, "leader_epoch": log.leader_epoch}
