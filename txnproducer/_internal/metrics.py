"""ProducerMetrics: thread-safe counters and time totals behind ``producer.metrics()``.

The names mirror the Java client's producer metrics so dashboards translate directly:
``txn_init_time_ns_total`` and friends are the Java ``txn-init-time-ns-total`` family (total
nanoseconds application threads spent blocked in each transactional call); the counters are
the record/batch/byte totals of the Java ``record-send-total`` family. Application threads and
the Sender thread both write, so every update takes one small lock; ``snapshot()`` returns a
consistent copy.
"""

from __future__ import annotations

import threading

TXN_INIT_TIME_NS_TOTAL = "txn_init_time_ns_total"
TXN_BEGIN_TIME_NS_TOTAL = "txn_begin_time_ns_total"
TXN_SEND_OFFSETS_TIME_NS_TOTAL = "txn_send_offsets_time_ns_total"
TXN_COMMIT_TIME_NS_TOTAL = "txn_commit_time_ns_total"
TXN_ABORT_TIME_NS_TOTAL = "txn_abort_time_ns_total"
RECORDS_SENT = "records_sent"
BATCHES_SENT = "batches_sent"
BYTES_SENT = "bytes_sent"
PRODUCE_REQUESTS = "produce_requests_sent"
RETRIES = "retries"
ERRORS = "errors"

METRIC_NAMES: tuple[str, ...] = (
    TXN_INIT_TIME_NS_TOTAL,
    TXN_BEGIN_TIME_NS_TOTAL,
    TXN_SEND_OFFSETS_TIME_NS_TOTAL,
    TXN_COMMIT_TIME_NS_TOTAL,
    TXN_ABORT_TIME_NS_TOTAL,
    RECORDS_SENT,
    BATCHES_SENT,
    BYTES_SENT,
    PRODUCE_REQUESTS,
    RETRIES,
    ERRORS,
)


class ProducerMetrics:
    """Monotonic totals; unknown names are accepted so components can add their own counters."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, float] = dict.fromkeys(METRIC_NAMES, 0.0)

    def add(self, name: str, amount: float = 1.0) -> None:
        """Add ``amount`` to the total called ``name`` (created at 0 on first use)."""
        with self._lock:
            self._values[name] = self._values.get(name, 0.0) + amount

    def record_time_ns(self, name: str, elapsed_ns: int) -> None:
        """Add a measured duration; negative values (clock oddities) count as 0."""
        self.add(name, float(max(0, elapsed_ns)))

    # convenience for the Sender's hot path
    def record_produce_request(self, batch_count: int, record_count: int, size_bytes: int) -> None:
        """One Produce request carrying ``batch_count`` batches (at most one per partition)."""
        with self._lock:
            self._values[PRODUCE_REQUESTS] += 1
            self._values[BATCHES_SENT] += batch_count
            self._values[RECORDS_SENT] += record_count
            self._values[BYTES_SENT] += size_bytes

    def record_retry(self, count: int = 1) -> None:
        self.add(RETRIES, count)

    def record_error(self, count: int = 1) -> None:
        self.add(ERRORS, count)

    def get(self, name: str) -> float:
        with self._lock:
            return self._values.get(name, 0.0)

    def snapshot(self) -> dict[str, float]:
        """A copy of every total, safe to keep and compare."""
        with self._lock:
            return dict(self._values)
