"""The KIP-848 consumer group protocol of the MockCluster: ConsumerGroupHeartbeat, as Kafka 4.1 answers it.

Why a module of its own: the protocol is one request whose answer depends on a small state machine per
group - member epochs, the group epoch and the target assignment, reconciliation, static members, regular
expressions resolved in the background, session and rebalance timeouts - and it reads best as that state
machine over the :mod:`consumer_group` model, apart from the classic protocol's rounds
(``group_membership.py``) and from the online migration between the two protocols, which
:class:`~txnproducer.testing.consumer_group_coordinator.ConsumerGroupCoordinator` adds on top of this class.

The rules follow Kafka 4.1's ``GroupMetadataManager.consumerGroupHeartbeat`` and were checked against a real
broker's answers (``tests/conformance/kafka-4.1.0/consumer_group.json``): the request is validated first
(INVALID_REQUEST with Kafka's messages, UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION), epoch -1 and -2
leave, epoch 0 joins with the member id the client chose (v1+; a v0 join may leave it empty and gets one),
any other epoch must be the member's (FENCED_MEMBER_EPOCH - the previous epoch is accepted when the owned
partitions are a subset of the assignment, as after a lost answer); an existing member joining again with
epoch 0 is fenced too, as in Kafka. The group epoch moves when a member joins, leaves or changes the topics
it subscribes to (not when it names another assignor), when a subscribed topic changes, and when a regular
expression's result changes; the target assignment is computed on the next heartbeat after that (the group
shows ``Assigning`` until then).

Threading: every public method is called with ``state.lock`` held (handlers and the cluster's ticker).

Simplifications (beside those of ``server_assignors.py``): regular expressions are Python ``re`` patterns
matched in full (RE2/J, Kafka's engine, has no lookaround or backreferences - those are refused as RE2/J
refuses them - and a few classes differ: ``\\p{...}`` is refused here); an expression is resolved at the
group's next request or tick after it was subscribed (Kafka: in the background, a moment later), and again
when the topic set changed, no sooner than 10 s after the last resolution, as Kafka 4.1 does;
INVALID_REGULAR_EXPRESSION carries RE2/J's message for the common mistakes and Python's otherwise; an empty
group is never deleted (it stays ``Empty``, until a classic JoinGroup replaces it); no authorization on
subscribed topics; per-group configs
(``consumer.session.timeout.ms``) and rack-aware assignment are not implemented.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Protocol

import attrs

from txnproducer._internal.protocol import error_codes as ec

from .consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState, reconcile, same_state
from .consumer_group_requests import (
    LEAVE,
    STATIC_LEAVE,
    GroupError,
    HeartbeatAnswer,
    HeartbeatRequest,
    new_member_id,
    validate,
)
from .group_membership import StateView
from .server_assignors import ASSIGNORS, DEFAULT_ASSIGNOR, MemberSpec, java_hash_order, java_string_hash

__all__ = ["ConsumerMembership", "TopicsView"]

#: Kafka property -> (attribute, type); read from ``state.settings["consumer_group_config"]``
_CONFIG = {
    "group.consumer.heartbeat.interval.ms": ("heartbeat_interval_ms", int),
    "group.consumer.session.timeout.ms": ("session_timeout_ms", int),
    "group.consumer.max.size": ("max_size", int),
    "group.consumer.assignors": ("assignors", str),
    "group.consumer.migration.policy": ("migration_policy", str),
    "group.classic.max.size": ("classic_max_size", int),
    "group.consumer.regex.refresh.interval.ms": ("regex_refresh_interval_ms", int),
}
#: Kafka re-resolves a group's regular expressions at most this often (hard-coded in 4.1)
REGEX_REFRESH_MIN_MS = 10_000


class TopicLike(Protocol):
    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partitions(self) -> Sequence[object]: ...


class TopicsView(StateView, Protocol):
    """What the consumer-protocol coordinator needs from ``ClusterState``: time, notification, topics."""

    @property
    def topics(self) -> Mapping[str, TopicLike]: ...


class ConsumerMembership:
    """The consumer-protocol groups of the whole mock cluster (see the module docstring).

    Settings are Kafka's group-coordinator configs (change them on the instance, or pass Kafka's property
    names as ``MockCluster(consumer_group_config={...})``): ``heartbeat_interval_ms`` (Kafka's default 5000;
    the mock answers 500 so that members converge quickly in tests), ``session_timeout_ms`` 45000,
    ``max_size`` (``group.consumer.max.size``), ``assignors`` ("uniform,range"; the first is the default), and
    ``migration_policy`` ("bidirectional", "upgrade", "downgrade", "disabled").
    """

    heartbeat_interval_ms: int = 500
    session_timeout_ms: int = 45000
    max_size: int = 2**31 - 1
    assignors: str = "uniform,range"
    migration_policy: str = "bidirectional"
    classic_max_size: int = 2**31 - 1
    regex_refresh_interval_ms: int = 600_000

    def __init__(self, state: TopicsView) -> None:
        self._state = state
        self._consumer_groups: dict[str, ConsumerGroup] = {}
        settings: Mapping[str, object] = getattr(state, "settings", None) or {}
        config = settings.get("consumer_group_config") or {}
        assert isinstance(config, Mapping)
        for key, value in config.items():
            if key not in _CONFIG:
                raise ValueError(f"unknown consumer group setting {key!r} (known: {', '.join(_CONFIG)})")
            attr, kind = _CONFIG[key]
            setattr(self, attr, kind(value))
        if self.migration_policy.lower() not in ("bidirectional", "upgrade", "downgrade", "disabled"):
            raise ValueError(
                f"group.consumer.migration.policy {self.migration_policy!r}: bidirectional, upgrade, "
                "downgrade or disabled"
            )
        unknown = set(self.assignor_names()) - set(ASSIGNORS)
        if unknown:
            raise ValueError(
                f"group.consumer.assignors {sorted(unknown)}: the mock has {', '.join(ASSIGNORS)}"
            )

    # ------------------------------------------------------------------ inspection
    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The live model of a consumer-protocol group (for assertions in tests; do not mutate)."""
        return self._consumer_groups.get(group_id)

    def is_consumer_group(self, group_id: str) -> bool:
        return group_id in self._consumer_groups

    def group_ids(self) -> list[str]:
        return list(self._consumer_groups)

    def assignor_names(self) -> list[str]:
        return [name.strip() for name in self.assignors.split(",") if name.strip()]

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        for name, topic in self._state.topics.items():
            if topic.topic_id == topic_id:
                return name
        return None

    # ------------------------------------------------------------------ ConsumerGroupHeartbeat
    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatAnswer:
        """Handle one ConsumerGroupHeartbeat (join, heartbeat, acknowledge or leave)."""
        try:
            validate(request, self.assignor_names())
            now = self._now()
            self._run_timers(now)
            if request.member_epoch in (LEAVE, STATIC_LEAVE):
                return self._leave(request, now)
            return self._heartbeat(request, now)
        except GroupError as error:
            return HeartbeatAnswer(error.code, error.message)
        finally:
            self._notify()

    def _heartbeat(self, request: HeartbeatRequest, now: int) -> HeartbeatAnswer:
        joining = request.member_epoch == 0
        group = self._group_for(request.group_id, create=joining, now=now)
        self._resolve_regexes(group, now)
        member_id = request.member_id or new_member_id()
        if member_id not in group.members and len(group.members) >= self.max_size:
            raise GroupError(
                ec.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {self.max_size} members.",
            )
        if request.instance_id is None:
            member = self._dynamic_member(group, member_id, request, joining)
        else:
            member = self._static_member(group, member_id, request, joining)
        updated = member.copy()
        if request.instance_id is not None:
            updated.instance_id = request.instance_id
        if request.rack_id is not None:
            updated.rack_id = request.rack_id
        if request.rebalance_timeout_ms != -1:
            updated.rebalance_timeout_ms = request.rebalance_timeout_ms
        if request.server_assignor is not None:
            updated.server_assignor = request.server_assignor
        if request.subscribed_topic_names is not None:
            updated.subscribed_topic_names = tuple(request.subscribed_topic_names)
        if request.subscribed_topic_regex is not None:
            updated.subscribed_topic_regex = request.subscribed_topic_regex
        updated.client_id, updated.client_host, updated.classic = request.client_id, request.client_host, None
        bump = self._update_member(group, member, updated)
        answer_member = self._refresh_and_reconcile(group, updated, bump, request.owned, now)
        answer_member.session_deadline_ms = now + self.session_timeout_ms
        full = joining or (
            request.rebalance_timeout_ms != -1
            and request.owned is not None
            and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
        )
        changed = answer_member.assigned != member.assigned
        return HeartbeatAnswer(
            member_id=answer_member.member_id,
            member_epoch=answer_member.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            assignment=_as_lists(answer_member.assigned) if full or changed else None,
        )

    def _dynamic_member(
        self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest, joining: bool
    ) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise GroupError(
                    ec.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
                )
            member = ConsumerGroupMember(member_id)
        self._check_epoch(member, request.member_epoch, request.owned)
        return member

    def _static_member(
        self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest, joining: bool
    ) -> ConsumerGroupMember:
        assert request.instance_id is not None
        existing = group.static_member(request.instance_id)
        if joining:
            if existing is None:
                member = group.members.get(member_id) or ConsumerGroupMember(member_id)
                return member
            if existing.member_epoch != STATIC_LEAVE:
                raise GroupError(
                    ec.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id "
                    f"{request.instance_id} cannot join the group because the instance id is owned by "
                    f"{existing.member_id} member.",
                )
            replacement = attrs.evolve(
                existing.copy(), member_id=member_id, member_epoch=0, previous_member_epoch=0
            )
            group.replace(existing.member_id, replacement)
            return replacement
        if existing is None:
            raise GroupError(ec.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
        self._check_instance(existing, member_id, request.instance_id)
        self._check_epoch(existing, request.member_epoch, request.owned)
        return existing

    @staticmethod
    def _check_instance(existing: ConsumerGroupMember, member_id: str, instance_id: str) -> None:
        if existing.member_id != member_id:
            raise GroupError(
                ec.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} "
                f"was fenced by member {existing.member_id}.",
            )

    @staticmethod
    def _check_epoch(
        member: ConsumerGroupMember, epoch: int, owned: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None
    ) -> None:
        """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``."""
        if epoch > member.member_epoch:
            raise GroupError(
                ec.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({epoch})"
                f" than the one known by the group coordinator ({member.member_epoch}). The member "
                "must abandon all its partitions and rejoin.",
            )
        if epoch < member.member_epoch and (
            epoch != member.previous_member_epoch
            or owned is None
            or any(p not in member.assigned.get(topic, ()) for topic, ps in owned for p in ps)
            or any(topic not in member.assigned for topic, _ in owned)
        ):
            raise GroupError(
                ec.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({epoch})"
                f" than the one known by the group coordinator ({member.member_epoch}). The member "
                "must abandon all its partitions and rejoin.",
            )

    def _update_member(
        self, group: ConsumerGroup, old: ConsumerGroupMember, updated: ConsumerGroupMember
    ) -> bool:
        """Store ``updated``; whether its subscription change moves the group epoch (Kafka's
        ``hasMemberSubscriptionChanged`` - topic names only, not the assignor - and the regular expressions:
        one no member uses any more is dropped; a new one is resolved later, moving the epoch then)."""
        bump = group.group_epoch == 0
        bump |= frozenset(old.subscribed_topic_names) != frozenset(updated.subscribed_topic_names)
        regex = updated.subscribed_topic_regex
        if regex and regex not in group.resolved_regexes:
            group.unresolved_regexes.add(regex)
        group.put(updated)
        bump |= self._forget_unused_regexes(group)
        return bump

    def _refresh_and_reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        bump: bool,
        owned: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None,
        now: int,
    ) -> ConsumerGroupMember:
        """Move the group epoch if needed, compute the target assignment when behind, reconcile ``member``."""
        metadata = self._subscription_metadata(group)
        if bump or metadata != group.metadata:
            group.group_epoch += 1
            group.metadata = metadata
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        return self._reconcile(group, group.members[member.member_id], owned, now)

    def _reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        owned: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None,
        now: int,
    ) -> ConsumerGroupMember:
        if member.is_reconciled_to(group.assignment_epoch):
            return member
        owned_list = None if owned is None else [(t, list(ps)) for t, ps in owned]
        target = group.targets.get(member.member_id, {})
        nxt = reconcile(
            member,
            group.assignment_epoch,
            target,
            owned_list,
            lambda t, p: group.partition_epoch(t, p, member.member_id),
        )
        if same_state(nxt, member):
            return member
        if not nxt.uses_classic_protocol:
            if nxt.state is MemberState.UNREVOKED_PARTITIONS:
                nxt.rebalance_deadline_ms = now + max(nxt.rebalance_timeout_ms, 0)
                nxt.rebalance_deadline_epoch = nxt.member_epoch
            else:
                nxt.rebalance_deadline_ms = None
        group.put(nxt)
        return nxt

    # ------------------------------------------------------------------ target assignment
    def _compute_target(self, group: ConsumerGroup) -> None:
        topics = self._state.topics
        specs = []
        for member in group.members.values():
            # Kafka's member keeps its topic names in a hash set: ids in one bucket come in that order
            names = java_hash_order(sorted(self._subscribed_names(group, member)), java_string_hash)
            ids = tuple(topics[n].topic_id for n in names if n in topics)
            specs.append(
                MemberSpec(member.member_id, member.instance_id, ids, group.targets.get(member.member_id, {}))
            )
        counts = {t.topic_id: len(t.partitions) for t in topics.values()}
        assign = ASSIGNORS[group.preferred_assignor(self._default_assignor())]
        group.targets = {m: dict(a) for m, a in assign(specs, counts).items()}
        group.assignment_epoch = group.group_epoch

    def _default_assignor(self) -> str:
        names = self.assignor_names()
        return names[0] if names else DEFAULT_ASSIGNOR

    def _subscribed_names(self, group: ConsumerGroup, member: ConsumerGroupMember) -> frozenset[str]:
        names = frozenset(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            names |= group.resolved_regexes.get(member.subscribed_topic_regex, frozenset())
        return names

    def _subscription_metadata(self, group: ConsumerGroup) -> frozenset[tuple[str, uuid.UUID, int]]:
        topics = self._state.topics
        names = set().union(*(self._subscribed_names(group, m) for m in group.members.values()))
        return frozenset((n, topics[n].topic_id, len(topics[n].partitions)) for n in names if n in topics)

    # ------------------------------------------------------------------ regular expressions
    def _resolve_regexes(self, group: ConsumerGroup, now: int) -> None:
        """Resolve the expressions the group's members subscribe to, as Kafka's background resolution does:
        at once when one is new, else when the topic set changed or ``regex_refresh_interval_ms`` passed -
        but never within 10 s of the last resolution. A changed result moves the group epoch (its members
        learn it on their next heartbeat)."""
        if not group.unresolved_regexes:
            if not group.resolved_regexes or now - group.regex_resolved_ms < REGEX_REFRESH_MIN_MS:
                return
            changed_topics = frozenset(self._state.topics) != group.regex_topics
            if not changed_topics and now - group.regex_resolved_ms < self.regex_refresh_interval_ms:
                return
        topic_names = frozenset(self._state.topics)
        changed = False
        for regex in group.unresolved_regexes | set(group.resolved_regexes):
            pattern = re.compile(regex)
            matched = frozenset(n for n in topic_names if pattern.fullmatch(n))
            changed |= group.resolved_regexes.get(regex) != matched
            group.resolved_regexes[regex] = matched
        group.unresolved_regexes.clear()
        group.regex_topics, group.regex_resolved_ms = topic_names, now
        if changed:
            group.group_epoch += 1
            group.metadata = self._subscription_metadata(group)

    @staticmethod
    def _forget_unused_regexes(group: ConsumerGroup) -> bool:
        used = {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex}
        unused = [r for r in group.resolved_regexes if r not in used]
        for regex in unused:
            del group.resolved_regexes[regex]
        group.unresolved_regexes &= used
        return bool(unused)

    # ------------------------------------------------------------------ leaving and fencing
    def _leave(self, request: HeartbeatRequest, now: int) -> HeartbeatAnswer:
        group = self._group_for(request.group_id, create=False, now=now)
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise GroupError(
                    ec.UNKNOWN_MEMBER_ID,
                    f"Member {request.member_id} is not a member of group {group.group_id}.",
                )
        else:
            found = group.static_member(request.instance_id)
            if found is None:
                raise GroupError(ec.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
            self._check_instance(found, request.member_id, request.instance_id)
            member = found
        if request.member_epoch == STATIC_LEAVE:
            member.previous_member_epoch, member.member_epoch = member.member_epoch, STATIC_LEAVE
            member.session_deadline_ms = now + self.session_timeout_ms
            member.rebalance_deadline_ms = None
        else:
            self.fence(group, {member.member_id}, now)
        return HeartbeatAnswer(member_id=request.member_id, member_epoch=request.member_epoch)

    def fence(self, group: ConsumerGroup, member_ids: set[str], now: int) -> None:
        """Remove members (a leave, a session or rebalance timeout): the group epoch moves, or the group
        turns classic when only classic-protocol members remain (:meth:`_maybe_downgrade`)."""
        if self._maybe_downgrade(group, member_ids, now):
            return
        for member_id in member_ids:
            group.remove(member_id)
        self._forget_unused_regexes(group)
        group.group_epoch += 1
        group.metadata = self._subscription_metadata(group)

    # ------------------------------------------------------------------ timers
    def tick(self, now_ms: int) -> None:
        """Session and rebalance timeouts due at ``now_ms``, and regular expressions to resolve."""
        self._run_timers(now_ms)

    def _run_timers(self, now: int) -> None:
        for group in list(self._consumer_groups.values()):
            self._resolve_regexes(group, now)
            expired = set()
            for member in group.members.values():
                deadline = member.rebalance_deadline_ms
                rebalance_due = deadline is not None and now >= deadline
                if (
                    (member.session_deadline_ms is not None and now >= member.session_deadline_ms)
                    or (rebalance_due and member.member_epoch == member.rebalance_deadline_epoch)
                    or (member.join_deadline_ms is not None and now >= member.join_deadline_ms)
                ):
                    expired.add(member.member_id)
            if expired:
                self.fence(group, expired, now)
                self._notify()

    def remove_consumer_member(self, group_id: str, member_id: str) -> bool:
        """Fence a member as its session timing out would; False if it is not a member."""
        group = self._consumer_groups.get(group_id)
        if group is None or member_id not in group.members:
            return False
        self.fence(group, {member_id}, self._now())
        self._notify()
        return True

    def force_new_epoch(self, group_id: str) -> bool:
        """Move a consumer group's epoch as a metadata change would (its members reconcile to a newly
        computed target on their next heartbeat); False when there is no such group."""
        group = self._consumer_groups.get(group_id)
        if group is None:
            return False
        if group.members:
            group.group_epoch += 1
            self._notify()
        return True

    # ------------------------------------------------------------------ groups
    def _group_for(self, group_id: str, *, create: bool, now: int) -> ConsumerGroup:
        group = self._consumer_groups.get(group_id)
        if group is not None:
            return group
        converted = self._maybe_upgrade(group_id, create, now)
        if converted is not None:
            self._consumer_groups[group_id] = converted
            return converted
        if not create:
            raise GroupError(ec.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        group = ConsumerGroup(group_id)
        self._consumer_groups[group_id] = group
        return group

    def _maybe_upgrade(self, group_id: str, create: bool, now: int) -> ConsumerGroup | None:
        """Hook: a classic group of this id, as a consumer group (online upgrade); None when there is none.
        Raises GroupError when the classic group may not become one. Here: no classic groups."""
        return None

    def _maybe_downgrade(self, group: ConsumerGroup, leaving: set[str], now: int) -> bool:
        """Hook: turn ``group`` classic when only classic-protocol members would remain; True if it did."""
        return False

    def drop_consumer_group(self, group_id: str) -> ConsumerGroup | None:
        return self._consumer_groups.pop(group_id, None)

    # ------------------------------------------------------------------ offsets (Kafka's ConsumerGroup)
    def validate_offset_commit(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        epoch: int,
        *,
        transactional: bool,
        api_version: int,
    ) -> int:
        """The error of an OffsetCommit (or TxnOffsetCommit) to a consumer-protocol group, NONE if allowed."""
        group = self._consumer_groups[group_id]
        if epoch < 0 and not group.members:
            return ec.NONE
        if transactional and epoch == -1 and member_id == "" and instance_id is None:
            return ec.NONE
        member = group.members.get(member_id)
        if member is None:
            return ec.UNKNOWN_MEMBER_ID
        if not transactional and not member.uses_classic_protocol and api_version < 9:
            return ec.UNSUPPORTED_VERSION
        if epoch != member.member_epoch:
            # TxnOffsetCommit has no STALE_MEMBER_EPOCH: Kafka answers it ILLEGAL_GENERATION
            return (
                ec.ILLEGAL_GENERATION
                if member.uses_classic_protocol or transactional
                else ec.STALE_MEMBER_EPOCH
            )
        return ec.NONE

    def validate_offset_fetch(self, group_id: str, member_id: str | None, epoch: int) -> int:
        """The group error of an OffsetFetch v9+ naming a member of a consumer-protocol group."""
        if member_id is None and epoch < 0:
            return ec.NONE
        member = self._consumer_groups[group_id].members.get(member_id or "")
        if member is None:
            return ec.UNKNOWN_MEMBER_ID
        if epoch != member.member_epoch:
            return ec.ILLEGAL_GENERATION if member.uses_classic_protocol else ec.STALE_MEMBER_EPOCH
        return ec.NONE

    # ------------------------------------------------------------------ helpers
    def _now(self) -> int:
        return int(self._state.now_ms())

    def _notify(self) -> None:
        self._state.notify_all()


def _as_lists(assignment: Mapping[uuid.UUID, frozenset[int]]) -> dict[uuid.UUID, list[int]]:
    return {t: sorted(ps) for t, ps in assignment.items() if ps}
