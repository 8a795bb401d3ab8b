"""The interfaces between a group member, its consumer and the application.

:class:`RebalanceHooks`: what a group member tells its owner about partitions changing hands.
:class:`Membership`: what the consumer needs of a member (:class:`~.member.GroupMember`'s interface).
:class:`RebalanceListener`: what the consumer's application implements (``subscribe(listener=)``).

Why Protocols in a leaf module: the member (``member.py``) calls the hooks on the consumer's polling
thread, and the consumer facade implements them and drives the member; neither imports the other's
module for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from kafka.structs import ConsumerGroupMetadata, TopicPartition

__all__ = ["Membership", "RebalanceHooks", "RebalanceListener"]


class RebalanceHooks(Protocol):
    """Called by :meth:`GroupMember.poll` (and :meth:`GroupMember.close`) on the polling thread.

    ``on_revoke(partitions)``: before this member sends JoinGroup for a rebalance (eager: every
    owned partition, possibly none), and before a clean close. Whatever the owner does here - abort
    a transaction, commit offsets - happens before the group can hand the partitions to another
    member. ``on_lost(partitions)``: the member was dropped from the group (session timeout,
    fenced generation, poll interval exceeded): the partitions may already belong to someone else,
    so nothing may be committed for them; called only when some were owned. ``on_assign(partitions)``:
    the new assignment, after every successful rebalance (possibly empty).

    An exception from a hook propagates out of ``poll`` after the member's state is consistent (the
    rebalance goes on at the next ``poll``), as the Java consumer's listener errors do.
    """

    def on_revoke(self, partitions: frozenset[TopicPartition]) -> None: ...

    def on_assign(self, partitions: frozenset[TopicPartition]) -> None: ...

    def on_lost(self, partitions: frozenset[TopicPartition]) -> None: ...


class Membership(Protocol):
    """What the consumer needs of a group member: our own member's (``_internal.group.GroupMember``)
    interface. The member calls the consumer's ``on_revoke``, ``on_assign`` and ``on_lost`` (its
    ``RebalanceHooks``) from inside :meth:`poll` and :meth:`close`, on the polling thread."""

    def subscribe(self, topics: Iterable[str]) -> None:
        """Replace the subscription (a change rejoins at the next :meth:`poll`)."""

    def poll(self, deadline: float) -> bool:
        """Run due group work on the polling thread, hooks included, returning by ``deadline``
        (``time.monotonic()``); True when the member is stable with its assignment applied."""

    def fetch_committed(
        self, partitions: Iterable[TopicPartition], timeout: float
    ) -> Mapping[TopicPartition, Any]:
        """The group's committed offsets (OffsetFetch with require_stable); none: absent."""

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The KIP-447 group metadata for ``send_offsets_to_transaction``."""

    def close(self, timeout: float, leave_group: bool | None = None) -> None:
        """Leave the group (a dynamic member; ``leave_group`` overrides) and stop."""


class RebalanceListener(Protocol):
    """What :meth:`TransactionalConsumer.subscribe` calls when partitions change hands (on the
    polling thread, inside ``poll()``; the Java ``ConsumerRebalanceListener``). kafka-python's
    ``ConsumerRebalanceListener`` subclasses fit.

    ``on_partitions_revoked(partitions)``: before the member rejoins its group (every owned
    partition: eager rebalancing), and before a clean ``close()``; the positions are still there.
    ``on_partitions_assigned(partitions)``: the new assignment (possibly empty). An optional
    ``on_partitions_lost(partitions)``: the member was dropped from its group, the partitions may be
    another member's already - commit nothing for them; without it, ``on_partitions_revoked`` is
    called (Java's default). An exception propagates out of ``poll()``.
    """

    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None: ...

    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None: ...
