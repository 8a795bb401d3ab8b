"""Wiring one producer's telemetry: which providers, and the hooks it puts in the producer's parts.

Why the producer calls one function here and nothing else: what tracing needs of the producer's
machinery is four small hooks - the transaction manager's state changes (``observer``), the Sender's
coordinator requests and produce retries (``telemetry``: :class:`_SenderHooks`), and the
producer's own ``send`` (an instance attribute, as the compiled send path is) - plus one call when a
transactional call starts. :func:`plan` decides (first thing in the producer's constructor, so that a
wrong argument fails before anything is built) and :meth:`Plan.attach` installs them (last thing), only
when the application asked for tracing or metrics (``tracer_provider=`` / ``meter_provider=`` or
:func:`txnproducer.otel.instrument`): otherwise :func:`plan` returns None after one check, without
importing OpenTelemetry, and the producer runs exactly as it does without this package.
"""

from __future__ import annotations

from typing import Any

from txnproducer import errors
from txnproducer.otel import instrumentation, names

__all__ = ["Plan", "ProducerTelemetry", "plan"]


class ProducerTelemetry:
    """A producer's telemetry: the hooks :func:`attach` installed, and what the public API reads."""

    def __init__(self, transactions: Any, traced_send: Any, instruments: Any,
                 registration: int | None) -> None:
        self.transactions = transactions
        self.traced_send = traced_send
        self._instruments = instruments
        self._registration = registration

    def operation_started(self, op: str, result: Any) -> None:
        self.transactions.operation_started(op, result)

    def closed(self) -> None:
        """The producer's network thread stopped: end what is open, stop reporting its metrics."""
        self.transactions.closed()
        if self._instruments is not None and self._registration is not None:
            self._instruments.unregister(self._registration)
            self._registration = None


class Plan:
    """The providers a producer will use, chosen and checked before it builds anything (:func:`plan`)."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, record_spans: bool) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.record_spans = record_spans

    def attach(self, producer: Any, *, transaction_manager: Any, sender: Any,
               network: Any) -> ProducerTelemetry:
        """Install the hooks in ``producer``'s parts (module docstring)."""
        from txnproducer.otel._instruments import instruments_for
        from txnproducer.otel._send import TracedSend
        from txnproducer.otel._transactions import TransactionTelemetry

        config = producer.config
        attributes = {names.MESSAGING_SYSTEM: names.MESSAGING_SYSTEM_KAFKA,
                      names.MESSAGING_CLIENT_ID: config.effective_client_id,
                      names.TRANSACTIONAL_ID: config.transactional_id}
        tracer = None
        if self.tracer_provider is not None:
            tracer = self.tracer_provider.get_tracer(names.SCOPE, instrumentation.library_version())
        instruments = registration = None
        if self.meter_provider is not None:
            instruments = instruments_for(self.meter_provider)
            registration = instruments.register(producer.metrics, attributes)
        cluster = getattr(network, "cluster", None)
        transactions = TransactionTelemetry(
            tracer=tracer, instruments=instruments, transaction_manager=transaction_manager, cluster=cluster,
            attributes=attributes, closing=lambda: bool(producer.closed))
        traced = None
        if tracer is not None:
            traced = TracedSend(producer, type(producer).send, tracer=tracer, transactions=transactions,
                                cluster=cluster, attributes=attributes, record_spans=self.record_spans,
                                retry_signals=tuple(getattr(type(producer), "send_retry_signals", ())))
            producer.__dict__["send"] = traced  # as the compiled path is put there: no frame in between
            sender.telemetry = _SenderHooks(transactions, traced)
        transaction_manager.observer = transactions
        telemetry = ProducerTelemetry(transactions, traced, instruments, registration)
        _when_stopped(sender, telemetry.closed)
        return telemetry


class _SenderHooks:
    """What the Sender calls (``sender.telemetry``), on its thread, never per record: each coordinator request
    as it goes out (before the handler's callbacks are added to ``future``, so ours see the answer first),
    and each produce batch it sends again."""

    def __init__(self, transactions: Any, traced: Any) -> None:
        self.coordinator_request = transactions.coordinator_request
        self.batch_retry = traced.batch_retry


def plan(tracer_provider: Any, meter_provider: Any, record_spans: bool | None) -> Plan | None:
    """The providers to use - explicit ones win, then :func:`~txnproducer.otel.instrument`'s - or None:
    nothing was asked for (then nothing is imported). Raises ConfigError for an argument that is not a
    provider."""
    settings = instrumentation.active()
    if tracer_provider is None and meter_provider is None and settings is None:
        return None
    _check("tracer_provider", tracer_provider, "get_tracer")
    _check("meter_provider", meter_provider, "get_meter")
    tracer_provider = instrumentation.tracer_provider_for(tracer_provider)
    meter_provider = instrumentation.meter_provider_for(meter_provider)
    if record_spans is None and settings is not None:
        record_spans = settings.record_spans
    if tracer_provider is None and meter_provider is None:
        return None
    return Plan(tracer_provider, meter_provider, bool(record_spans))


def _check(name: str, provider: Any, method: str) -> None:
    if provider is not None and not callable(getattr(provider, method, None)):
        kind = "TracerProvider" if method == "get_tracer" else "MeterProvider"
        raise errors.ConfigError(
            f"{name} must be an OpenTelemetry {kind} (with {method}()), got {type(provider).__name__}")


def _when_stopped(sender: Any, fn: Any) -> None:
    """Call ``fn()`` once the Sender thread has stopped (its ``changed`` listeners fire then, and when
    the transaction version becomes known: register again until it has stopped)."""

    def check() -> None:
        if sender.stopped:
            fn()
        else:
            sender.changed.add(check)

    sender.changed.add(check)
