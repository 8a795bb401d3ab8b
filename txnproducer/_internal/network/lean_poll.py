"""The Sender's wait for network events when kafka-python's event loop has nothing to do.

Why: the Sender polls about three times per transaction (wait for the records, for the Produce
answer, for EndTxn's answer), and on the PLAINTEXT path every socket it waits on is its own
(:mod:`.connection`), dispatched by the shared selector (:mod:`.selector`). kafka-python's
``poll`` still ran its whole loop each time: a lock, its timers, its task queue and five
trace-level log calls, about a tenth of the Sender's CPU per transaction for nothing. Here the
Sender waits on the selector itself and hands over to kafka-python's loop only when the loop has
work: a task ready or due, or an event on one of its sockets (bootstrap, metadata, TLS or SASL
connections). Its wake-up socket, the one event the loop gets on every transaction
(:meth:`NetworkClient.wakeup`), is drained here as the loop drains it.

What makes handing over after our own ``select`` safe: the selector is level-triggered (epoll,
poll and select alike), so an event of kafka-python's that we saw and did not consume is reported
again by the loop's own ``select``, which we then run with a zero timeout.

kafka-python's attributes used (``_ready``, ``_scheduled``, ``_selector``, ``_wakeup_r``,
``_poll_lock``) are those of ``kafka.net.selector.NetworkSelector`` in the 3.0 series the
dependency is pinned to. The wait holds the loop's own poll lock, so kafka-python's check against
two threads polling at once still covers it.

Thread rule: the Sender thread only (the one thread that polls).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["lean_poll"]


def lean_poll(loop: Any, timeout_s: float, full_poll: Callable[[float], None]) -> None:
    """Wait at most ``timeout_s`` for events on ``loop``'s selector and handle them.

    ``loop`` is kafka-python's ``NetworkSelector``; ``full_poll(timeout_ms)`` runs its loop (the
    client's ``poll``), called when it has something to do: at once (with ``timeout_s``) if a
    task is ready or due now, after the wait (with a zero timeout) if one of its sockets has an
    event or a task became ready or due meanwhile. A task due before ``timeout_s`` ends shortens
    the wait.
    """
    if loop._ready:
        full_poll(timeout_s * 1000)
        return
    scheduled = loop._scheduled
    if scheduled:
        due_in = scheduled[0][0] - time.monotonic()
        if due_in <= 0:
            full_poll(timeout_s * 1000)
            return
        if due_in < timeout_s:
            timeout_s = due_in
    lock = loop._poll_lock
    if not lock.acquire(blocking=False):
        full_poll(timeout_s * 1000)  # another thread polls: the loop raises its own error
        return
    wake = loop._wakeup_r
    theirs = False
    try:
        # the Sender's own connections get their events inside select() (QuietMissSelector)
        for key, _events in loop._selector.select(timeout_s):
            if key.fileobj is not wake:
                theirs = True
                continue
            try:
                drained = wake.recv(1024)
            except BlockingIOError:
                continue
            except OSError:
                theirs = True  # the loop rebuilds its wake-up socket
                continue
            if not drained:
                theirs = True  # closed: the loop rebuilds it
    finally:
        lock.release()
    scheduled = loop._scheduled
    if theirs or loop._ready or (scheduled and scheduled[0][0] <= time.monotonic()):
        full_poll(0.0)
