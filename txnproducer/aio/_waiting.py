"""How a coroutine waits for something the Sender thread does, without blocking its event loop.

Every wait is the same shape: create an asyncio future, have the other thread complete it with
``loop.call_soon_threadsafe`` (a completion callback, or a :class:`Listeners` registration made
*before* the condition is checked, so no change is missed), and bound it by the loop's one timer for
its waits (:mod:`._deadlines`: a timer on the loop, not a thread). Nothing polls, no thread is parked
per call, and the Sender's side of it is one ``call_soon_threadsafe``: it never runs user code or waits
for the loop.

Cancelling the awaiting task cancels only the wait (its future and deadline): what was waited for
goes on, as when a bounded wait runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from txnproducer import errors
from txnproducer._internal.batching.batch import ProducerBatch
from txnproducer._internal.listeners import Listeners
from txnproducer._internal.txn.result import TransactionalRequestResult
from txnproducer.aio._deadlines import deadlines

__all__ = ["wait_batches", "wait_result", "wait_signal", "wait_until", "waker"]

T = TypeVar("T")


def _resolve(fut: asyncio.Future[bool], value: bool) -> None:
    if not fut.done():
        fut.set_result(value)


def _wake(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[bool]) -> None:
    with contextlib.suppress(RuntimeError):  # the loop was closed: nobody waits any more
        loop.call_soon_threadsafe(_resolve, fut, True)


def waker(fut: asyncio.Future[bool]) -> Callable[[], None]:
    """A callable any thread may call (any number of times) to complete ``fut`` with True."""
    return functools.partial(_wake, fut.get_loop(), fut)


async def wait_signal(fut: asyncio.Future[bool], deadline: float) -> bool:
    """Await ``fut`` until ``deadline`` (``time.monotonic()``); False if the time ran out first."""
    if fut.done():
        return fut.result()
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return False
    watch = deadlines(fut.get_loop())  # one timer for all of the loop's waits (see _deadlines)
    watch.add(fut, remaining)
    try:
        return await fut
    finally:
        watch.discard(fut)


async def wait_until(check: Callable[[], T | None], sources: Sequence[Listeners], deadline: float,
                     on_timeout: Callable[[], BaseException]) -> T:
    """``check()`` until it returns a value (or raises), re-checked whenever one of ``sources``
    fires; raises ``on_timeout()`` at ``deadline``. ``check`` must not block."""
    loop = asyncio.get_running_loop()
    while True:
        fut: asyncio.Future[bool] = loop.create_future()
        wake = waker(fut)
        removers = [source.add(wake) for source in sources]
        try:
            value = check()
            if value is not None:
                return value
            if not await wait_signal(fut, deadline):
                value = check()  # a last look: the deadline and the change may have crossed
                if value is not None:
                    return value
                raise on_timeout()
        finally:
            for remove in removers:
                remove()


async def wait_result(result: TransactionalRequestResult, bound_s: float, bound_name: str) -> bool:
    """Await a transactional call's result for at most ``bound_s``; return or raise its outcome,
    or raise the TimeoutError a sync wait would (the call goes on in the background). Returns
    whether the task gave the loop up meanwhile (False: the result was there at once)."""
    waited = False
    if not result.done():
        waited = True
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        result.add_done_callback(waker(fut))
        if not await wait_signal(fut, time.monotonic() + bound_s) and not result.done():
            raise result.timeout_error(bound_s, bound_name)
    result.wait(0, bound_name)  # done: returns or raises at once, and marks the outcome seen
    return waited


class _Countdown:
    """Completes a future when the last of ``count`` callbacks ran (any threads)."""

    def __init__(self, count: int, wake: Callable[[], None]) -> None:
        self._count = count
        self._wake = wake
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            self._count -= 1
            last = self._count == 0
        if last:
            self._wake()


async def wait_batches(batches: list[ProducerBatch], deadline: float, bound: str) -> None:
    """Await every batch's completion (split ones: of every part) until ``deadline``; one wake-up
    for the loop however many batches there are."""
    pending = [b for b in batches if not b.is_done()]
    if not pending:
        return
    fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    countdown = _Countdown(len(pending), waker(fut))
    for batch in pending:
        batch.add_done_callback(countdown)
    if not await wait_signal(fut, deadline):
        left = next((b for b in pending if not b.is_done()), None)
        if left is not None:
            raise errors.TimeoutError(
                f"flush did not complete within {bound}; {left.tp.topic}-{left.tp.partition} still pending")
