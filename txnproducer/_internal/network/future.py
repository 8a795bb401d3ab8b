"""The outcome of one request: answered, failed, or not yet - completed on the network thread.

Why our own and not kafka-python's ``kafka.future.Future``: that one takes a lock on every step (about
a third of its cost on a one-record transaction's three requests), and when a callback raises it logs
"Error processing callback" at ERROR on kafka-python's logger - a line on our path that no application
error stands for. Here the rule of the network room makes the lock unnecessary: a request's future is
made, given its callbacks and completed by the one thread that polls the network (the Sender, a group
member's IO thread, an admin call's thread); and a callback that raises is a bug of ours, logged once on
our logger (``txn.callback_failed``) with its traceback, and the other callbacks still run.

The calls are the ones kafka-python's future has (``add_callback``, ``add_errback``, ``add_both``,
``success``, ``failure``, ``is_done``, ``value``, ``exception``, ``succeeded()``, ``failed()``), so that
code reading either reads the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from txnproducer._internal.log import get_logger

__all__ = ["Future"]

_log = get_logger("txnproducer.network")


class Future:
    """One request's outcome (see the module docstring). Thread rule: the network thread only."""

    __slots__ = ("_callbacks", "_errbacks", "exception", "is_done", "value")

    def __init__(self) -> None:
        self.is_done = False
        self.value: Any = None
        self.exception: BaseException | None = None
        self._callbacks: list[Callable[[Any], Any]] | None = None
        self._errbacks: list[Callable[[BaseException], Any]] | None = None

    def succeeded(self) -> bool:
        return self.is_done and self.exception is None

    def failed(self) -> bool:
        return self.is_done and self.exception is not None

    def success(self, value: Any) -> Future:
        """Complete with ``value`` and run the callbacks, in the order they were added."""
        if self.is_done:
            raise RuntimeError("future already completed")
        self.value = value
        self.is_done = True
        callbacks = self._callbacks
        self._callbacks = self._errbacks = None
        if callbacks:
            for fn in callbacks:
                _run(fn, value)
        return self

    def failure(self, exc: BaseException) -> Future:
        """Complete with ``exc`` and run the errbacks, in the order they were added."""
        if self.is_done:
            raise RuntimeError("future already completed")
        if not isinstance(exc, BaseException):
            raise TypeError(f"a future fails with an exception, not {exc!r}")
        self.exception = exc
        self.is_done = True
        errbacks = self._errbacks
        self._callbacks = self._errbacks = None
        if errbacks:
            for fn in errbacks:
                _run(fn, exc)
        return self

    def add_callback(self, fn: Callable[[Any], Any]) -> Future:
        """Call ``fn(value)`` when the request is answered (now, if it was)."""
        if not self.is_done:
            if self._callbacks is None:
                self._callbacks = [fn]
            else:
                self._callbacks.append(fn)
        elif self.exception is None:
            _run(fn, self.value)
        return self

    def add_errback(self, fn: Callable[[BaseException], Any]) -> Future:
        """Call ``fn(exception)`` when the request fails (now, if it did)."""
        if not self.is_done:
            if self._errbacks is None:
                self._errbacks = [fn]
            else:
                self._errbacks.append(fn)
        elif self.exception is not None:
            _run(fn, self.exception)
        return self

    def add_both(self, fn: Callable[[Any], Any]) -> Future:
        """Call ``fn`` with the value or the exception, whichever comes."""
        self.add_callback(fn)
        return self.add_errback(fn)

    def __repr__(self) -> str:
        if not self.is_done:
            return "<Future pending>"
        if self.exception is not None:
            return f"<Future failed: {type(self.exception).__name__}>"
        return "<Future answered>"


def _run(fn: Callable[[Any], Any], arg: Any) -> None:
    try:
        fn(arg)
    except Exception:  # a bug of ours: said once, and the other callbacks still run
        _log.exception("txn.callback_failed", callback=getattr(fn, "__qualname__", repr(fn)))
