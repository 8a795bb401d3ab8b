"""The heartbeat thread's turn: Java's ``AbstractCoordinator.HeartbeatThread.run``, one step per
turn of the member's IO loop.

While the member is in a generation (COMPLETING_REBALANCE or STABLE) and no JoinGroup or SyncGroup
of ours is held by the broker (a parked request counts as alive there, and a heartbeat would only
queue behind it on the connection): find the coordinator if it is unknown; presume it gone when no
heartbeat was answered for ``session_timeout_ms``; leave the group when the polling thread has not
called ``poll`` for ``max_poll_interval_ms`` (a static member only forgets its generation: the
coordinator keeps its place); otherwise heartbeat every ``heartbeat_interval_ms``. Outside a
generation nothing is sent: the polling thread's next ``poll`` rejoins.
"""

from __future__ import annotations

import time
from typing import Any

from txnproducer._internal.log import get_logger

from ..coordinator import CoordinatorLink
from ..io_thread import GroupIo
from ..settings import GroupSettings
from ..state import Generation, GroupState
from . import heartbeat, leave_group
from .heartbeat import HeartbeatTimer, HeartbeatVerdict
from .rebalance import Rebalancer

__all__ = ["HeartbeatLoop"]

_IDLE_S = 1.0


class HeartbeatLoop:
    """See the module docstring; :meth:`tick` runs on the IO thread."""

    def __init__(self, io: GroupIo, link: CoordinatorLink, rebalancer: Rebalancer, state: GroupState,
                 settings: GroupSettings, timer: HeartbeatTimer) -> None:
        self._io = io
        self._link = link
        self._rebalancer = rebalancer
        self._state = state
        self._settings = settings
        self._timer = timer
        self._lookup_not_before = 0.0
        self._log = get_logger("txnproducer.group").bind(group_id=settings.group_id)

    def tick(self, now: float) -> float:
        """One step; returns the seconds until the next step is due."""
        state = self._state
        timer = self._timer
        action = None
        wait = _IDLE_S
        with state.cond:
            auth_error = self._io.network.auth_error
            if auth_error is not None and state.fatal is None:
                state.fail(auth_error)
            if state.closed or state.fatal is not None or state.state.has_not_joined \
                    or self._rebalancer.request_in_flight:
                return _IDLE_S
            backoff = self._settings.retry_backoff_ms / 1000
            if state.coordinator is None:
                if not self._link.lookup_in_flight and now >= self._lookup_not_before:
                    self._lookup_not_before = now + backoff
                    action = "lookup"
                wait = backoff
            elif timer.session_expired(now):
                action = "session_expired"
                wait = 0.0
            elif timer.poll_expired(now):
                action = "poll_expired"
                wait = 0.0
            elif not timer.should_heartbeat(now):
                wait = timer.time_to_next(now)
            else:
                timer.sent(now)
                sent = state.generation
                action = "heartbeat"
                wait = timer.time_to_next(now)
        if action == "lookup":
            self._link.lookup()
        elif action == "session_expired":
            self._link.forget("session timed out without receiving a heartbeat response")
        elif action == "poll_expired":
            self._log.warning(
                "group.poll_interval_exceeded", max_poll_interval_ms=self._settings.max_poll_interval_ms,
                hint="the time between two poll() calls was longer than max_poll_interval_ms: the member "
                     "leaves the group; raise max_poll_interval_ms or poll fewer records at a time")
            leave_group.maybe_leave_group(self._link, self._state, self._settings,
                                          "consumer poll timeout has expired.")
        elif action == "heartbeat":
            self._send(sent)
        return min(wait, self._rebalancer.check_metadata(now))

    def _send(self, sent: Generation) -> None:
        settings = self._settings

        def answered(response: Any) -> None:
            with self._state.cond:
                verdict = heartbeat.read_response(self._state, settings, sent, response, self._forget)
                if verdict is HeartbeatVerdict.OK:
                    self._timer.received(time.monotonic())
                else:
                    self._timer.failed(time.monotonic())

        def failed(exc: BaseException) -> None:
            with self._state.cond:
                self._timer.failed(time.monotonic())
            self._log.debug("group.heartbeat_failed", error=repr(exc))

        self._link.send(lambda v: heartbeat.build_request(settings, sent, v), answered, failed)

    def _forget(self) -> None:
        self._link.forget("it answered NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE to a heartbeat")
