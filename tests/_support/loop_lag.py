"""Event-loop lag: how late a ticker coroutine wakes up, and how much of that our process caused.

A ticker sleeps ``period_s`` again and again; its lateness (woken at, minus due at) is how long the
loop could not run a ready callback - the lag every other coroutine of the service would see.

On a machine shared with other work the kernel may also leave a thread waiting for a CPU
(runnable, not running); that is the machine's lag, not the library's. Linux counts it per thread
(``/proc/<pid>/task/<tid>/schedstat``, second field: nanoseconds waited on a run queue), so each
tick's lateness is also reported minus that wait: "attributable" lag. Two threads matter: the
loop's, and the producer's Sender - if the kernel preempts the Sender while it holds the GIL, the
loop thread waits for the GIL until the Sender gets a CPU again. Subtracted: the loop thread's own
run-queue wait, plus the Sender's as far as the loop thread was blocked meanwhile (neither on a CPU
nor on a run queue; the two waits add up when they do not overlap, as on a loaded machine), and at
least the larger of the two (the rule before, ``_machine_wait_ms``). A thread blocked on a lock, on
the GIL or in a system call is not on a run queue: a loop thread waiting 5 ms for a GIL a *running*
Sender holds stays attributable. Without schedstat (not Linux) the two figures are equal.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import attrs


def _schedstat_ns(tid: int | None = None) -> tuple[int, int]:
    """(nanoseconds on a CPU, nanoseconds waiting on a run queue) of a thread of this process."""
    path = Path("/proc/thread-self/schedstat" if tid is None else f"/proc/self/task/{tid}/schedstat")
    try:
        fields = path.read_text().split()
        return int(fields[0]), int(fields[1])
    except (OSError, IndexError, ValueError):
        return 0, 0


def _machine_wait_ms(lateness_ms: float, loop_cpu_ms: float, loop_rq_ms: float, other_rq_ms: float) -> float:
    """How much of a tick's lateness the kernel, not the process, is known to have caused.

    The loop thread's own run-queue wait, plus the other thread's where the loop thread was neither
    running nor runnable (waiting for the GIL that thread held while the kernel kept it off a CPU) -
    the two add up when they did not overlap, which a loaded machine makes common. At least the
    larger of the two waits, as before this rule: a tick it passed, it still passes."""
    blocked_ms = max(0.0, lateness_ms - loop_rq_ms - loop_cpu_ms)
    return max(loop_rq_ms + min(other_rq_ms, blocked_ms), loop_rq_ms, other_rq_ms)


@attrs.define
class Tick:
    lateness_ms: float
    runqueue_ms: float

    @property
    def attributable_ms(self) -> float:
        return max(0.0, self.lateness_ms - self.runqueue_ms)


@attrs.define
class LagMeter:
    """``async with LagMeter(other_thread=tid) as meter:`` ticks while the block runs; ``tid``
    (``threading.Thread.native_id``) is the Sender's, whose run-queue wait also delays the loop."""

    other_thread: int | None = None
    period_s: float = 0.001
    ticks: list[Tick] = attrs.field(factory=list)
    _task: asyncio.Task[None] | None = None
    _running: bool = False

    async def _tick(self) -> None:
        other = self.other_thread
        while self._running:
            loop_cpu_before, loop_rq_before = _schedstat_ns()
            other_rq_before = 0 if other is None else _schedstat_ns(other)[1]
            due = time.monotonic() + self.period_s
            await asyncio.sleep(self.period_s)
            woke = time.monotonic()
            loop_cpu, loop_rq = _schedstat_ns()
            other_rq = 0 if other is None else _schedstat_ns(other)[1] - other_rq_before
            lateness_ms = max(0.0, (woke - due) * 1000)
            machine_ms = _machine_wait_ms(lateness_ms, (loop_cpu - loop_cpu_before) / 1e6,
                                          (loop_rq - loop_rq_before) / 1e6, other_rq / 1e6)
            self.ticks.append(Tick(lateness_ms, machine_ms))

    async def __aenter__(self) -> LagMeter:
        self._running = True
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._running = False
        assert self._task is not None
        await self._task

    @property
    def max_lateness_ms(self) -> float:
        return max((t.lateness_ms for t in self.ticks), default=0.0)

    @property
    def max_attributable_ms(self) -> float:
        return max((t.attributable_ms for t in self.ticks), default=0.0)

    def percentile_ms(self, q: float) -> float:
        values = sorted(t.lateness_ms for t in self.ticks)
        return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0

    def summary(self) -> str:
        worst = sorted(self.ticks, key=lambda t: t.lateness_ms)[-3:]
        return (f"{len(self.ticks)} ticks of {self.period_s * 1000:.0f} ms: lateness p50 "
                f"{self.percentile_ms(0.5):.2f} ms, p99 {self.percentile_ms(0.99):.2f} ms, max "
                f"{self.max_lateness_ms:.2f} ms; max attributable (minus run-queue wait) "
                f"{self.max_attributable_ms:.2f} ms; worst ticks (lateness, run-queue) "
                + ", ".join(f"({t.lateness_ms:.1f}, {t.runqueue_ms:.1f})" for t in worst))
