"""A one-node Kafka (``KAFKA_HOME``) whose consumer group protocol runs at test speed.

Why a node of its own: Kafka's KIP-848 coordinator paces members itself - a heartbeat every 5 s and a
45 s session by default, and its minimums (``group.consumer.min.heartbeat.interval.ms``,
``group.consumer.min.session.timeout.ms``) forbid less - so a scenario on the shared session broker
(``tests/broker/conftest.py``) would spend most of its time waiting for heartbeats. This node lowers
both to what the mock tier uses (a heartbeat every 500 ms, a 6 s session); the real-broker KIP-848
tests and the rebalance benchmark (``benchmarks/rebalance_pause.py``) start one and throw it away.
"""

from __future__ import annotations

from pathlib import Path

from tests._support.kafka_home import KafkaHomeBroker

__all__ = ["HEARTBEAT_INTERVAL_MS", "SESSION_TIMEOUT_MS", "Kip848KafkaHomeBroker"]

HEARTBEAT_INTERVAL_MS = 500
SESSION_TIMEOUT_MS = 6000


class Kip848KafkaHomeBroker(KafkaHomeBroker):
    """:class:`KafkaHomeBroker` with the consumer group protocol's pace lowered (see the module
    docstring); ``heartbeat_ms`` / ``session_ms`` choose other values (Kafka's: 5000 / 45000)."""

    def __init__(self, kafka_home: Path, workdir: Path, heartbeat_ms: int = HEARTBEAT_INTERVAL_MS,
                 session_ms: int = SESSION_TIMEOUT_MS) -> None:
        super().__init__(kafka_home, workdir)
        self.heartbeat_ms = heartbeat_ms
        self.session_ms = session_ms

    def adjust_properties(self, lines: dict[str, str]) -> dict[str, str]:
        props = dict(super().adjust_properties(lines))
        props.update({
            "group.consumer.min.heartbeat.interval.ms": str(min(self.heartbeat_ms, 5000)),
            "group.consumer.heartbeat.interval.ms": str(self.heartbeat_ms),
            "group.consumer.min.session.timeout.ms": str(min(self.session_ms, 45000)),
            "group.consumer.session.timeout.ms": str(self.session_ms),
            # the classic protocol's floor too, for comparisons on the same node
            "group.min.session.timeout.ms": str(min(self.session_ms, 6000)),
        })
        return props
