"""The interfaces between a group member, its consumer and the application.

:class:`RebalanceHooks`: what a group member tells its owner about partitions changing hands.
:class:`Membership`: what the consumer needs of a member - the interface both members implement: the
classic protocol's :class:`~.member.GroupMember` and the consumer protocol's
:class:`~.kip848.member.ConsumerGroupMember`.
:class:`RebalanceListener`: what the consumer's application implements (``subscribe(listener=)``).
:class:`SubscriptionPattern`: a subscription by regular expression, which the coordinator resolves
(KIP-848; the Java client's ``SubscriptionPattern``).

Why Protocols in a leaf module: the member (``member.py``) calls the hooks on the consumer's polling
thread, and the consumer facade implements them and drives the member; neither imports the other's
module for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs
from kafka.structs import ConsumerGroupMetadata, TopicPartition

from txnproducer.errors import ConfigError

__all__ = ["Membership", "RebalanceHooks", "RebalanceListener", "SubscriptionPattern"]


def _pattern(_inst: Any, _attr: Any, value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"SubscriptionPattern needs a non-empty regular expression (a str), got {value!r}")


@attrs.frozen
class SubscriptionPattern:
    """A subscription to every topic whose name matches ``pattern``, a RE2/J regular expression matched
    against the whole name by the group coordinator (KIP-848; the Java client's
    ``SubscriptionPattern``): ``consumer.subscribe(SubscriptionPattern("orders-.*"))``. Needs
    ``group_protocol="consumer"`` and Kafka 4.0 or newer. The coordinator looks for new matching
    topics in the background: a topic created later is assigned up to about 10 s after it appears
    (Kafka 4.1 re-resolves a group's expressions no more often than that). RE2/J has no lookaround
    and no backreferences; a pattern it refuses ends in InvalidRegularExpressionError."""

    pattern: str = attrs.field(validator=_pattern)

    def __str__(self) -> str:
        return self.pattern


class RebalanceHooks(Protocol):
    """Called by :meth:`GroupMember.poll` (and :meth:`GroupMember.close`) on the polling thread.

    ``on_revoke(partitions)``: the classic member calls it before it sends JoinGroup for a rebalance
    (eager: every owned partition, possibly none), the consumer-protocol member with the partitions
    its new assignment no longer holds (only when there are some) before it acknowledges; both before
    a clean close. Whatever the owner does here - abort
    a transaction, commit offsets - happens before the group can hand the partitions to another
    member. ``on_lost(partitions)``: the member was dropped from the group (session timeout,
    fenced generation, poll interval exceeded): the partitions may already belong to someone else,
    so nothing may be committed for them; called only when some were owned. ``on_assign(partitions)``:
    the whole new assignment (possibly empty), after every successful rebalance - the partitions
    kept included; its owner tells the added ones apart.

    Optional: ``wakeup()``, called on the member's IO thread when the polling thread has work (a
    consumer-protocol member's reconciliation or fencing, committed offsets that arrived), for an owner
    whose polling thread waits on something else (its own network).

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

    def subscribe(self, topics: Iterable[str] | SubscriptionPattern) -> None:
        """Replace the subscription (topic names; a pattern for the consumer protocol only)."""

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

    ``on_partitions_revoked(partitions)``: with the classic protocol (``group_protocol="classic"``),
    before the member rejoins its group, every owned partition (eager rebalancing); with the consumer
    protocol, only the partitions taken away, before the coordinator can give them to anyone (called
    only when there are some); both before a clean ``close()``; the positions are still there.
    ``on_partitions_assigned(partitions)``: classic - the whole new assignment (possibly empty);
    consumer protocol - only the partitions added (possibly none: it is called after every
    reconciliation), as the Java client's incremental callbacks. An optional
    ``on_partitions_lost(partitions)``: the member was dropped from its group, the partitions may be
    another member's already - commit nothing for them; without it, ``on_partitions_revoked`` is
    called (Java's default). An exception propagates out of ``poll()``.
    """

    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None: ...

    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None: ...
