"""The Sender's lean poll: kafka-python's loop runs whenever it has work, and only then.

The loop here is a stand-in with the attributes lean_poll reads; its selector is a real one (the
level-triggered selector of the platform) over socket pairs, so "an event seen but not consumed is
reported again" is the operating system's, not the test's.
"""

from __future__ import annotations

import collections
import heapq
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from txnproducer._internal.network.lean_poll import lean_poll


class RecordingSelector(selectors.DefaultSelector):
    """The platform's selector, recording the timeouts it is asked to wait."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        self.timeouts.append(timeout)
        return super().select(timeout)


class Loop:
    """What lean_poll reads of kafka-python's NetworkSelector, and a record of full polls."""

    def __init__(self) -> None:
        self._ready: collections.deque[Any] = collections.deque()
        self._scheduled: list[tuple[float, Any]] = []
        self._selector = RecordingSelector()
        self._wakeup_r, self.wakeup_w = socket.socketpair()
        self._wakeup_r.setblocking(False)
        self._selector.register(self._wakeup_r, selectors.EVENT_READ, (None, None))
        self._poll_lock = threading.Lock()
        self.full_polls: list[float] = []

    def full_poll(self, timeout_ms: float) -> None:
        self.full_polls.append(timeout_ms)

    def close(self) -> None:
        self._selector.close()
        self._wakeup_r.close()
        self.wakeup_w.close()


@pytest.fixture
def loop() -> Iterator[Loop]:
    made = Loop()
    yield made
    made.close()


def test_nothing_to_do_waits_on_the_selector_without_the_loop(loop: Loop) -> None:
    lean_poll(loop, 0.0, loop.full_poll)
    assert loop.full_polls == []
    assert loop._selector.timeouts == [0.0]


def test_a_ready_task_runs_the_loop_at_once_with_the_whole_timeout(loop: Loop) -> None:
    loop._ready.append("task")
    lean_poll(loop, 2.5, loop.full_poll)
    assert loop.full_polls == [2500.0]
    assert loop._selector.timeouts == []  # the loop waits, not us


def test_a_task_due_now_runs_the_loop(loop: Loop) -> None:
    heapq.heappush(loop._scheduled, (time.monotonic() - 0.001, "timer"))
    lean_poll(loop, 1.0, loop.full_poll)
    assert loop.full_polls == [1000.0]


def test_a_task_due_before_the_timeout_shortens_the_wait_and_then_runs(loop: Loop) -> None:
    due = time.monotonic() + 0.5  # far enough that a paused thread still finds it not yet due
    heapq.heappush(loop._scheduled, (due, "timer"))
    lean_poll(loop, 30.0, loop.full_poll)
    (waited,) = loop._selector.timeouts
    assert waited is not None and 0 < waited <= 0.5  # not the 30 s asked for
    assert time.monotonic() >= due  # the wait lasted until the task was due ...
    assert loop.full_polls == [0.0]  # ... and the loop ran it without waiting again


def test_a_wakeup_ends_the_wait_and_is_drained_without_the_loop(loop: Loop) -> None:
    loop.wakeup_w.send(b"\x00\x00")  # two wake-ups before the wait: one drain
    lean_poll(loop, 30.0, loop.full_poll)
    assert loop.full_polls == []
    lean_poll(loop, 0.0, loop.full_poll)  # drained: nothing left to report
    assert loop.full_polls == []
    with pytest.raises(BlockingIOError):
        loop._wakeup_r.recv(1)


def test_an_event_on_the_loops_own_socket_runs_the_loop_and_stays_reported(loop: Loop) -> None:
    theirs, peer = socket.socketpair()
    try:
        loop._selector.register(theirs, selectors.EVENT_READ, ("reader", None))
        peer.send(b"metadata answer")
        lean_poll(loop, 30.0, loop.full_poll)
        assert loop.full_polls == [0.0]
        # not consumed by us: the loop's own select (level-triggered) still sees it
        assert [key.fileobj for key, _ in loop._selector.select(0)] == [theirs]
        assert theirs.recv(100) == b"metadata answer"
    finally:
        theirs.close()
        peer.close()


def test_a_task_made_ready_during_the_wait_runs_the_loop(loop: Loop) -> None:
    class ReadyOnWake(RecordingSelector):
        """A task queued from another thread (call_soon_threadsafe) plus its wake-up."""

        def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            loop._ready.append("callback")
            return super().select(timeout)

    selector = ReadyOnWake()
    selector.register(loop._wakeup_r, selectors.EVENT_READ, (None, None))
    loop._selector.close()
    loop._selector = selector
    loop.wakeup_w.send(b"\x00")
    lean_poll(loop, 30.0, loop.full_poll)
    assert loop.full_polls == [0.0]


def test_a_closed_wakeup_socket_is_left_to_the_loop_to_rebuild(loop: Loop) -> None:
    loop.wakeup_w.close()  # recv() now returns b"": kafka-python rebuilds the pair
    lean_poll(loop, 30.0, loop.full_poll)
    assert loop.full_polls == [0.0]


def test_the_wait_holds_the_loops_poll_lock_and_leaves_a_concurrent_poll_to_the_loop(loop: Loop) -> None:
    """kafka-python raises "Concurrent access to net.poll!" when two threads poll; the lean wait
    holds the same lock, so a second poller still reaches that check instead of a second select."""

    class HeldDuringSelect(RecordingSelector):
        def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            assert not loop._poll_lock.acquire(blocking=False), "the wait must hold the lock"
            return super().select(timeout)

    selector = HeldDuringSelect()
    selector.register(loop._wakeup_r, selectors.EVENT_READ, (None, None))
    loop._selector.close()
    loop._selector = selector
    lean_poll(loop, 0.0, loop.full_poll)
    assert selector.timeouts == [0.0] and loop._poll_lock.acquire(blocking=False)  # released after
    # held by another thread: no select of ours, the loop's own poll (which raises) runs instead
    lean_poll(loop, 2.0, loop.full_poll)
    assert selector.timeouts == [0.0] and loop.full_polls == [2000.0]
    loop._poll_lock.release()
