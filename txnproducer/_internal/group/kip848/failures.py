"""The typed errors a ConsumerGroupHeartbeat answer ends in, with messages that say what happened and
what to do.

Which codes are fatal is the Java client's choice (``AbstractHeartbeatRequestManager``): every code a
member cannot fix by retrying or rejoining stops it, and its ``poll()`` raises the error (after the
lost hook ran for what it owned). The coordinator's own message (``error_message``: Kafka's words, such
as "The consumer group has reached its maximum capacity of 3 members.") is quoted in ours.

UNRELEASED_INSTANCE_ID is fatal here too, but ``heartbeat_loop.py`` retries it for ``max_poll_interval_ms``
first (a crashed static instance's place is kept until the broker's session timeout). One choice differs
from Java's on purpose: a code the protocol does not name but Kafka marks retriable
(REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS, ...) is retried after the backoff instead of being fatal - the
classic member does the same for its heartbeats, and a pipeline should not stop for a transient broker
condition it would ride out under the other protocol.
"""

from __future__ import annotations

from txnproducer import errors
from txnproducer._internal.protocol import error_codes as ec

from ..failures import fenced_instance_error, group_authorization_error
from .settings import ConsumerGroupSettings

__all__ = ["heartbeat_error"]


def _said(message: str) -> str:
    return f" (the coordinator said: {message})" if message else ""


def heartbeat_error(settings: ConsumerGroupSettings, code: int,
                    message: str) -> errors.TxnProducerError | None:
    """The fatal error an answer's ``code`` means, or None when it is retried after the backoff."""
    group = settings.group_id
    said = _said(message)
    if code == ec.GROUP_AUTHORIZATION_FAILED:
        return group_authorization_error(group, "ConsumerGroupHeartbeat")
    if code == ec.FENCED_INSTANCE_ID:
        return fenced_instance_error(settings, "ConsumerGroupHeartbeat")
    if code == ec.UNRELEASED_INSTANCE_ID:
        return errors.UnreleasedInstanceIdError(
            f"group {group!r} still has a member with group_instance_id {settings.group_instance_id!r} "
            f"that has not left (UNRELEASED_INSTANCE_ID){said}: another instance runs with the same id, or "
            "the previous one is still closing. Close this consumer; give every instance its own "
            "group_instance_id, or start it again once the other one is gone.", error_code=code)
    if code == ec.GROUP_MAX_SIZE_REACHED:
        return errors.GroupMaxSizeReachedError(
            f"consumer group {group!r} is full (GROUP_MAX_SIZE_REACHED){said}: the broker's "
            "group.consumer.max.size caps its members. Close this consumer; run fewer members or raise "
            "the limit.", error_code=code)
    if code == ec.UNSUPPORTED_ASSIGNOR:
        return errors.UnsupportedAssignorError(
            f"the group coordinator has no server-side assignor {settings.remote_assignor!r} "
            f"(UNSUPPORTED_ASSIGNOR){said}: set group_remote_assignor to one the broker's "
            "group.consumer.assignors lists ('uniform' and 'range' by default), or leave it unset.",
            error_code=code)
    if code == ec.INVALID_REGULAR_EXPRESSION:
        return errors.InvalidRegularExpressionError(
            f"the group coordinator refused the subscription's regular expression "
            f"(INVALID_REGULAR_EXPRESSION){said}: consumer-protocol patterns are RE2/J (no lookaround, no "
            "backreferences); subscribe with one it accepts.", error_code=code)
    if code == ec.INVALID_REQUEST:
        return errors.FatalError(
            f"the group coordinator of {group!r} refused a ConsumerGroupHeartbeat as invalid "
            f"(INVALID_REQUEST){said}. This is a bug of this client or an incompatible broker: please "
            "report it with the broker version; close this consumer.", error_code=code)
    if code == ec.GROUP_ID_NOT_FOUND:
        return errors.FatalError(
            f"the group coordinator does not have consumer group {group!r} (GROUP_ID_NOT_FOUND){said}: "
            "the group was deleted, or it is a classic group the broker may not convert "
            "(group.consumer.migration.policy). Close this consumer; use group_protocol='classic' for a "
            "classic group, or another group id.", error_code=code)
    if code == ec.UNSUPPORTED_VERSION:
        return errors.UnsupportedVersionError(
            f"the group coordinator refused this ConsumerGroupHeartbeat version (UNSUPPORTED_VERSION){said}: "
            "group_protocol='consumer' needs Kafka 4.0 or newer.", error_code=code)
    if ec.is_retriable(code):
        return None
    return errors.FatalError(
        f"unexpected error in the ConsumerGroupHeartbeat answer for consumer group {group!r}: "
        f"{ec.error_name(code)} ({ec.describe(code).description}){said}", error_code=code)
