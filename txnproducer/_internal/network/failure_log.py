"""Connection failures said out loud: a WARNING naming the broker's address and the cause.

Why: a producer pointed at a wrong address or a broker that is down retried silently (DEBUG) until
its call's bound ran out, 60 s later - then a good TimeoutError, but a minute late and after the
service looked hung. The Java client warns at every failed attempt ("Connection to node -1
(localhost/127.0.0.1:9092) could not be established"); librdkafka logs it at once. Here the first
failed attempt to an address is a WARNING at once - while the call that needs it still waits -
and further failures of the same broker at most once per ``interval_s`` (reconnects run every
``reconnect_backoff_max_ms``: a warning a second would drown the log), each saying how many
attempts failed meanwhile. A connection that works again is said at INFO, and the next failure
warns at once again.

Event: ``txn.connection_failed`` (node, address, error, failed_attempts), ``txn.connection_restored``.
Authentication failures are not reported here: they are fatal and logged once as
``txn.authentication_failed``. Thread-safe (kafka-python's and our connections report on the
Sender thread; tests call it from theirs).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ConnectionFailureLog"]

DEFAULT_INTERVAL_S = 10.0


class ConnectionFailureLog:
    """Rate-limited WARNINGs for failed connection attempts, per broker (see the module docstring)."""

    def __init__(self, logger: Any, interval_s: float = DEFAULT_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = logger
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        # node -> (failed attempts not yet reported, when the last warning was logged)
        self._failing: dict[Any, tuple[int, float]] = {}

    def failed(self, node: Any, address: str, error: str) -> None:
        """A connection attempt to ``node`` at ``address`` failed with ``error``."""
        now = self._clock()
        with self._lock:
            unreported, warned_at = self._failing.get(node, (0, float("-inf")))
            unreported += 1
            if now - warned_at < self._interval_s:
                self._failing[node] = (unreported, warned_at)
                return
            self._failing[node] = (0, now)
        self._log.warning("txn.connection_failed", node=node, address=address, error=error,
                          failed_attempts=unreported)

    def connected(self, node: Any) -> None:
        """A connection to ``node`` works (again)."""
        with self._lock:
            was_failing = self._failing.pop(node, None) is not None
        if was_failing:
            self._log.info("txn.connection_restored", node=node)
