"""The transaction manager's queue of coordinator requests, the one in flight, and known coordinators.

Why apart from the manager: the queue's rules are mechanical and the same for every request -
priority order (:class:`~txnproducer._internal.txn.handler.Priority`), first come first served
within a priority, one request in flight, a retried request waiting out its backoff, at most one
FindCoordinator per key - while the manager decides *what* to queue. Keeping them apart leaves the
manager with the state machine. Not thread-safe: the manager's lock guards every call.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

from txnproducer._internal.txn.handler import TxnRequestHandler

__all__ = ["CoordinatorNode", "TxnRequestQueue"]

#: (node id, host, port) of a coordinator, as FindCoordinator answered.
CoordinatorNode = tuple[int, str, int]


class TxnRequestQueue:
    """Queued handlers by (priority, arrival), the one in flight, and the coordinators found."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._heap: list[tuple[int, int, TxnRequestHandler]] = []
        self._seq = 0
        self.in_flight: TxnRequestHandler | None = None
        self._coordinators: dict[tuple[str, str], CoordinatorNode] = {}
        self.last_group: str | None = None

    def __bool__(self) -> bool:
        return bool(self._heap)

    def __iter__(self) -> Iterator[TxnRequestHandler]:
        """The queued handlers (not the one in flight), in no particular order."""
        return (entry[2] for entry in self._heap)

    # -- queue -------------------------------------------------------------------------------------

    def push(self, handler: TxnRequestHandler) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (int(handler.priority), self._seq, handler))

    def push_after(self, handler: TxnRequestHandler, backoff_ms: float) -> None:
        """Queue ``handler`` again, not to be sent before ``backoff_ms`` from now; its request is
        rebuilt when it is taken (the transaction version or broker versions may have changed)."""
        handler.is_retry = True
        handler.retry_backoff_ms = int(backoff_ms)
        handler.not_before = self._clock() + backoff_ms / 1000.0
        handler.reset_request()
        self.push(handler)

    def head(self) -> TxnRequestHandler | None:
        return self._heap[0][2] if self._heap else None

    def peek(self) -> TxnRequestHandler | None:
        """:meth:`head` for a reader that does not hold the manager's lock: the list is read
        once (``remove_where`` replaces it) and an emptied one gives None, not IndexError."""
        heap = self._heap
        try:
            return heap[0][2]
        except IndexError:
            return None

    def head_is_due(self) -> bool:
        """Whether the first handler's backoff (if any) has passed."""
        return bool(self._heap) and self._heap[0][2].not_before <= self._clock()

    def pop(self) -> TxnRequestHandler:
        return heapq.heappop(self._heap)[2]

    def head_delay_ms(self) -> float | None:
        """Milliseconds until the first handler may be sent (0: now), None if the queue is empty."""
        if not self._heap:
            return None
        return max(0.0, (self._heap[0][2].not_before - self._clock()) * 1000.0)

    def remove_where(self, predicate: Callable[[TxnRequestHandler], bool]) -> list[TxnRequestHandler]:
        """Take every queued handler matching ``predicate`` out of the queue and return them."""
        removed = [entry[2] for entry in self._heap if predicate(entry[2])]
        if removed:
            self._heap = [entry for entry in self._heap if not predicate(entry[2])]
            heapq.heapify(self._heap)
        return removed

    def clear(self) -> list[TxnRequestHandler]:
        """Empty the queue; returns what was in it."""
        handlers = [entry[2] for entry in self._heap]
        self._heap.clear()
        return handlers

    def finished(self, handler: TxnRequestHandler) -> None:
        """``handler`` got its answer or failed on the wire: nothing is in flight any more."""
        if self.in_flight is handler:
            self.in_flight = None

    # -- coordinators ------------------------------------------------------------------------------

    def lookup_pending(self, coordinator_type: str, key: str) -> bool:
        """Whether a FindCoordinator for (type, key) is queued or in flight."""
        handlers = list(self)
        if self.in_flight is not None:
            handlers.append(self.in_flight)
        return any(h.looks_up(coordinator_type, key) for h in handlers)

    def coordinator(self, coordinator_type: str, key: str) -> CoordinatorNode | None:
        return self._coordinators.get((coordinator_type, key))

    def set_coordinator(self, coordinator_type: str, key: str, node: CoordinatorNode) -> None:
        self._coordinators[(coordinator_type, key)] = node
        if coordinator_type == "group":
            self.last_group = key

    def forget_coordinator(self, coordinator_type: str, key: str) -> None:
        self._coordinators.pop((coordinator_type, key), None)
