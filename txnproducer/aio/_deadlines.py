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

Deadlines are kept in the loop's own clock (``loop.time()``) and the loop decides when the timer is
due, as for any timer of its own: a loop whose clock is not ``time.monotonic()`` is served alike. All of
it runs on the loop's thread (waits are coroutines of that loop; the timer is its callback): no lock.

Ownership: the loop owns its watch - through the armed timer, and through the waits in progress, whose
coroutines hold it - and this module only finds it, by weak references to both, so a closed loop and
its watch go together (a strong reference from here would keep every loop alive through its timer).
One wait per future: each wait creates its own future (as ``_waiting``'s do).
"""

from __future__ import annotations

import asyncio
import math
import weakref

__all__ = ["Deadlines", "deadlines"]


class Deadlines:
    """The bounded waits of one event loop and the timer that ends them."""

    __slots__ = ("__weakref__", "_armed_for", "_loop", "_timer", "_waits")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)
        self._waits: dict[asyncio.Future[bool], float] = {}  # future -> its deadline in loop time
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for = math.inf

    def add(self, fut: asyncio.Future[bool], remaining_s: float) -> None:
        """Complete ``fut`` with False in ``remaining_s`` unless it is done or discarded before."""
        loop = self._loop()
        if loop is None:  # (cannot happen: a wait on the loop runs on it)
            return
        when = loop.time() + remaining_s
        self._waits[fut] = when
        if when < self._armed_for:
            self._arm(loop, when)

    def discard(self, fut: asyncio.Future[bool]) -> None:
        """The wait ended: forget its deadline (the timer stays where it is: it re-arms when it fires)."""
        self._waits.pop(fut, None)

    def pending(self) -> int:
        """How many waits are watched (for tests and introspection)."""
        return len(self._waits)

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._armed_for = when
        self._timer = loop.call_at(when, self._fire)

    def _fire(self) -> None:
        fired_for = self._armed_for  # the loop found this time come: waits due by then end now
        self._timer = None
        self._armed_for = math.inf
        loop = self._loop()
        if loop is None:
            return
        now = loop.time()
        following = math.inf
        for fut, when in list(self._waits.items()):
            if when <= fired_for or when <= now:
                del self._waits[fut]
                if not fut.done():
                    fut.set_result(False)
            elif when < following:
                following = when
        if following != math.inf:
            self._arm(loop, following)


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, weakref.ref[Deadlines]] = \
    weakref.WeakKeyDictionary()
# the last loop asked about and its watch, both weakly: the common case (one loop) without the weak
# dictionary's lookup
_last: tuple[weakref.ref[asyncio.AbstractEventLoop], weakref.ref[Deadlines]] | None = None


def deadlines(loop: asyncio.AbstractEventLoop) -> Deadlines:
    """The watch of ``loop``'s bounded waits (made when it has none; the caller keeps it for its wait)."""
    global _last
    last = _last  # one read: another thread's loop may replace it meanwhile
    if last is not None and last[0]() is loop:
        watch = last[1]()
        if watch is not None:
            return watch
    found = _BY_LOOP.get(loop)
    watch = found() if found is not None else None
    if watch is None:
        watch = Deadlines(loop)
        _BY_LOOP[loop] = weakref.ref(watch)
    _last = (weakref.ref(loop), weakref.ref(watch))
    return watch
