"""Fault-injection rules the broker connections consult (``MockCluster.inject_error``, ``delay_responses``).

A rule matches an API key and optionally a broker, and is consumed request by request (``count``).
The connection asks ``FaultPlan.take(kind, api_key, broker_id)`` at the matching moment:
``error`` before handling (answer with an error response instead), ``delay`` before sending,
``drop_before`` / ``drop_after`` around handling. Black-holed brokers read and never answer (what they
read is lost: a network that drops); frozen brokers (SIGSTOP) read and hold everything until thawed, then
handle and answer it in order. A Produce (TxnOffsetCommit v5) whose leader (group coordinator) must check it
with a black-holed or frozen coordinator waits until that coordinator answers again (``server.py``). What
an injected error code looks like on the wire is ``error_responses.py``.
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
        self._lifted = threading.Condition(self._lock)  # a black hole or a freeze went away
        self._rules: list[_Rule] = []
        self._black_holes: set[int | None] = set()
        self._frozen: set[int] = set()
        self._fences: dict[int, int] = {}  # broker id -> how many times the controller fenced it

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
        """Until ``broker_id`` answers again (neither black-holed nor frozen) or ``timeout`` seconds
        passed; True when it answers."""
        with self._lifted:
            return self._lifted.wait_for(lambda: not self._is_silent(broker_id), timeout)

    def _is_silent(self, broker_id: int) -> bool:
        return self._is_black_hole(broker_id) or broker_id in self._frozen

    def is_silent(self, broker_id: int) -> bool:
        """Black-holed or frozen: whatever is asked of it now is not answered now."""
        with self._lock:
            return self._is_silent(broker_id)

    def set_frozen(self, broker_id: int, frozen: bool) -> None:
        with self._lock:
            if frozen:
                self._frozen.add(broker_id)
            else:
                self._frozen.discard(broker_id)
                self._lifted.notify_all()

    def is_frozen(self, broker_id: int) -> bool:
        with self._lock:
            return broker_id in self._frozen

    def frozen(self) -> set[int]:
        with self._lock:
            return set(self._frozen)

    def note_fence(self, broker_id: int) -> None:
        with self._lock:
            self._fences[broker_id] = self._fences.get(broker_id, 0) + 1

    def fence_count(self, broker_id: int) -> int:
        """How many times ``broker_id`` was fenced: a request read before a fence and handled after it
        is handled by a broker that lost its leaderships meanwhile (``server.py``)."""
        with self._lock:
            return self._fences.get(broker_id, 0)

    def wait_while_frozen(self, broker_id: int, timeout: float) -> bool:
        """Until ``broker_id`` is thawed or ``timeout`` seconds passed; True when it is not frozen."""
        with self._lifted:
            return self._lifted.wait_for(lambda: broker_id not in self._frozen, timeout)

    def clear(self) -> None:
        """Forget every rule and black hole, and thaw every frozen broker."""
        with self._lock:
            self._rules.clear()
            self._black_holes.clear()
            self._frozen.clear()
            self._lifted.notify_all()
