"""Telemetry is off unless asked for, and then leaves the producer exactly as it is without it; asked for,
by the producer's arguments or by ``instrument()``, it is wired; the library never installs a global
provider.

No broker is needed: a producer connects in the background, and what is checked here is what its
constructor wired (the port it is given is closed; nothing is sent).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk not installed (the dev extra)")

from tests._support.otel import Telemetry
from txnproducer import TransactionalProducer, errors
from txnproducer._internal import accel
from txnproducer.otel import instrument, is_instrumented, names, uninstrument


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _producer(**kwargs: object) -> TransactionalProducer:
    return TransactionalProducer(bootstrap_servers=_closed_port(), transactional_id="otel-unit",
                                 max_block_ms=1000, **kwargs)


def test_off_by_default_imports_nothing_and_keeps_the_compiled_send_path() -> None:
    script = textwrap.dedent(f"""
        import sys
        from txnproducer import TransactionalProducer, errors
        from txnproducer._internal import accel
        p = TransactionalProducer(bootstrap_servers={_closed_port()!r}, transactional_id="off")
        try:
            assert p._telemetry is None
            assert p._tm.observer is None
            assert p._sender.telemetry is None
            if accel.PATH == "compiled":
                assert type(p.send).__name__ == "SendPath", type(p.send)
            loaded = sys.modules.copy()  # one step: the Sender thread may import while we look
            assert not [m for m in loaded if m.startswith("opentelemetry")], "imported opentelemetry"
        finally:
            p.close(0)
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_tracer_provider_wires_every_hook(telemetry: Telemetry) -> None:
    p = _producer(tracer_provider=telemetry.tracer_provider)
    try:
        assert p._telemetry is not None
        assert p._tm.observer is p._telemetry.transactions
        assert p._sender.telemetry is not None
        assert p.send is p._telemetry.traced_send  # sends take the Python path, with trace context
    finally:
        p.close(0)


def test_a_meter_provider_alone_adds_nothing_per_record(telemetry: Telemetry) -> None:
    p = _producer(meter_provider=telemetry.meter_provider)
    try:
        assert p._telemetry is not None and p._telemetry.traced_send is None
        assert p._sender.telemetry is None  # no spans: only the state changes are watched
        if accel.PATH == "compiled":
            assert type(p.send).__name__ == "SendPath"
        # its totals are reported while it lives
        reported = telemetry.metrics()
        assert any(attrs.get(names.TRANSACTIONAL_ID) == "otel-unit"
                   for attrs, _ in reported[names.METRIC_PREFIX + "records_sent"])
    finally:
        p.close(0)
    p._sender.join(10)
    assert "kafka.producer.records_sent" not in telemetry.metrics()  # closed: no longer reported


def test_instrument_applies_to_producers_created_afterwards(telemetry: Telemetry) -> None:
    before = _producer()
    instrument(tracer_provider=telemetry.tracer_provider, record_spans=True)
    try:
        assert is_instrumented()
        after = _producer()
        own = _producer(tracer_provider=telemetry.tracer_provider, record_spans=False)
        try:
            assert before._telemetry is None
            assert after._telemetry is not None and after._telemetry.traced_send._record_spans is True
            assert own._telemetry.traced_send._record_spans is False  # its own argument wins
        finally:
            after.close(0)
            own.close(0)
    finally:
        uninstrument()
        before.close(0)
    assert not is_instrumented()
    later = _producer()
    try:
        assert later._telemetry is None
    finally:
        later.close(0)


def test_instrument_without_providers_follows_the_global_ones_and_sets_none(telemetry: Telemetry) -> None:
    from opentelemetry import metrics, trace

    tracer_before, meter_before = trace.get_tracer_provider(), metrics.get_meter_provider()
    instrument(metrics=False)
    p = _producer()
    try:
        assert p._telemetry is not None
        assert p._telemetry.transactions._instruments is None  # metrics=False
    finally:
        p.close(0)
        uninstrument()
    # the library looked the global providers up; it installed none
    assert trace.get_tracer_provider() is tracer_before and metrics.get_meter_provider() is meter_before


@pytest.mark.parametrize("kwarg", ["tracer_provider", "meter_provider"])
def test_a_provider_that_is_not_one_is_a_config_error_naming_it(kwarg: str) -> None:
    with pytest.raises(errors.ConfigError, match=f"{kwarg} must be an OpenTelemetry .*Provider.*got str"):
        _producer(**{kwarg: "not a provider"})
