"""Fault-injection rules the broker connections consult (``MockCluster.inject_error``, ``delay_responses``).

A rule matches an API key and optionally a broker, and is consumed request by request (``count``).
The connection asks ``FaultPlan.take(kind, api_key, broker_id)`` at the matching moment:
``error`` before handling (answer with an error response instead), ``delay`` before sending,
``drop_before`` / ``drop_after`` around handling. Black-holed brokers read and never answer, and a
Produce whose leader must ask a black-holed coordinator waits until it answers again (``server.py``).
What an injected error code looks like on the wire is ``error_responses.py``.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

ERROR = "error"
DELAY = "delay"
DROP_BEFORE = "drop_before"
DROP_AFTER = "drop_after"


@attrs.define
class _Rule:
    kind: str
    api_key: int
    broker_id: int | None
    remaining: int
    payloads: list[Any]
    taken: int = 0


class FaultPlan:
    """Pending faults; thread-safe (each connection thread consults it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lifted = threading.Condition(self._lock)  # a black hole went away
        self._rules: list[_Rule] = []
        self._black_holes: set[int | None] = set()

    def add(self, kind: str, api_key: int, broker_id: int | None, count: int, payloads: list[Any]) -> None:
        if count < 1:
            raise ValueError("count must be >= 1")
        with self._lock:
            self._rules.append(_Rule(kind, api_key, broker_id, count, payloads))

    def take(self, kind: str, api_key: int, broker_id: int) -> tuple[bool, Any]:
        """Consume one matching rule occurrence: (True, payload) or (False, None)."""
        with self._lock:
            for rule in self._rules:
                if rule.kind != kind or rule.api_key != api_key:
                    continue
                if rule.broker_id is not None and rule.broker_id != broker_id:
                    continue
                # successive requests take successive payloads; the last one repeats
                payload = rule.payloads[min(rule.taken, len(rule.payloads) - 1)]
                rule.taken += 1
                rule.remaining -= 1
                if rule.remaining <= 0:
                    self._rules.remove(rule)
                return True, payload
        return False, None

    def set_black_hole(self, broker_id: int | None, enabled: bool) -> None:
        with self._lock:
            if enabled:
                self._black_holes.add(broker_id)
            else:
                self._black_holes.discard(broker_id)
                if broker_id is None:
                    self._black_holes.clear()
                self._lifted.notify_all()

    def is_black_hole(self, broker_id: int) -> bool:
        with self._lock:
            return self._is_black_hole(broker_id)

    def _is_black_hole(self, broker_id: int) -> bool:
        return None in self._black_holes or broker_id in self._black_holes

    def wait_while_black_hole(self, broker_id: int, timeout: float) -> bool:
        """Until ``broker_id`` answers again or ``timeout`` seconds passed; True when it answers."""
        with self._lifted:
            return self._lifted.wait_for(lambda: not self._is_black_hole(broker_id), timeout)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()
            self._black_holes.clear()
            self._lifted.notify_all()
