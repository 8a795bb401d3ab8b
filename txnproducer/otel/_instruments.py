"""The producer's metrics as OpenTelemetry instruments.

Two kinds, both free on the per-record path:

* the totals of ``producer.metrics()`` (the Java client's ``txn-init-time-ns-total`` family, records,
  batches, bytes, requests, retries, errors; buffer memory) as *observable* instruments named
  ``kafka.producer.<name>``: read from the producer's counters when the reader collects, so the producer
  does nothing more per record than it does without OpenTelemetry;
* per transaction and per call, recorded when one ends: ``txnproducer.transactions`` (a counter by
  ``txnproducer.outcome``), ``txnproducer.transaction.duration`` and ``txnproducer.operation.duration``
  (histograms, seconds: begin to end, and each ``init_transactions`` / ``send_offsets_to_transaction`` /
  ``commit_transaction`` / ``abort_transaction`` / ``complete_transaction`` from start to outcome).

Why the instruments are shared by every producer of a meter provider: an SDK meter keeps the first
instrument of a name and ignores (with a warning) a second one's callbacks, so each producer registers
itself with the provider's one set and the callbacks report every live producer, told apart by
``txnproducer.transactional_id``. A closed or collected producer stops being reported.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from txnproducer._internal import metrics as m
from txnproducer.otel import names
from txnproducer.otel.instrumentation import library_version

__all__ = ["ProducerInstruments", "instruments_for"]

_UNITS = {
    m.TXN_INIT_TIME_NS_TOTAL: "ns",
    m.TXN_BEGIN_TIME_NS_TOTAL: "ns",
    m.TXN_SEND_OFFSETS_TIME_NS_TOTAL: "ns",
    m.TXN_COMMIT_TIME_NS_TOTAL: "ns",
    m.TXN_ABORT_TIME_NS_TOTAL: "ns",
    m.RECORDS_SENT: "{record}",
    m.BATCHES_SENT: "{batch}",
    m.BYTES_SENT: "By",
    m.PRODUCE_REQUESTS: "{request}",
    m.RETRIES: "{record}",
    m.ERRORS: "{record}",
}
_DESCRIPTIONS = {
    m.TXN_INIT_TIME_NS_TOTAL: "Time application threads spent in init_transactions()",
    m.TXN_BEGIN_TIME_NS_TOTAL: "Time application threads spent in begin_transaction()",
    m.TXN_SEND_OFFSETS_TIME_NS_TOTAL: "Time application threads spent in send_offsets_to_transaction()",
    m.TXN_COMMIT_TIME_NS_TOTAL: "Time application threads spent in commit_transaction()",
    m.TXN_ABORT_TIME_NS_TOTAL: "Time application threads spent in abort_transaction()",
    m.RECORDS_SENT: "Records sent in Produce requests (a retried record counts again)",
    m.BATCHES_SENT: "Record batches sent in Produce requests",
    m.BYTES_SENT: "Bytes of record batches sent",
    m.PRODUCE_REQUESTS: "Produce requests sent",
    m.RETRIES: "Records whose batch was sent again after a retriable error",
    m.ERRORS: "Records whose batch failed for good",
}


class _Registered:
    __slots__ = ("attributes", "snapshot")

    def __init__(self, snapshot: Callable[[], dict[str, float]], attributes: dict[str, Any]) -> None:
        self.snapshot = snapshot
        self.attributes = attributes


class ProducerInstruments:
    """One meter provider's instruments, and the producers they report (module docstring)."""

    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter(names.SCOPE, library_version())
        self._lock = threading.Lock()
        self._producers: dict[int, _Registered] = {}
        self._next = 0
        for name in m.METRIC_NAMES:
            meter.create_observable_counter(
                names.METRIC_PREFIX + name, callbacks=[self._callback(name)], unit=_UNITS.get(name, "1"),
                description=_DESCRIPTIONS.get(name, ""))
        meter.create_observable_up_down_counter(
            names.METRIC_BUFFER_AVAILABLE, callbacks=[self._callback("buffer_available_bytes")], unit="By",
            description="buffer_memory not held by batches")
        meter.create_observable_up_down_counter(
            names.METRIC_BUFFER_TOTAL, callbacks=[self._callback("buffer_total_bytes")], unit="By",
            description="The producer's buffer_memory")
        self.transactions = meter.create_counter(
            names.METRIC_TRANSACTIONS, unit="{transaction}",
            description="Transactions ended, by txnproducer.outcome")
        self.transaction_duration = meter.create_histogram(
            names.METRIC_TRANSACTION_DURATION, unit="s",
            description="From begin_transaction() to the transaction's end, by txnproducer.outcome")
        self.operation_duration = meter.create_histogram(
            names.METRIC_OPERATION_DURATION, unit="s",
            description="A transactional call from its start to its outcome, by txnproducer.operation")

    def register(self, snapshot: Callable[[], dict[str, float]], attributes: dict[str, Any]) -> int:
        """Report ``snapshot()`` (a producer's ``metrics``, held weakly when it is a bound method) under
        ``attributes``; returns the key :meth:`unregister` takes."""
        ref: Callable[[], Any]
        try:
            ref = weakref.WeakMethod(snapshot)
        except TypeError:  # not a bound method
            ref = lambda: snapshot  # noqa: E731
        with self._lock:
            self._next += 1
            key = self._next
            self._producers[key] = _Registered(lambda: _call(ref), dict(attributes))
        return key

    def unregister(self, key: int) -> None:
        with self._lock:
            self._producers.pop(key, None)

    def _callback(self, name: str) -> Callable[[CallbackOptions], Iterator[Observation]]:
        def observe(_options: CallbackOptions) -> Iterator[Observation]:
            with self._lock:
                producers = list(self._producers.items())
            for key, entry in producers:
                values = entry.snapshot()
                if values is None:  # the producer was collected
                    self.unregister(key)
                    continue
                value = values.get(name)
                if value is not None:
                    yield Observation(int(value), entry.attributes)
        return observe


def _call(ref: Callable[[], Any]) -> Any:
    fn = ref()
    return None if fn is None else fn()


_lock = threading.Lock()
_by_provider: weakref.WeakKeyDictionary[Any, ProducerInstruments] = weakref.WeakKeyDictionary()


def instruments_for(provider: MeterProvider) -> ProducerInstruments:
    """The instruments of ``provider`` (created on first use)."""
    with _lock:
        found = _by_provider.get(provider)
        if found is None:
            found = _by_provider[provider] = ProducerInstruments(provider)
        return found
