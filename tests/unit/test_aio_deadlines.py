"""The event loop's one timer for its bounded waits (txnproducer/aio/_deadlines.py), through wait_signal:
every wait still ends at its own deadline, while waits that end early cost the loop no timer each."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from typing import Any

from txnproducer.aio._deadlines import deadlines
from txnproducer.aio._waiting import wait_signal


class _CountingLoop(asyncio.SelectorEventLoop):
    """The real selector loop, counting the timers it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.timers = 0

    def call_later(self, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        self.timers += 1
        return super().call_later(*args, **kwargs)


def _run(coro: Any, loop: asyncio.AbstractEventLoop | None = None) -> Any:
    loop = loop or asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


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


def test_each_wait_ends_at_its_own_deadline_the_earlier_first() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        late_deadline = time.monotonic() + 0.3
        early_deadline = time.monotonic() + 0.05
        late = asyncio.ensure_future(wait_signal(loop.create_future(), late_deadline))
        await asyncio.sleep(0)  # the late wait armed the timer first
        early = asyncio.ensure_future(wait_signal(loop.create_future(), early_deadline))
        done, _ = await asyncio.wait([late, early], return_when=asyncio.FIRST_COMPLETED)
        assert done == {early} and early.result() is False
        assert time.monotonic() >= early_deadline
        assert not late.done()
        assert await late is False
        assert time.monotonic() >= late_deadline
        assert deadlines(loop).pending() == 0

    _run(main())


def test_a_wait_completed_before_a_due_one_keeps_its_result() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        waiting = asyncio.ensure_future(wait_signal(fut, time.monotonic() + 30))
        due = asyncio.ensure_future(wait_signal(loop.create_future(), time.monotonic() + 0.02))
        await asyncio.sleep(0)
        fut.set_result(True)
        assert await waiting is True
        assert await due is False
        assert deadlines(loop).pending() == 0

    _run(main())


def test_a_cancelled_wait_leaves_no_deadline() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        task = asyncio.ensure_future(wait_signal(fut, time.monotonic() + 30))
        await asyncio.sleep(0)
        assert deadlines(loop).pending() == 1
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled() and fut.cancelled()
        assert deadlines(loop).pending() == 0

    _run(main())


def test_each_loop_has_its_own_watch_and_it_goes_with_the_loop() -> None:
    watches = []

    async def main() -> None:
        watch = deadlines(asyncio.get_running_loop())
        watches.append(weakref.ref(watch))
        fut = asyncio.get_running_loop().create_future()
        assert await wait_signal(fut, time.monotonic() + 0.01) is False

    _run(main())
    _run(main())
    assert watches[0]() is not watches[1]() or watches[0]() is None
    _run(main())  # the module's last-loop cache now names the third loop
    gc.collect()
    assert watches[0]() is None and watches[1]() is None
