"""What can happen to a broker: MockCluster's faults on whole brokers.

Why apart from ``cluster.py``: these are the faults a client's failover is measured against, and each is a
small model of what Kafka does, stated here:

- ``stop_broker`` / ``start_broker``: kill -9 and restart. The port closes, connections drop, the broker
  leaves Metadata, its partitions get new leaders and its coordinators move (at once: the mock's controller
  needs no session timeout to notice a closed port).
- ``freeze_broker`` / ``thaw_broker``: SIGSTOP and SIGCONT, a grey failure. The port and every connection
  stay open, the kernel still takes new connections, requests are read - and nothing is handled or
  answered until the thaw; then what waited is handled in order and answered from the cluster's state at
  that moment - except that a request the broker read before it was fenced is answered as Kafka's
  fenced broker ends it, whether or not it has rejoined since: its log append fails, it no longer leads
  (NOT_COORDINATOR to a coordinator's request, NOT_LEADER_OR_FOLLOWER to a Produce or Fetch). A
  fenced broker stays out of the cluster after its thaw until ``rejoin_broker`` (Kafka unfences it once
  it heartbeats again, and gives its preferred leaderships back at the next preferred-leader election).
  A leader (group coordinator) that must check a Produce (TxnOffsetCommit v5) with a frozen transaction
  coordinator holds it until that coordinator answers again, even after the coordinator moved - Kafka's
  leader keeps waiting on the request it sent.
- ``fence_broker``: the controller's decision about a silent broker, made after
  ``broker.session.timeout.ms`` (9 s on Kafka; ``freeze_broker(fence_after_s=...)`` schedules it): the
  broker leaves Metadata, its partitions get new leaders (epoch + 1) and the keys it coordinates move to
  the next live broker - those ``move_coordinator`` had put there too. Its process, frozen or not, keeps
  its connections.
- ``black_hole``: a network that drops: requests are read and lost, never answered, not even after the
  black hole is lifted.
- ``move_coordinator``: a coordinator moved while every broker is up (a preferred-leader election).

Simplifications: a frozen broker's late answers come from the cluster's current state, not from a stale
copy of it (a real broker catches up with the controller's records before most of them are handled); a
new coordinator has nothing to load (no COORDINATOR_LOAD_IN_PROGRESS unless injected); a thawed broker
takes its preferred leaderships back at once (Kafka waits for it to catch up and for the next
preferred-leader election).
"""

from __future__ import annotations

import threading
from typing import Any

from .cluster_state import GROUP_KEY, TRANSACTION_KEY, ClusterState
from .faults import FaultPlan

__all__ = ["BrokerFaults", "key_type_code"]


class BrokerFaults:
    """Faults on brokers; the class using it provides ``state``, ``faults`` and ``_servers``."""

    state: ClusterState
    faults: FaultPlan
    _servers: dict[int, Any]
    _fence_timers: dict[int, threading.Timer]

    def stop_broker(self, broker_id: int) -> None:
        """Stop a broker: its port closes, connections drop, it leaves Metadata, its partitions get new
        leaders (leader epoch + 1) and its coordinator keys move to the next alive broker."""
        server = self._servers[broker_id]
        server.stop()
        with self.state.lock:
            self.state.brokers[broker_id].alive = False
            self.state.rebalance_leaders()

    def start_broker(self, broker_id: int) -> None:
        """Restart a stopped broker on the same port; preferred leadership moves back to it."""
        server = self._servers[broker_id]
        if server.running:
            return
        server.start()
        with self.state.lock:
            self.state.brokers[broker_id].alive = True
            self.state.brokers[broker_id].port = server.port
            self.state.rebalance_leaders()

    def freeze_broker(self, broker_id: int, fence_after_s: float | None = None) -> None:
        """Freeze a broker as SIGSTOP does (the module docstring): connections stay open, nothing is
        handled or answered until :meth:`thaw_broker`. ``fence_after_s``: the controller fences it that
        many seconds from now (:meth:`fence_broker`) unless it is thawed first."""
        if broker_id not in self.state.brokers:
            raise ValueError(f"no broker {broker_id}")
        self.faults.set_frozen(broker_id, True)
        if fence_after_s is not None:
            timer = threading.Timer(fence_after_s, self._fence_if_frozen, args=(broker_id,))
            timer.daemon = True
            old = self._fence_timers.pop(broker_id, None)
            if old is not None:
                old.cancel()
            self._fence_timers[broker_id] = timer
            timer.start()

    def _fence_if_frozen(self, broker_id: int) -> None:
        if self.faults.is_frozen(broker_id):
            self.fence_broker(broker_id)

    def fence_broker(self, broker_id: int) -> None:
        """The controller fences a broker whose session ran out (the module docstring): it leaves
        Metadata, its leaderships and coordinators move to live brokers; its connections stay."""
        self.faults.note_fence(broker_id)
        with self.state.lock:
            self.state.brokers[broker_id].alive = False
            self.state.rebalance_leaders()

    def thaw_broker(self, broker_id: int, rejoin: bool = False) -> None:
        """SIGCONT: what the broker read meanwhile is handled and answered in order (late answers, from
        the cluster's state now). A fenced broker stays fenced until :meth:`rejoin_broker` (or
        ``rejoin=True``: at once, racing the late answers). No-op for a broker that is not frozen."""
        timer = self._fence_timers.pop(broker_id, None)
        if timer is not None:
            timer.cancel()
        self.faults.set_frozen(broker_id, False)
        if rejoin:
            self.rejoin_broker(broker_id)

    def rejoin_broker(self, broker_id: int) -> None:
        """The controller unfences a broker whose process runs again: it comes back into Metadata and
        takes its preferred leaderships and coordinators back (a stopped one waits for its start)."""
        if self.faults.is_frozen(broker_id):
            raise ValueError(f"broker {broker_id} is frozen: thaw it first")
        with self.state.lock:
            info = self.state.brokers[broker_id]
            if not info.alive and self._servers[broker_id].running:
                info.alive = True
                self.state.rebalance_leaders()

    def frozen_brokers(self) -> set[int]:
        """The brokers frozen now."""
        return self.faults.frozen()

    def move_coordinator(self, key: str, to_broker: int, key_type: str = "transaction") -> None:
        """Make ``to_broker`` the coordinator of ``key``; the old one answers NOT_COORDINATOR from now on."""
        if to_broker not in self.state.brokers:
            raise ValueError(f"no broker {to_broker}")
        with self.state.lock:
            self.state.coordinator_overrides[(key_type_code(key_type), key)] = to_broker

    def black_hole(self, broker_id: int | None = None, enabled: bool = True) -> None:
        """Make a broker (or all) accept and read requests but never answer them (until disabled; what
        was read meanwhile is lost): a network that drops. ``freeze_broker`` is a SIGSTOP instead."""
        self.faults.set_black_hole(broker_id, enabled)

    def clear_faults(self) -> None:
        """Forget every pending injected error, delay, drop rule and black hole; thaw every frozen
        broker; every fenced broker rejoins."""
        for timer in self._fence_timers.values():
            timer.cancel()
        self._fence_timers.clear()
        self.faults.clear()
        for broker_id in sorted(self.state.brokers):
            self.rejoin_broker(broker_id)


def key_type_code(key_type: str | int) -> int:
    """FindCoordinator's key type for ``"transaction"`` / ``"group"`` (or a code as it is)."""
    if isinstance(key_type, int):
        return key_type
    if key_type in ("transaction", "txn"):
        return TRANSACTION_KEY
    if key_type == "group":
        return GROUP_KEY
    raise ValueError('key_type must be "transaction" or "group"')
