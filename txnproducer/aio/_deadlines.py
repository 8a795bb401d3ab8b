"""One timer per event loop for all of its bounded waits.

Why: every awaited call is bounded (``max_block_ms``, ``transaction_timeout_ms``, the caller's
timeout), and a small transaction's commit is one such wait. A timer per wait (``loop.call_later``,
then ``cancel`` when the wait ends early, as nearly every one does) made a ``TimerHandle``, pushed it
on the loop's heap and left a cancelled handle there for the loop to sweep: about a sixth of the event
loop's Python work in a one-record transaction (bytecodes counted; docs/performance.md, "Fourth
pass"). The bounds are long (seconds) and each wait's deadline is nearly always later than the one
before it, so a loop keeps one timer, armed for the earliest deadline of its waits: a wait records its
deadline and removes it when it ends, and the timer moves only for a wait due earlier than it. When
the timer fires it ends every wait that is due (its future gets ``False``) and arms itself for the
next one.

Deadlines are ``time.monotonic()`` values, as everywhere in the producer; the timer is set with
``call_later`` (a delay), so a loop with its own clock is served as well. All of it runs on the loop's
own thread (waits are coroutines of that loop; the timer is its callback): no lock.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref

__all__ = ["Deadlines", "deadlines"]


class Deadlines:
    """The bounded waits of one event loop and the timer that ends them."""

    __slots__ = ("__weakref__", "_armed_for", "_loop", "_timer", "_waits")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # weakly: the loop keys this watch in a weak dictionary, whose values must not keep it alive
        self._loop = weakref.ref(loop)
        self._waits: dict[asyncio.Future[bool], float] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for = math.inf

    def add(self, fut: asyncio.Future[bool], deadline: float) -> None:
        """Complete ``fut`` with False at ``deadline`` unless it is done or discarded before."""
        self._waits[fut] = deadline
        if deadline < self._armed_for:
            self._arm(deadline)

    def discard(self, fut: asyncio.Future[bool]) -> None:
        """The wait ended: forget its deadline (the timer stays where it is: it re-arms when it fires)."""
        self._waits.pop(fut, None)

    def pending(self) -> int:
        """How many waits are watched (for tests and introspection)."""
        return len(self._waits)

    def _arm(self, deadline: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        loop = self._loop()
        if loop is None:  # (cannot happen while a wait of the loop runs on it)
            return
        self._armed_for = deadline
        self._timer = loop.call_later(max(0.0, deadline - time.monotonic()), self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._armed_for = math.inf
        now = time.monotonic()
        following = math.inf
        for fut, deadline in list(self._waits.items()):
            if deadline <= now:
                del self._waits[fut]
                if not fut.done():
                    fut.set_result(False)
            elif deadline < following:
                following = deadline
        if following != math.inf:  # (a loop's timer may fire a clock tick early: then it is this one)
            self._arm(following)


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Deadlines] = weakref.WeakKeyDictionary()
# the last loop asked about and its watch: the common case (one loop) without the weak dictionary's lookup
_last: tuple[weakref.ref[asyncio.AbstractEventLoop], Deadlines] | None = None


def deadlines(loop: asyncio.AbstractEventLoop) -> Deadlines:
    """The watch of ``loop``'s bounded waits (made on first use, gone with the loop)."""
    global _last
    last = _last  # one read: another thread's loop may replace it meanwhile
    if last is not None and last[0]() is loop:
        return last[1]
    watch = _BY_LOOP.get(loop)
    if watch is None:
        watch = _BY_LOOP[loop] = Deadlines(loop)
    _last = (weakref.ref(loop), watch)
    return watch
