"""ConsumerGroupHeartbeat (key 68): v1 preferred, v0 at least - the consumer group protocol's one request.

What a heartbeat carries (Java's ``ConsumerHeartbeatRequestManager.HeartbeatState``): the group id,
the member id (ours, made at startup: ``state.new_member_id``) and epoch and the instance id, always;
every other field only when joining, after an error (the coordinator may have lost what it knew:
:meth:`SentFields.reset`) or when it changed since it was last sent - the rebalance timeout
(``max_poll_interval_ms``), the subscription (topic names, or a RE2/J regular expression; switching
from one to the other clears the other with ``[]`` / ``""``), the server assignor, the rack, and the
partitions owned (by topic id: sent whenever the reconciled assignment changed - that list is the
acknowledgment of a revocation). A join lists no partitions (``[]``).

Versions: v1 (Kafka 4.0, KIP-1082) carries ``subscribed_topic_regex`` and our member id from the
first heartbeat; v0 (Kafka 3.7-3.9's preview) has no regex - a pattern subscription there is an
UnsupportedVersionError. A broker whose ApiVersions answer has no key 68 does not speak the protocol
at all: UnsupportedVersionError naming what the broker is (Kafka before 4.0, or 4.x with the protocol
turned off by ``group.coordinator.rebalance.protocols``).

Answers (Java's ``AbstractHeartbeatRequestManager.onErrorResponse`` and
``ConsumerHeartbeatRequestManager.handleSpecificError``), as a :class:`Verdict`:

- NONE: the member epoch, the heartbeat interval and - when it changed, or the request was full -
  the assignment (null: unchanged);
- NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE: forget the coordinator, heartbeat again as soon as it is
  found; COORDINATOR_LOAD_IN_PROGRESS and other retriable codes: again after the backoff;
- FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: the member is fenced (its partitions are lost; it rejoins);
- GROUP_AUTHORIZATION_FAILED, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR,
  INVALID_REGULAR_EXPRESSION, UNRELEASED_INSTANCE_ID (after the retries ``heartbeat_loop.py`` gives it),
  FENCED_INSTANCE_ID, UNSUPPORTED_VERSION, GROUP_ID_NOT_FOUND and any other code that is not retriable:
  fatal, a typed error (``failures.py``).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from txnproducer import errors
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.consumer_group_heartbeat import (
    API_KEY,
    JOIN_GROUP_MEMBER_EPOCH,
    MAX_VERSION,
    ConsumerGroupHeartbeatRequest,
)

from .failures import heartbeat_error
from .settings import ConsumerGroupSettings
from .state import LocalAssignment

__all__ = ["SentFields", "Subscription", "Verdict", "VerdictKind", "build_request", "choose_version",
           "read_response"]

_METADATA_KEY = 3
_PRODUCE_KEY = 0
_TP = ConsumerGroupHeartbeatRequest.TopicPartitions

#: topic names, or a RE2/J pattern (a str)
Subscription = frozenset[str] | str


@attrs.define
class SentFields:
    """The fields the last heartbeat carried (None: not sent since the last reset)."""

    rebalance_timeout_ms: int = -1
    topic_names: frozenset[str] | None = None
    regex: str | None = None
    assignor: str | None = None
    rack: str | None = None
    owned: LocalAssignment | None = None

    def reset(self) -> None:
        """The next heartbeat carries every field (after an error or a failed request, as Java's
        ``resetHeartbeatState``)."""
        self.rebalance_timeout_ms = -1
        self.topic_names = None
        self.regex = None
        self.assignor = None
        self.rack = None
        self.owned = None


def choose_version(max_version: Callable[[int], int | None], pattern: bool) -> int:
    """The version for this broker (v1 preferred): UnsupportedVersionError naming the broker when it
    does not speak the protocol, or speaks only v0 and the subscription is a pattern."""
    broker_max = max_version(API_KEY)
    if broker_max is None:
        produce = max_version(_PRODUCE_KEY)
        if produce is not None and produce >= 12:
            what = ("a Kafka 4.0 or newer broker with the consumer group protocol turned off (its "
                    "group.coordinator.rebalance.protocols does not list 'consumer')")
        else:
            what = "a broker older than Kafka 4.0"
        raise errors.UnsupportedVersionError(
            f"group_protocol='consumer' needs the KIP-848 consumer group protocol (ConsumerGroupHeartbeat, "
            f"Kafka 4.0 or newer), and the group coordinator is {what}: its ApiVersions answer has no "
            "ConsumerGroupHeartbeat. Use group_protocol='classic', or upgrade the brokers.",
            error_code=ec.UNSUPPORTED_VERSION)
    version = min(MAX_VERSION, broker_max)
    if pattern and version < 1:
        raise errors.UnsupportedVersionError(
            "subscribing with a regular expression (SubscriptionPattern) needs ConsumerGroupHeartbeat v1 "
            f"(Kafka 4.0 or newer); the group coordinator speaks only v{broker_max} (a Kafka 3.x preview "
            "of KIP-848): subscribe to topic names, or upgrade the brokers",
            error_code=ec.UNSUPPORTED_VERSION)
    return version


def build_request(version: int, settings: ConsumerGroupSettings, member_id: str, epoch: int,
                  subscription: Subscription, owned: LocalAssignment, sent: SentFields, joining: bool) -> Any:
    """A heartbeat with the fields due (see the module docstring); updates ``sent``. A leave is a
    heartbeat with epoch -1 or -2 (nothing else is due then: pass ``joining`` False)."""
    if joining:
        sent.reset()
    fields: dict[str, Any] = {"group_id": settings.group_id, "member_id": member_id, "member_epoch": epoch,
                              "instance_id": settings.group_instance_id}
    if epoch < 0:  # leaving: group, member, epoch and instance only
        return ConsumerGroupHeartbeatRequest[version](**fields)
    timeout = settings.rebalance_timeout_ms
    if sent.rebalance_timeout_ms != timeout:
        fields["rebalance_timeout_ms"] = sent.rebalance_timeout_ms = timeout
    if isinstance(subscription, str):
        if sent.regex != subscription:
            fields["subscribed_topic_regex"] = sent.regex = subscription
        if sent.topic_names:  # switching from names: clear them
            fields["subscribed_topic_names"] = []
            sent.topic_names = frozenset()
    else:
        if sent.topic_names != subscription:
            fields["subscribed_topic_names"] = sorted(subscription)
            sent.topic_names = subscription
        if sent.regex and version >= 1:  # switching from a pattern: clear it
            fields["subscribed_topic_regex"] = ""
            sent.regex = ""
    if settings.remote_assignor is not None and sent.assignor != settings.remote_assignor:
        fields["server_assignor"] = sent.assignor = settings.remote_assignor
    if settings.rack_id is not None and sent.rack != settings.rack_id:
        fields["rack_id"] = sent.rack = settings.rack_id
    if joining or sent.owned != owned:
        owned_now = {} if joining or epoch == JOIN_GROUP_MEMBER_EPOCH else owned.partitions
        fields["topic_partitions"] = [_TP(topic_id=topic_id, partitions=sorted(owned_now[topic_id]))
                                      for topic_id in sorted(owned_now, key=str)]
        sent.owned = owned
    return ConsumerGroupHeartbeatRequest[version](**fields)


class VerdictKind(enum.Enum):
    OK = "ok"
    FENCED = "fenced"  # FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: lose the partitions, rejoin
    COORDINATOR = "coordinator"  # the coordinator moved: find it, heartbeat again at once
    RETRY = "retry"  # again after the backoff
    FATAL = "fatal"


@attrs.frozen
class Verdict:
    kind: VerdictKind
    epoch: int = 0
    interval_ms: int = 0
    #: topic id -> partitions the member may use now; None: unchanged
    assignment: Mapping[uuid.UUID, frozenset[int]] | None = None
    code: int = ec.NONE
    message: str = ""
    error: BaseException | None = None


def read_response(settings: ConsumerGroupSettings, response: Any) -> Verdict:
    """What an answer means (see the module docstring)."""
    code = int(response.error_code)
    message = str(getattr(response, "error_message", None) or "")
    if code == ec.NONE:
        assignment = None
        if response.assignment is not None:
            assignment = {t.topic_id: frozenset(int(p) for p in t.partitions)
                          for t in response.assignment.topic_partitions or ()}
        return Verdict(VerdictKind.OK, int(response.member_epoch), int(response.heartbeat_interval_ms),
                       assignment)
    if code in (ec.FENCED_MEMBER_EPOCH, ec.UNKNOWN_MEMBER_ID):
        return Verdict(VerdictKind.FENCED, code=code, message=message)
    if code in (ec.NOT_COORDINATOR, ec.COORDINATOR_NOT_AVAILABLE):
        return Verdict(VerdictKind.COORDINATOR, code=code, message=message)
    fatal = heartbeat_error(settings, code, message)
    if fatal is None:
        return Verdict(VerdictKind.RETRY, code=code, message=message)
    return Verdict(VerdictKind.FATAL, code=code, message=message, error=fatal)
