"""The event loop's one timer for its bounded waits (txnproducer/aio/_deadlines.py), through wait_signal:
every wait still ends at its own deadline, while waits that end early cost the loop no timer each."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from typing import Any

from tests._support.aio import suspended
from txnproducer.aio._deadlines import deadlines
from txnproducer.aio._waiting import wait_signal


class _CountingLoop(asyncio.SelectorEventLoop):
    """The real selector loop, counting the timers it is asked for (call_later goes through call_at)."""

    def __init__(self) -> None:
        super().__init__()
        self.timers = 0

    def call_at(self, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        self.timers += 1
        return super().call_at(*args, **kwargs)


def _run(coro: Any, loop: asyncio.AbstractEventLoop | None = None) -> Any:
    loop = loop or asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


async def _long_wait() -> tuple[asyncio.Future[bool], asyncio.Future[bool]]:
    """A wait of 30 s in a task of its own, begun (its deadline watched): its future and the task."""
    fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(wait_signal(fut, time.monotonic() + 30))
    await suspended()  # its first step: the wait is watched
    return fut, task


def test_waits_that_end_early_share_one_timer() -> None:
    loop = _CountingLoop()

    async def main() -> list[bool]:
        results = []
        for _ in range(100):  # a commit per transaction: each wait ends long before its bound
            fut = loop.create_future()
            loop.call_soon(fut.set_result, True)
            results.append(await wait_signal(fut, time.monotonic() + 30))
        assert deadlines(loop).pending() == 0
        return results

    assert _run(main(), loop) == [True] * 100
    assert loop.timers == 1


def test_an_earlier_wait_moves_the_timer_and_ends_alone() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        late_fut, late = await _long_wait()  # it armed the timer first
        early_deadline = time.monotonic() + 0.05
        assert await wait_signal(loop.create_future(), early_deadline) is False
        assert time.monotonic() >= early_deadline
        assert not late.done()  # its deadline is not this one's
        late_fut.set_result(True)
        assert await late is True
        assert deadlines(loop).pending() == 0

    _run(main())


def test_each_wait_ends_no_sooner_than_its_own_deadline() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()

        async def bounded(seconds: float) -> float:
            deadline = time.monotonic() + seconds
            assert await wait_signal(loop.create_future(), deadline) is False
            return time.monotonic() - deadline

        late_by = await asyncio.gather(bounded(0.1), bounded(0.02), bounded(0.05))
        assert all(lateness >= 0 for lateness in late_by)
        assert deadlines(loop).pending() == 0

    _run(main())


def test_a_wait_completed_before_a_due_one_keeps_its_result() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        fut, waiting = await _long_wait()
        due = asyncio.ensure_future(wait_signal(loop.create_future(), time.monotonic() + 0.02))
        fut.set_result(True)
        assert await waiting is True
        assert await due is False
        assert deadlines(loop).pending() == 0

    _run(main())


def test_a_cancelled_wait_leaves_no_deadline() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        fut, task = await _long_wait()
        assert deadlines(loop).pending() == 1
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled() and fut.cancelled()
        assert deadlines(loop).pending() == 0

    _run(main())


def test_a_closed_loop_goes_with_its_watch() -> None:
    """Waits that ended early leave the timer armed (that is the point): it must not keep the loop."""
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []
    watches: list[weakref.ref[Any]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loops.append(weakref.ref(loop))
        watch = deadlines(loop)
        watches.append(weakref.ref(watch))
        assert deadlines(loop) is watch  # one per loop while it is in use
        ended = loop.create_future()
        loop.call_soon(ended.set_result, True)
        assert await wait_signal(ended, time.monotonic() + 30) is True  # the timer stays armed for 30 s
        assert await wait_signal(loop.create_future(), time.monotonic() + 0.01) is False

    for _ in range(3):
        _run(main())
    gc.collect()
    assert [r() for r in loops] == [None, None, None]
    assert [w() for w in watches] == [None, None, None]
