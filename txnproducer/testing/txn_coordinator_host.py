"""What the MockCluster's transaction coordinator needs of the cluster around it.

A leaf module of interfaces (STYLE habit 5): ``ClusterState`` holds the coordinator, so the
coordinator names the cluster only through these protocols - the real ``ClusterState`` in the mock,
a small fake (``tests/mock/_txn_fake_state.py``) in the conformance replay's handler level.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

__all__ = ["CoordinatorHost", "MarkerLog", "TxnOffsetsStore"]


class MarkerLog(Protocol):
    """A partition log as the coordinator sees it: where the COMMIT/ABORT markers go."""

    def write_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> None: ...


class TxnOffsetsStore(Protocol):
    """The group coordinator's side of transactional offsets (KIP-447), as this coordinator uses it."""

    def validate_txn_offset_commit(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int: ...

    def stage_txn_offsets(
        self, group_id: str, producer_id: int, offsets: dict[tuple[str, int], tuple[int, int, str | None]]
    ) -> None: ...

    def complete_txn_offsets(self, group_id: str, producer_id: int, commit: bool) -> None: ...


class CoordinatorHost(Protocol):
    """What the coordinator needs from the cluster: ``ClusterState`` in the mock, a small fake in unit tests.

    An interface rather than ``ClusterState`` itself, because the cluster state holds this coordinator:
    naming the state here would make the two modules import each other.
    """

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def transaction_version(self) -> int: ...

    @property
    def transaction_max_timeout_ms(self) -> int: ...

    @property
    def groups(self) -> TxnOffsetsStore: ...

    def now_ms(self) -> int: ...

    def notify_all(self) -> None: ...

    def partition_log(self, topic: str, partition: int) -> MarkerLog | None: ...
