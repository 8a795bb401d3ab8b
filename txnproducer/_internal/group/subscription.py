"""A subscribed consumer's side of its group: the subscription, the application's listener, the member
of either protocol, and the hooks that member calls.

Why apart from the consumer: the two protocols hand partitions over differently - the classic
member revokes everything before it rejoins and assigns the whole new assignment (eager), the
consumer-protocol member revokes only what moves and adds only what is new (incremental, KIP-848) -
and the application's :class:`~.hooks.RebalanceListener` is told as the Java client tells it under
each (``ConsumerCoordinator`` / ``ConsumerMembershipManager``). This class implements the member's
:class:`~.hooks.RebalanceHooks` once for both, over the consumer's partitions through the narrow
:class:`PartitionsOwner` interface (the consumer's fetch state, which the group room does not import).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kafka.structs import TopicPartition

from txnproducer import errors

from .hooks import Membership, RebalanceHooks, RebalanceListener, SubscriptionPattern

__all__ = ["PartitionsOwner", "Subscription", "check_listener", "subscription_of"]


class PartitionsOwner(Protocol):
    """What the hooks change in the consumer that owns the member (its assignment and fetch state)."""

    def apply_assignment(self, partitions: frozenset[TopicPartition]) -> frozenset[TopicPartition]:
        """Make ``partitions`` the assignment (new ones start at their committed offsets, kept ones
        keep their positions, any other is dropped with its buffered records); returns the added."""

    def owned(self) -> frozenset[TopicPartition]:
        """The assignment now."""

    def drop(self, partitions: frozenset[TopicPartition]) -> None:
        """Stop reading ``partitions``: drop them and their buffered records."""

    def wakeup(self) -> None:
        """Wake the polling thread if it waits (on its own network)."""


def subscription_of(topics: Any) -> frozenset[str] | SubscriptionPattern:
    """Topic names or a pattern as a subscription; ConfigError for anything else."""
    if isinstance(topics, SubscriptionPattern):
        return topics
    names = [topics] if isinstance(topics, str) else list(topics) if isinstance(topics, Iterable) else []
    if not names or not all(isinstance(t, str) and t for t in names):
        raise errors.ConfigError(
            f"topics must be one or more topic names or a SubscriptionPattern, got {topics!r}")
    return frozenset(names)


def check_listener(listener: Any) -> None:
    """ConfigError unless ``listener`` has the two callbacks of a RebalanceListener."""
    needed = ("on_partitions_revoked", "on_partitions_assigned")
    if listener is not None and not all(callable(getattr(listener, m, None)) for m in needed):
        raise errors.ConfigError(
            f"listener must have on_partitions_revoked(partitions) and on_partitions_assigned("
            f"partitions) methods (and optionally on_partitions_lost), got {listener!r}")


class Subscription(RebalanceHooks):
    """See the module docstring. ``new_member(hooks)`` makes the consumer's member (once, when first
    needed); ``incremental``: the consumer protocol's listener calls."""

    def __init__(self, owner: PartitionsOwner, new_member: Callable[[RebalanceHooks], Membership],
                 incremental: bool) -> None:
        self._owner = owner
        self._new_member = new_member
        self._incremental = incremental
        self._member: Membership | None = None
        self.topics: frozenset[str] | SubscriptionPattern | None = None  # None: not subscribed
        self.listener: RebalanceListener | None = None

    @property
    def member(self) -> Membership:
        if self._member is None:
            self._member = self._new_member(self)
        return self._member

    @property
    def made(self) -> Membership | None:
        """The member if it was made (for closing)."""
        return self._member

    def subscribe(self, topics: frozenset[str] | SubscriptionPattern,
                  listener: RebalanceListener | None) -> None:
        self.member.subscribe(topics)
        self.topics = topics
        self.listener = listener

    # -- RebalanceHooks (polling thread, inside the member's poll or close) -------------------------

    def on_assign(self, partitions: frozenset[TopicPartition]) -> None:
        """The whole new assignment: applied, then the listener's ``on_partitions_assigned`` with it
        (classic) or with the added partitions only (consumer protocol), in partition order."""
        added = self._owner.apply_assignment(frozenset(partitions))
        if self.listener is not None:
            self.listener.on_partitions_assigned(_sorted(added if self._incremental else partitions))

    def on_revoke(self, partitions: frozenset[TopicPartition]) -> None:
        """The listener's ``on_partitions_revoked`` while the partitions' positions are still there (so
        that it can end its transaction), then they are dropped. Under the consumer protocol it is
        not called for no partition (Java's incremental rule); the classic member calls it always."""
        revoked = frozenset(partitions) & self._owner.owned()
        try:
            if self.listener is not None and (revoked or not self._incremental):
                self.listener.on_partitions_revoked(_sorted(revoked))
        finally:
            self._owner.drop(revoked)

    def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        """The member was dropped: the listener's ``on_partitions_lost`` (else
        ``on_partitions_revoked``, Java's default), then the partitions are dropped. Nothing may be
        committed for them: another member may own them already."""
        lost = frozenset(partitions) & self._owner.owned()
        try:
            if self.listener is not None:
                callback = getattr(self.listener, "on_partitions_lost", None)
                (callback if callable(callback) else self.listener.on_partitions_revoked)(_sorted(lost))
        finally:
            self._owner.drop(lost)

    def wakeup(self) -> None:
        self._owner.wakeup()


def _sorted(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted(partitions, key=lambda tp: (tp.topic, tp.partition))
