"""Listeners: the callback form of ``Condition.notify_all``, for waiters that must not block.

Why: the producer's blocking calls wait on conditions another thread signals - buffer memory
freed, topic metadata arrived, the cluster's transaction version known, the Sender stopped. A
caller that must not park a thread (an asyncio event loop, :mod:`txnproducer.aio`) registers a
one-shot callback instead and checks the condition again when it fires. The waiter registers
*before* it checks, so a change between the check and the registration is never missed.

A callback runs on the notifying thread (usually the Sender), sometimes with that component's
lock held: it must only schedule work - ``loop.call_soon_threadsafe`` - never block, never call
back into the producer. Each fires at most once; a waiter that wants more registers again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from txnproducer._internal.log import get_logger

__all__ = ["Listeners"]


class Listeners:
    """One-shot callbacks fired by the next :meth:`notify` (thread-safe)."""

    __slots__ = ("_callbacks", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: dict[object, Callable[[], None]] = {}

    def add(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call ``fn()`` at the next notify; returns a function that removes it (idempotent)."""
        key = object()
        with self._lock:
            self._callbacks[key] = fn

        def remove() -> None:
            with self._lock:
                self._callbacks.pop(key, None)

        return remove

    def notify(self) -> None:
        """Fire and forget every registered callback (on this thread)."""
        if not self._callbacks:  # the common case, on hot paths: one truth test, no lock
            return
        with self._lock:
            callbacks, self._callbacks = self._callbacks, {}
        for fn in callbacks.values():
            try:
                fn()
            except Exception:  # a waiter's bug must not break the notifying thread
                get_logger("txnproducer.listeners").exception("txn.listener_failed")

    def __len__(self) -> int:
        return len(self._callbacks)
