"""What a group member tells its owner about partitions changing hands: :class:`RebalanceHooks`.

Why a Protocol in a leaf module: the member (``member.py``) calls these on the consumer's polling
thread, and the consumer facade implements them; neither imports the other's module.
"""

from __future__ import annotations

from typing import Protocol

from kafka.structs import TopicPartition

__all__ = ["RebalanceHooks"]


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
