"""JoinGroup (key 11): enter the group's next generation, with protocol type "consumer".

Versions: v9 preferred (``versions.py``): v4+ a new dynamic member first gets MEMBER_ID_REQUIRED
and rejoins with the id it was given (KIP-394); v5+ carries ``group_instance_id`` (static
membership, KIP-345); v8+ a reason; v9 ``skip_assignment`` for a static leader that came back
unchanged (KIP-814). The protocols are one per assignor, most preferred first, each with the same
subscription (``consumer_protocol``); the rebalance timeout is ``max_poll_interval_ms``. The
broker holds the request until every member has rejoined, so it gets its own timeout
(``GroupSettings.join_timeout_s``).

Answers (Java's ``JoinGroupResponseHandler``, applied to the state here):

- NONE: the member is in the new generation (COMPLETING_REBALANCE; heartbeats start) - unless it
  stopped waiting for this answer meanwhile, or the protocol type is not ours
  (INCONSISTENT_GROUP_PROTOCOL, fatal);
- COORDINATOR_LOAD_IN_PROGRESS: retry after the backoff; COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR:
  forget the coordinator, retry after the backoff;
- UNKNOWN_MEMBER_ID: reset the member id (if the generation did not change meanwhile), rejoin now;
- MEMBER_ID_REQUIRED: take the member id of the answer, rejoin now; REBALANCE_IN_PROGRESS: rejoin now;
- FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, INVALID_SESSION_TIMEOUT, INVALID_GROUP_ID,
  GROUP_AUTHORIZATION_FAILED, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_VERSION, anything else: fatal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
from kafka.protocol.consumer.group import JoinGroupRequest

from txnproducer import errors
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.consumer_protocol import PROTOCOL_TYPE

from ..failures import Retry, RoundFailure, fatal_join_error
from ..settings import GroupSettings
from ..state import Generation, GroupState, MemberState
from ..versions import choose_version

__all__ = ["Joined", "build_request", "read_response"]

_REASON_MAX = 255  # Java's JoinGroupRequest.maybeTruncateReason


@attrs.frozen
class Joined:
    """A successful JoinGroup: the leader gets every member's (member id, instance id, metadata)."""

    leader: bool
    members: tuple[tuple[str, str | None, bytes], ...]
    skip_assignment: bool


def build_request(settings: GroupSettings, member_id: str, subscription: bytes, reason: str,
                  max_version: Callable[[int], int | None]) -> Any:
    version = choose_version(JoinGroupRequest, max_version(JoinGroupRequest.API_KEY))
    if settings.group_instance_id is not None and version < 5:
        raise errors.UnsupportedVersionError(
            f"the group coordinator speaks JoinGroup only up to v{version}; group_instance_id (static "
            "membership) needs v5 (Kafka >= 2.3): upgrade the broker or unset group_instance_id",
            error_code=ec.UNSUPPORTED_VERSION)
    protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=subscription)
                 for name in settings.assignors]
    return JoinGroupRequest(
        version=version, group_id=settings.group_id, session_timeout_ms=settings.session_timeout_ms,
        rebalance_timeout_ms=settings.max_poll_interval_ms, member_id=member_id,
        group_instance_id=settings.group_instance_id, protocol_type=PROTOCOL_TYPE, protocols=protocols,
        reason=reason[:_REASON_MAX] or None)


def read_response(state: GroupState, settings: GroupSettings, sent: Generation, response: Any,
                  forget_coordinator: Callable[[], None]) -> Joined | RoundFailure:
    """Apply a JoinGroup answer (caller holds ``state.cond``)."""
    code = int(response.error_code)
    if code == ec.NONE:
        protocol_type = getattr(response, "protocol_type", None)
        if protocol_type is not None and protocol_type != PROTOCOL_TYPE:
            return RoundFailure(Retry.NEVER, fatal_join_error(settings, ec.INCONSISTENT_GROUP_PROTOCOL,
                                                              "JoinGroup"))
        if state.state is not MemberState.PREPARING_REBALANCE:
            # the member left (poll interval, close) while this answer was on its way
            return RoundFailure(Retry.AFTER_BACKOFF, errors.IllegalStateError(
                "the member left the group while joining it"))
        state.state = MemberState.COMPLETING_REBALANCE
        state.generation = Generation(int(response.generation_id), str(response.member_id),
                                      response.protocol_name or None)
        state.changed()
        members: Sequence[Any] = response.members or ()
        return Joined(
            leader=response.leader == response.member_id,
            members=tuple((str(m.member_id), m.group_instance_id, bytes(m.metadata)) for m in members),
            skip_assignment=bool(getattr(response, "skip_assignment", False)))
    name = ec.error_name(code)
    if code == ec.COORDINATOR_LOAD_IN_PROGRESS:
        return RoundFailure(Retry.AFTER_BACKOFF, errors.BrokerError(
            f"JoinGroup: the coordinator is loading group {settings.group_id!r}", error_code=code))
    if code == ec.UNKNOWN_MEMBER_ID:
        if state.generation_unchanged(sent):
            state.reset_state_and_rejoin("encountered UNKNOWN_MEMBER_ID from JoinGroup response",
                                         reset_member_id=True)
        return RoundFailure(Retry.NOW, errors.BrokerError(f"JoinGroup: {name}", error_code=code))
    if code in (ec.COORDINATOR_NOT_AVAILABLE, ec.NOT_COORDINATOR):
        forget_coordinator()
        return RoundFailure(Retry.AFTER_BACKOFF, errors.BrokerError(
            f"JoinGroup: {name}; looking the coordinator up again", error_code=code))
    if code == ec.MEMBER_ID_REQUIRED:
        state.generation = Generation(-1, str(response.member_id), None)
        state.request_rejoin(f"need to re-join with the given member-id: {response.member_id}")
        return RoundFailure(Retry.NOW, errors.BrokerError(f"JoinGroup: {name}", error_code=code),
                            member_id_required=True)
    if code == ec.REBALANCE_IN_PROGRESS:
        return RoundFailure(Retry.NOW, errors.BrokerError(f"JoinGroup: {name}", error_code=code))
    return RoundFailure(Retry.NEVER, fatal_join_error(settings, code, "JoinGroup"))
