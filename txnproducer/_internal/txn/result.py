"""TransactionalRequestResult: what an application thread waits on while the Sender does the work.

``init_transactions()``, ``commit_transaction()``, ``abort_transaction()`` and
``send_offsets_to_transaction()`` enqueue requests that the Sender thread sends; the application
thread blocks on one of these objects with a bound (``max_block_ms``). The result is completed
exactly once (success or error) by the Sender thread; waiting can be repeated, so a caller whose
wait timed out can call the same API again and keep waiting for the same outcome (the Java
client's behaviour since KIP-691).

A caller that must not block (an asyncio event loop, :mod:`txnproducer.aio`) registers
:meth:`TransactionalRequestResult.add_done_callback` instead of waiting, then reads the outcome
with ``wait(0)`` once the callback fired.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from txnproducer import errors
from txnproducer._internal.log import get_logger

# called with (metric name, elapsed nanoseconds) when a wait first observes success
MetricRecorder = Callable[[str, int], None]


class TransactionalRequestResult:
    """A one-shot, thread-safe completion with an error slot and bounded, repeatable waits."""

    def __init__(
        self,
        operation: str,
        *,
        metric: str | None = None,
        record_metric: MetricRecorder | None = None,
        clock_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        """``operation`` is the public call's name (``"init_transactions"``) used in messages."""
        self.operation = operation
        # Held from creation until the result completes: a waiter blocks acquiring it and lets
        # the next waiter through by releasing it. A threading.Event does the same with a
        # Condition written in Python (about 25 Python calls per commit between its set() and
        # wait()); a lock's acquire and release are single C calls.
        self._gate = threading.Lock()
        self._gate.acquire()
        self._done = False
        self._error: BaseException | None = None
        self._acked = False
        self._metric = metric
        self._record_metric = record_metric
        self._clock_ns = clock_ns
        self._created_ns = clock_ns()
        self._waited_once = False
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    # --- completion (Sender thread) ------------------------------------------------------------

    def set_success(self) -> None:
        """Complete successfully; no-op if already completed (first outcome wins)."""
        with self._lock:
            if self._done:
                return
            self._done = True
            self._gate.release()
            callbacks, self._callbacks = self._callbacks, []
        self._run(callbacks)

    def set_error(self, exc: BaseException) -> None:
        """Complete with ``exc``; no-op if already completed (first outcome wins)."""
        with self._lock:
            if self._done:
                return
            self._error = exc
            self._done = True
            self._gate.release()
            callbacks, self._callbacks = self._callbacks, []
        self._run(callbacks)

    def add_done_callback(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once the result is complete: at once, on this thread, if it already is;
        otherwise on the completing thread (the Sender's), so ``fn`` must only schedule work
        (``loop.call_soon_threadsafe``). ``wait(0)`` then returns or raises the outcome."""
        with self._lock:
            if not self._done:
                self._callbacks.append(fn)
                return
        fn()

    @staticmethod
    def _run(callbacks: list[Callable[[], None]]) -> None:
        for fn in callbacks:
            try:
                fn()
            except Exception:  # a waiter's bug must not break the Sender thread
                get_logger("txnproducer.transaction_manager").exception("txn.done_callback_failed")

    # --- observation (application threads) -----------------------------------------------------

    def done(self) -> bool:
        """True once completed, successfully or not."""
        return self._done

    def is_successful(self) -> bool:
        return self._done and self._error is None

    @property
    def error(self) -> BaseException | None:
        return self._error

    @property
    def acked(self) -> bool:
        """True once a waiter has observed the outcome (the pending call is then finished)."""
        return self._acked

    def wait(self, timeout_s: float | None, bound_name: str = "max_block_ms") -> None:
        """Block until completed or ``timeout_s`` runs out, then return or raise the outcome.

        Raises the completion error (a :class:`txnproducer.errors.TxnProducerError`), or
        :class:`txnproducer.errors.TimeoutError` naming the bound when time runs out; the
        operation keeps running and a later ``wait`` observes its outcome. ``None`` waits
        without a bound; library callers always pass one.
        """
        start = self._created_ns if not self._waited_once else self._clock_ns()
        self._waited_once = True
        if not self._done:
            gate = self._gate
            if not (gate.acquire() if timeout_s is None else gate.acquire(timeout=max(0.0, timeout_s))):
                raise self.timeout_error(timeout_s or 0.0, bound_name)
            gate.release()  # the next waiter's turn
        first_ack = not self._acked
        self._acked = True
        if self._error is not None:
            raise self._error
        if first_ack and self._metric is not None and self._record_metric is not None:
            self._record_metric(self._metric, max(0, self._clock_ns() - start))

    def timeout_error(self, timeout_s: float, bound_name: str) -> errors.TimeoutError:
        """What a wait bounded by ``timeout_s`` (named ``bound_name``) raises when it runs out."""
        ms = round(timeout_s * 1000)
        return errors.TimeoutError(
            f"{self.operation}() did not complete within {ms} ms ({bound_name}); it continues in"
            f" the background: call {self.operation}() again to keep waiting for it"
        )

    def __repr__(self) -> str:
        status = "pending" if not self.done() else ("ok" if self._error is None else repr(self._error))
        return f"TransactionalRequestResult({self.operation}, {status})"
