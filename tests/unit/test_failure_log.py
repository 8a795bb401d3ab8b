"""ConnectionFailureLog (``_internal/network/failure_log.py``): a broker that cannot be reached is
a WARNING at the first failed attempt, then at most one per interval with the count, and a
connection that works again resets it."""

from __future__ import annotations

from typing import Any

from txnproducer._internal.network.failure_log import ConnectionFailureLog


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.events.append(("warning", event, fields))

    def info(self, event: str, **fields: Any) -> None:
        self.events.append(("info", event, fields))


def test_the_first_failure_warns_at_once_then_once_per_interval_with_the_count() -> None:
    log, now = Recorder(), [100.0]
    failures = ConnectionFailureLog(log, interval_s=10.0, clock=lambda: now[0])
    failures.failed("bootstrap-0", "127.0.0.1:9", "KafkaConnectionError: 111 ECONNREFUSED")
    assert log.events == [("warning", "txn.connection_failed", {
        "node": "bootstrap-0", "address": "127.0.0.1:9", "error": "KafkaConnectionError: 111 ECONNREFUSED",
        "failed_attempts": 1})]
    for step in (1.0, 2.0, 3.0):  # reconnects within the interval: counted, not logged
        now[0] = 100.0 + step
        failures.failed("bootstrap-0", "127.0.0.1:9", "refused")
    assert len(log.events) == 1
    now[0] = 110.0
    failures.failed("bootstrap-0", "127.0.0.1:9", "refused")
    assert log.events[-1][2]["failed_attempts"] == 4  # the three held back and this one


def test_each_broker_has_its_own_interval_and_a_working_connection_resets_it() -> None:
    log, now = Recorder(), [0.0]
    failures = ConnectionFailureLog(log, interval_s=10.0, clock=lambda: now[0])
    failures.failed(1, "h:1", "refused")
    failures.failed(2, "h:2", "refused")
    assert [e[2]["node"] for e in log.events] == [1, 2]
    failures.connected(1)
    assert log.events[-1] == ("info", "txn.connection_restored", {"node": 1})
    failures.connected(3)  # never failed: nothing to say
    assert len(log.events) == 3
    now[0] = 1.0
    failures.failed(1, "h:1", "reset")  # failing again after it worked: at once
    assert log.events[-1][1:] == ("txn.connection_failed", {"node": 1, "address": "h:1", "error": "reset",
                                                            "failed_attempts": 1})
