"""A minimal stand-in for the MockCluster's ClusterState, enough to drive the transaction coordinator.

It satisfies the parts of contract A the coordinator uses: ``lock``/``cond``, ``transaction_version``,
``transaction_max_timeout_ms``, ``now_ms`` (a manual clock), ``coordinator_for``, ``partition_log``
(logs that record the markers written to them), ``groups`` (offset staging with the recorded
TxnOffsetCommit generation/member rules) and ``notify_all``. Tests call the registered handlers
directly with kafka-python request objects, so the coordinator's answers can be checked before (and
independently of) the TCP server.
"""

from __future__ import annotations

import threading
from typing import Any

from txnproducer.testing.handlers import RequestContext, lookup
from txnproducer.testing.txn_coordinator import TransactionCoordinator

NONE = 0
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25


class FakeLog:
    """Records ``write_marker`` calls as (producer_id, epoch, "COMMIT"/"ABORT", coordinator_epoch)."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.markers: list[tuple[int, int, str, int]] = []

    def write_marker(self, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int) -> None:
        self.markers.append((producer_id, producer_epoch, "COMMIT" if commit else "ABORT", coordinator_epoch))


class FakeGroups:
    """Transactional offsets per group, with the generation/member answers Kafka 4.1.0 gave.

    A group exists once offsets were committed to it; it never has members here.
    """

    def __init__(self) -> None:
        self.staged: dict[tuple[str, int], dict[tuple[str, int], tuple[int, int, str | None]]] = {}
        self.committed_offsets: dict[str, dict[tuple[str, int], int]] = {}
        self.completed: list[tuple[str, int, bool]] = []

    def validate_txn_offset_commit(self, group_id: str, generation_id: int, member_id: str,
                                   group_instance_id: str | None) -> int:
        if generation_id < 0:
            return NONE
        return UNKNOWN_MEMBER_ID if group_id in self.committed_offsets else ILLEGAL_GENERATION

    def stage_txn_offsets(self, group_id: str, producer_id: int,
                          offsets: dict[tuple[str, int], tuple[int, int, str | None]]) -> None:
        self.staged.setdefault((group_id, producer_id), {}).update(offsets)

    def complete_txn_offsets(self, group_id: str, producer_id: int, commit: bool) -> None:
        self.completed.append((group_id, producer_id, commit))
        offsets = self.staged.pop((group_id, producer_id), {})
        if commit:
            target = self.committed_offsets.setdefault(group_id, {})
            for tp, (offset, _epoch, _meta) in offsets.items():
                target[tp] = offset

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        return dict(self.committed_offsets.get(group_id, {}))


class FakeState:
    """See the module docstring. ``coordinators`` maps (key_type, key) to a broker (default: broker 1)."""

    def __init__(self, transaction_version: int = 2, now_ms: int = 1_700_000_000_000) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.transaction_version = transaction_version
        self.transaction_max_timeout_ms = 900000
        self.clock_ms = now_ms
        self.logs: dict[tuple[str, int], FakeLog] = {}
        self.coordinators: dict[tuple[int, str], int] = {}
        self.groups = FakeGroups()
        self.notifications = 0
        self.txn = TransactionCoordinator(self)  # type: ignore[arg-type]

    def now_ms(self) -> int:
        return self.clock_ms

    def advance(self, ms: int) -> None:
        self.clock_ms += ms
        self.txn.tick(self.clock_ms)

    def create_topic(self, name: str, partitions: int = 3) -> None:
        for p in range(partitions):
            self.logs.setdefault((name, p), FakeLog(name, p))

    def partition_log(self, topic: str, partition: int) -> FakeLog | None:
        return self.logs.get((topic, partition))

    def coordinator_for(self, key_type: int, key: str) -> int:
        return self.coordinators.get((key_type, key), 1)

    def notify_all(self) -> None:
        self.notifications += 1
        with self.cond:
            self.cond.notify_all()

    def call(self, request: Any, broker_id: int = 1) -> Any:
        """Run the registered handler for ``request`` (with its own version) as broker ``broker_id``."""
        version = request.API_VERSION
        handler = lookup(request.API_KEY)
        assert handler is not None, f"no handler for api key {request.API_KEY}"
        ctx = RequestContext(broker_id=broker_id, api_key=request.API_KEY, api_version=version,
                             correlation_id=1, client_id="test", connection_id=1)
        with self.lock:
            response = handler(self, ctx, request)  # type: ignore[arg-type]
        assert version == response.API_VERSION
        # the answer must be encodable for that version (what the TCP server will do)
        type(response).decode(response.encode(version=version, header=False), version=version, header=False)
        return response
