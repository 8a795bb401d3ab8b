"""The polling thread's waits, shared by both protocols' members: for the coordinator, for an answer,
for a retry backoff.

Why one place: every wait a member's public call makes must end by the caller's deadline, wake up
when the member closes or fails, and back off exponentially as the Java client does
(``retry.backoff.ms`` doubling to ``retry.backoff.max.ms``, 20 % jitter). The classic member
(``member.py``) and the consumer-protocol member (``kip848/member.py``) wait alike; only what makes
them unusable (closing, a fatal error) is theirs, passed in as ``raise_if_unusable``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from .coordinator import CoordinatorLink
from .io_thread import GroupIo
from .state import CoordinatedState

__all__ = ["MemberWaits"]


class MemberWaits:
    """Waits on ``state.cond`` for the polling thread (see the module docstring).

    ``unusable()`` (called with the state lock held) says the member closed or failed;
    ``raise_if_unusable()`` (called without it) raises what that means for the caller.
    """

    def __init__(self, state: CoordinatedState, link: CoordinatorLink, io: GroupIo, *, backoff_ms: int,
                 backoff_max_ms: int, unusable: Callable[[], bool],
                 raise_if_unusable: Callable[[], None]) -> None:
        self._state = state
        self._link = link
        self._io = io
        self._backoff_ms = backoff_ms
        self._backoff_max_ms = backoff_max_ms
        self._unusable = unusable
        self._raise_if_unusable = raise_if_unusable

    def backoff_s(self, attempts: int) -> float:
        """The retry backoff after ``attempts`` failures, with its jitter."""
        backoff = min(self._backoff_max_ms, self._backoff_ms * 2 ** min(max(attempts - 1, 0), 20)) / 1000
        jittered: float = backoff * random.uniform(0.8, 1.2)
        return jittered

    def ensure_coordinator_ready(self, deadline: float) -> bool:
        """Wait (until ``deadline``) for the coordinator to be known, looking it up with backoff."""
        state = self._state
        link = self._link
        attempts = 0
        while True:
            self._raise_if_unusable()
            with state.cond:
                if state.coordinator is not None:
                    return True
                finished = link.lookups_finished
                start = not link.lookup_in_flight
            if start:
                self._io.call_soon(link.lookup)

            def found_or_failed(before: int = finished) -> bool:
                return state.coordinator is not None or link.lookups_finished != before

            self.wait_for(found_or_failed, deadline)
            with state.cond:
                if state.coordinator is not None:
                    return True
            if time.monotonic() >= deadline:
                return False
            attempts += 1
            if not self.backoff(attempts, deadline):
                return False

    def wait_for(self, done: Callable[[], bool], deadline: float) -> bool:
        """Wait on the state condition until ``done()`` or ``deadline``; raises if the member
        closes or fails meanwhile."""
        state = self._state
        with state.cond:
            while not done():
                if self._unusable():
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                state.cond.wait(remaining)
            else:
                return True
        self._raise_if_unusable()
        return False

    def sleep_until(self, until: float, deadline: float) -> bool:
        """Wait until ``until`` (or ``deadline``, if it comes first), woken early only by closing or
        failing; False if the deadline comes first (a time already past is reached at once, whatever
        the deadline: a caller with no time to wait may still go on when it need not wait)."""
        reached = until <= deadline
        end = min(until, deadline)
        state = self._state
        with state.cond:
            while (remaining := end - time.monotonic()) > 0 and not self._unusable():
                state.cond.wait(remaining)
        self._raise_if_unusable()
        return reached

    def backoff(self, attempts: int, deadline: float) -> bool:
        """Wait the exponential retry backoff after ``attempts`` failures; False if the deadline
        comes first."""
        return self.sleep_until(time.monotonic() + self.backoff_s(attempts), deadline) \
            and time.monotonic() < deadline
