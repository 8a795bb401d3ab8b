"""SyncGroup (key 14): the generation's assignment - sent by the leader, received by everyone.

Versions: v5 preferred (``versions.py``): v3+ group instance id; v5+ protocol type and name, checked
by the broker and echoed back. The leader's request carries every member's assignment
(``consumer_protocol``); a follower's carries none and waits for the leader's.

Answers (Java's ``SyncGroupResponseHandler``, applied to the state here):

- NONE: the member is STABLE with its assignment - unless the generation was reset meanwhile (the
  heartbeat thread saw the member dropped: rejoin now) or the protocol type or name is not the one
  joined (INCONSISTENT_GROUP_PROTOCOL, fatal);
- REBALANCE_IN_PROGRESS: rejoin now; UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION: reset the generation
  (the member id too for UNKNOWN_MEMBER_ID) unless it changed meanwhile, rejoin now;
- COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: forget the coordinator, retry after the backoff;
- GROUP_AUTHORIZATION_FAILED, FENCED_INSTANCE_ID, anything else: fatal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafka.protocol.consumer.group import SyncGroupRequest

from txnproducer import errors
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.consumer_protocol import PROTOCOL_TYPE

from ..failures import Retry, RoundFailure, fatal_join_error
from ..settings import GroupSettings
from ..state import Generation, GroupState, MemberState
from ..versions import choose_version

__all__ = ["build_request", "read_response"]


def build_request(settings: GroupSettings, generation: Generation, assignments: Mapping[str, bytes],
                  max_version: Callable[[int], int | None]) -> Any:
    version = choose_version(SyncGroupRequest, max_version(SyncGroupRequest.API_KEY))
    return SyncGroupRequest(
        version=version, group_id=settings.group_id, generation_id=generation.generation_id,
        member_id=generation.member_id, group_instance_id=settings.group_instance_id,
        protocol_type=PROTOCOL_TYPE, protocol_name=generation.protocol_name,
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=data)
                     for member, data in assignments.items()])


def read_response(state: GroupState, settings: GroupSettings, sent: Generation, response: Any,
                  forget_coordinator: Callable[[], None]) -> bytes | RoundFailure:
    """Apply a SyncGroup answer (caller holds ``state.cond``): the assignment bytes, or a failure."""
    code = int(response.error_code)
    name = ec.error_name(code)
    if code == ec.NONE:
        protocol_type = getattr(response, "protocol_type", None)
        if protocol_type is not None and protocol_type != PROTOCOL_TYPE:
            return RoundFailure(Retry.NEVER, fatal_join_error(settings, ec.INCONSISTENT_GROUP_PROTOCOL,
                                                              "SyncGroup"))
        generation = state.generation
        if generation.is_reset or state.state is not MemberState.COMPLETING_REBALANCE:
            return RoundFailure(Retry.NOW, errors.BrokerError(
                "SyncGroup answered after the generation was reset: rejoining",
                error_code=ec.ILLEGAL_GENERATION))
        protocol_name = getattr(response, "protocol_name", None)
        if protocol_name is not None and protocol_name != generation.protocol_name:
            return RoundFailure(Retry.NEVER, fatal_join_error(settings, ec.INCONSISTENT_GROUP_PROTOCOL,
                                                              "SyncGroup"))
        state.state = MemberState.STABLE
        state.rejoin_reason = ""
        state.rejoin_needed = False
        state.changed()
        return bytes(response.assignment)
    if code == ec.REBALANCE_IN_PROGRESS:
        return RoundFailure(Retry.NOW, errors.BrokerError(f"SyncGroup: {name}", error_code=code))
    if code in (ec.UNKNOWN_MEMBER_ID, ec.ILLEGAL_GENERATION):
        if state.generation_unchanged(sent):
            state.reset_state_and_rejoin(f"encountered {name} from SyncGroup response",
                                         reset_member_id=code != ec.ILLEGAL_GENERATION)
        return RoundFailure(Retry.NOW, errors.BrokerError(f"SyncGroup: {name}", error_code=code))
    if code in (ec.COORDINATOR_NOT_AVAILABLE, ec.NOT_COORDINATOR):
        forget_coordinator()
        return RoundFailure(Retry.AFTER_BACKOFF, errors.BrokerError(
            f"SyncGroup: {name}; looking the coordinator up again", error_code=code))
    return RoundFailure(Retry.NEVER, fatal_join_error(settings, code, "SyncGroup"))
