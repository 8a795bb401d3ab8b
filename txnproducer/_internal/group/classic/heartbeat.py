"""Heartbeat (key 12): the member's liveness, and the timers that pace it.

Versions: v4 preferred (``versions.py``); v3+ carries the group instance id.

:class:`HeartbeatTimer` is the Java client's ``Heartbeat``: a heartbeat every
``heartbeat_interval_ms``; the *session* runs out when no answer came for ``session_timeout_ms``
(then the coordinator is presumed gone and looked up again); the *poll interval* runs out when the
polling thread did not call ``poll`` for ``max_poll_interval_ms`` (then the member leaves the group,
as Java's does, and its partitions are lost); a failed heartbeat is retried after an exponential
backoff.

Answers (Java's ``HeartbeatResponseHandler``): NONE; COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR
forget the coordinator; REBALANCE_IN_PROGRESS asks a stable member to rejoin (and counts as an
answer, so the session stays alive while the group waits for us); ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID reset the generation - unless it changed since the request
was sent - and the member must rejoin (its partitions are lost); FENCED_INSTANCE_ID is also fatal: a
newer instance with the same ``group_instance_id`` took over. Every other code - GROUP_AUTHORIZATION_FAILED,
UNKNOWN_SERVER_ERROR (which the 4.x group coordinator answers for failures of its own), a code this
module does not know - is a failed heartbeat, logged and retried after the backoff, as Java's
``HeartbeatThread`` does with whatever its handler raises except FENCED_INSTANCE_ID: the answer says
nothing about the member's place in the group. If the failure lasts, the session runs out
(``session_timeout_ms``) and the coordinator is looked up again; a lasting authorization failure then
stops the member where Java's stops it, at FindCoordinator, JoinGroup or SyncGroup (fatal there), and
an exactly-once pipeline's offsets cannot be committed meanwhile (KIP-447 fencing).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from typing import Any

from kafka.protocol.consumer.group import HeartbeatRequest

from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol import error_codes as ec

from ..failures import fenced_instance_error
from ..settings import GroupSettings
from ..state import Generation, GroupState, MemberState
from ..versions import choose_version

__all__ = ["HeartbeatTimer", "HeartbeatVerdict", "build_request", "read_response"]

_log = get_logger("txnproducer.group")


class HeartbeatTimer:
    """Java's ``Heartbeat`` (times are ``time.monotonic()`` seconds; callers hold the state lock)."""

    def __init__(self, settings: GroupSettings, now: float) -> None:
        self._interval = settings.heartbeat_interval_ms / 1000
        self._session = settings.session_timeout_ms / 1000
        self._max_poll = settings.max_poll_interval_ms / 1000
        self._backoff = settings.retry_backoff_ms / 1000
        self._backoff_max = settings.retry_backoff_max_ms / 1000
        self._failures = 0
        self.in_flight = False
        self._next_heartbeat = now
        self._session_deadline = now + self._session
        self._poll_deadline = now + self._max_poll
        self.last_poll = now

    def reset_timeouts(self, now: float) -> None:
        """When heartbeats start (a JoinGroup answer): a full session and poll interval ahead."""
        self._session_deadline = now + self._session
        self._poll_deadline = now + self._max_poll
        self._next_heartbeat = now + self._interval
        self._failures = 0

    def reset_session_timeout(self, now: float) -> None:
        self._session_deadline = now + self._session

    def poll(self, now: float) -> None:
        self.last_poll = now
        self._poll_deadline = now + self._max_poll

    def sent(self, now: float) -> None:
        self.in_flight = True
        self._next_heartbeat = now + self._interval

    def received(self, now: float) -> None:
        self.in_flight = False
        self._failures = 0
        self._session_deadline = now + self._session

    def failed(self, now: float) -> None:
        self.in_flight = False
        backoff = min(self._backoff_max, self._backoff * 2 ** min(self._failures, 20))
        self._failures += 1
        self._next_heartbeat = now + backoff * random.uniform(0.8, 1.2)

    def session_expired(self, now: float) -> bool:
        return now >= self._session_deadline

    def poll_expired(self, now: float) -> bool:
        return now >= self._poll_deadline

    def should_heartbeat(self, now: float) -> bool:
        return now >= self._next_heartbeat

    def time_to_next(self, now: float) -> float:
        return max(0.0, min(self._next_heartbeat, self._session_deadline, self._poll_deadline) - now)


class HeartbeatVerdict(enum.Enum):
    OK = "ok"  # an answer: the session goes on
    FAILED = "failed"  # retry after the backoff


def build_request(settings: GroupSettings, generation: Generation,
                  max_version: Callable[[int], int | None]) -> Any:
    version = choose_version(HeartbeatRequest, max_version(HeartbeatRequest.API_KEY))
    return HeartbeatRequest(version=version, group_id=settings.group_id,
                            generation_id=generation.generation_id, member_id=generation.member_id,
                            group_instance_id=settings.group_instance_id)


def read_response(state: GroupState, settings: GroupSettings, sent: Generation, response: Any,
                  forget_coordinator: Callable[[], None]) -> HeartbeatVerdict:
    """Apply a Heartbeat answer to the state (caller holds ``state.cond``)."""
    code = int(response.error_code)
    if code == ec.NONE:
        return HeartbeatVerdict.OK
    if code in (ec.COORDINATOR_NOT_AVAILABLE, ec.NOT_COORDINATOR):
        forget_coordinator()
        return HeartbeatVerdict.FAILED
    if code == ec.REBALANCE_IN_PROGRESS:
        if state.state is MemberState.STABLE:
            state.request_rejoin("group is already rebalancing")
        return HeartbeatVerdict.OK
    if code in (ec.ILLEGAL_GENERATION, ec.UNKNOWN_MEMBER_ID, ec.FENCED_INSTANCE_ID):
        if state.generation_unchanged(sent):
            state.reset_state_and_rejoin(f"encountered {ec.error_name(code)} from Heartbeat response",
                                         reset_member_id=code != ec.ILLEGAL_GENERATION)
            if code == ec.FENCED_INSTANCE_ID:
                state.fail(fenced_instance_error(settings, "Heartbeat"))
        return HeartbeatVerdict.FAILED
    _log.warning("group.heartbeat_error", group_id=settings.group_id, error=ec.error_name(code),
                 hint="retried after retry_backoff_ms; if it lasts, the session runs out and the member "
                      "looks for its coordinator again")
    return HeartbeatVerdict.FAILED
