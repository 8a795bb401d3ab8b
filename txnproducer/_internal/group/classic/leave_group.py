"""LeaveGroup (key 13): a dynamic member's goodbye, so the group rebalances without waiting for its
session to run out.

Versions: v5 preferred (``versions.py``); v0-2 name the one member in ``member_id``, v3+ (KIP-345)
carry a batch of members (here: this one, with its reason, v5+). Sent only by a dynamic member that
is in a generation and knows its coordinator (Java's ``maybeLeaveGroup``): a static member never
leaves on close - the coordinator keeps its place for ``session_timeout_ms``, so a restart with the
same ``group_instance_id`` takes it back without a rebalance - unless its owner asks for it
explicitly (Java's ``CloseOptions.GroupMembershipOperation.LEAVE_GROUP``, KIP-1092). Best effort, as
in Java: the answer is logged, never retried, and the member forgets its generation whatever it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.consumer.group import LeaveGroupRequest

from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol import error_codes as ec

from ..coordinator import CoordinatorLink
from ..settings import GroupSettings
from ..state import Generation, GroupState, MemberState
from ..versions import choose_version

__all__ = ["build_request", "maybe_leave_group", "response_errors"]

_log = get_logger("txnproducer.group")


def build_request(settings: GroupSettings, generation: Generation, reason: str,
                  max_version: Callable[[int], int | None]) -> Any:
    version = choose_version(LeaveGroupRequest, max_version(LeaveGroupRequest.API_KEY))
    if version < 3:
        return LeaveGroupRequest(version=version, group_id=settings.group_id, member_id=generation.member_id)
    member = LeaveGroupRequest.MemberIdentity(member_id=generation.member_id,
                                              group_instance_id=settings.group_instance_id,
                                              reason=reason[:255])
    return LeaveGroupRequest(version=version, group_id=settings.group_id, members=[member])


def response_errors(response: Any) -> list[str]:
    """The error names of an answer (top-level and per member), for the log line."""
    codes = [int(response.error_code)]
    codes.extend(int(m.error_code) for m in getattr(response, "members", None) or ())
    return [ec.error_name(code) for code in codes if code != ec.NONE]


def maybe_leave_group(link: CoordinatorLink, state: GroupState, settings: GroupSettings, reason: str, *,
                      static_too: bool = False, done: Callable[[], None] | None = None) -> None:
    """Java's ``maybeLeaveGroup`` (IO thread): a LeaveGroup if this member is dynamic (or
    ``static_too``), in a generation and knows its coordinator; then, whatever the answer, it forgets
    its generation and must rejoin. ``done()`` is called when the answer came, the request failed, or
    nothing was sent."""
    with state.cond:
        generation = state.generation
        send = ((settings.group_instance_id is None or static_too) and state.coordinator is not None
                and state.state is not MemberState.UNJOINED and generation.has_member_id)
        state.reset_state_and_rejoin("consumer pro-actively leaving the group", reset_member_id=True)
    if not send:
        if done is not None:
            done()
        return
    log = _log.bind(group_id=settings.group_id)
    log.info("group.leaving", member_id=generation.member_id, reason=reason)

    def answered(response: Any) -> None:
        problems = response_errors(response)
        if problems:
            log.warning("group.leave_failed", member_id=generation.member_id, errors=problems)
        if done is not None:
            done()

    def failed(exc: BaseException) -> None:
        log.warning("group.leave_failed", member_id=generation.member_id, error=repr(exc))
        if done is not None:
            done()

    link.send(lambda max_version: build_request(settings, generation, reason, max_version), answered, failed)
