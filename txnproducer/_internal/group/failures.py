"""The typed errors a group member raises, with messages that say what happened and what to do.

Why one module: several answers (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetFetch) end
in the same few errors; written once, the message is the same whichever request met it.
"""

from __future__ import annotations

import enum
from typing import Protocol

import attrs

from txnproducer import errors
from txnproducer._internal.protocol import error_codes as ec

from .settings import GroupSettings

__all__ = ["MemberIdentity", "Retry", "RoundFailure", "fatal_join_error", "fenced_instance_error",
           "group_authorization_error", "unexpected_error"]


class MemberIdentity(Protocol):
    """Who a member is in its group (either protocol's settings)."""

    @property
    def group_id(self) -> str: ...

    @property
    def group_instance_id(self) -> str | None: ...


def fenced_instance_error(settings: MemberIdentity, api: str) -> errors.FencedInstanceIdError:
    return errors.FencedInstanceIdError(
        f"another member of group {settings.group_id!r} joined with group_instance_id "
        f"{settings.group_instance_id!r} and took this member's place (FENCED_INSTANCE_ID on {api}): "
        "two running instances share one group_instance_id. Close this consumer and give each "
        "instance its own id.", error_code=ec.FENCED_INSTANCE_ID)


def group_authorization_error(group_id: str, api: str) -> errors.GroupAuthorizationError:
    return errors.GroupAuthorizationError(
        f"not authorized to use consumer group {group_id!r} (GROUP_AUTHORIZATION_FAILED on {api}): "
        "grant this principal READ on the group, then create the consumer again",
        error_code=ec.GROUP_AUTHORIZATION_FAILED)


_WHAT_TO_DO = {
    ec.INCONSISTENT_GROUP_PROTOCOL: "the group's other members use another protocol type or share no "
                                    "assignor with this one: set assignors to one the group uses "
                                    "(\"range\" is common to every Kafka client)",
    ec.INVALID_SESSION_TIMEOUT: "session_timeout_ms is outside the broker's group.min.session.timeout.ms "
                                "and group.max.session.timeout.ms",
    ec.INVALID_GROUP_ID: "the group id is not valid",
    ec.GROUP_MAX_SIZE_REACHED: "the group already has the broker's group.max.size members",
    ec.UNSUPPORTED_VERSION: "the broker does not support this request version (group_instance_id "
                            "needs Kafka >= 2.3)",
}


def fatal_join_error(settings: GroupSettings, code: int, api: str) -> errors.TxnProducerError:
    """What a JoinGroup or SyncGroup error the member cannot retry becomes."""
    if code == ec.FENCED_INSTANCE_ID:
        return fenced_instance_error(settings, api)
    if code == ec.GROUP_AUTHORIZATION_FAILED:
        return group_authorization_error(settings.group_id, api)
    what = _WHAT_TO_DO.get(code)
    if what is None:
        return unexpected_error(settings.group_id, code, api)
    return errors.FatalError(f"could not join consumer group {settings.group_id!r}: {ec.error_name(code)} "
                             f"on {api}: {what}", error_code=code)


def unexpected_error(group_id: str, code: int, api: str) -> errors.FatalError:
    return errors.FatalError(
        f"unexpected error in the {api} answer for consumer group {group_id!r}: {ec.error_name(code)} "
        f"({ec.describe(code).description})", error_code=code)


class Retry(enum.Enum):
    """How the member goes on after a JoinGroup/SyncGroup round failed (Java's joinGroupIfNeeded)."""

    NOW = "now"  # UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED
    AFTER_BACKOFF = "after_backoff"  # retriable: the coordinator moved or is loading, a lost connection
    NEVER = "never"  # fatal for the member


@attrs.frozen
class RoundFailure:
    """A failed round: how to go on, and the error (raised when ``retry`` is NEVER)."""

    retry: Retry
    error: BaseException
    member_id_required: bool = False  # the rejoin was already requested with the new member id
