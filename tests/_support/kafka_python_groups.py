"""kafka-python 3.0.12 consumer-group members in tests and benchmarks: the guard that keeps them in
their group, and a crash-like close.

Why here: ``TransactionalProcessor`` no longer runs a kafka-python consumer (it reads with
``TransactionalConsumer`` and our own group member, ``txnproducer/_internal/group``), so these
work-arounds left the library (they were ``txnproducer/eos/kafka_compat.py``). What still runs
kafka-python members is test and benchmark code: MockCluster's group coordinator is tested with
third-party clients (``tests/mock/test_consumer_group.py``, ``test_cluster_group_faults.py``,
``test_producer_txn.py``), ``test_kafka_python_rejoin.py`` shows the failure the guard repairs, and
``benchmarks/group_membership.py`` measures kafka-python's coordinator beside ours.

Two ways a 3.0.12 member ends up outside its group for good while its ``poll`` keeps returning, both
repaired by :func:`rescue_lost_join`:

1. *A finished join nobody applies.* When the caller's ``poll`` timeout expires while the join task
   is in flight and the task then finishes, ``need_rejoin()`` can be False by the next ``poll`` (the
   leader's metadata snapshot now matches), so no later ``poll`` looks at the task again.
2. *A join abandoned after an error.* A join started only because ``need_rejoin()`` said so (a
   subscription or leader-snapshot change, with ``rejoin_needed`` False) clears that trigger while
   it runs; if the attempt then fails without requesting a rejoin (JoinGroup answered
   REBALANCE_IN_PROGRESS or a coordinator error, a dropped connection or request timeout),
   ``join_group_async`` re-checks ``need_rejoin()``, finds False and returns "joined". The member
   is left REBALANCING with heartbeats disabled and no join task (kafka/coordinator/base.py,
   ``join_group_async``). Reproduced deterministically against MockCluster with an injected
   REBALANCE_IN_PROGRESS on a follower's JoinGroup after a subscription change.

Either way the member never heartbeats, the coordinator drops it after the session or rebalance
timeout, and it stays idle. The helpers are best effort and touch only kafka-python internals that
exist in 3.0.x; with other versions they do nothing.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["close_consumer_abruptly", "rescue_lost_join"]

_log = logging.getLogger("tests.kafka_python_groups")

try:
    from kafka.structs import MemberState

    _STABLE: str = MemberState.STABLE
except (ImportError, AttributeError):  # pragma: no cover - another kafka-python: compare nothing
    _STABLE = "<stable>"


def rescue_lost_join(consumer: Any) -> bool:
    """Call after ``poll`` returned (never during it): if the member fell out of its group in one
    of the two ways of the module docstring, request a rejoin so the next ``poll`` joins again.
    Returns True if it did.

    Safe for a healthy member: a join in progress has an unfinished task; a member that joined is
    STABLE with no task; any other state already has ``need_rejoin()`` True. The IO thread can only
    move the state towards "rejoin needed" meanwhile, which makes the checks false; the worst case
    is one extra rebalance.
    """
    coordinator = getattr(consumer, "_coordinator", None)
    if coordinator is None or not hasattr(coordinator, "_join_task"):
        return False
    try:
        subscription = getattr(consumer, "_subscription", None)
        if getattr(coordinator, "group_id", None) is None or subscription is None \
                or not subscription.partitions_auto_assigned():
            return False  # no group membership to lose (assign() or no group id)
        task = coordinator._join_task
        if task is not None:
            if not task.is_done or coordinator.need_rejoin():
                return False
            reason = "finished_join_not_applied"
        else:
            if _is_stable(coordinator) or coordinator.need_rejoin():
                return False
            reason = "join_abandoned_after_error"
        coordinator.request_rejoin()
    except Exception:  # not the kafka-python we know: leave it alone
        return False
    _log.warning("kafka-python member rejoins after a lost assignment (%s)", reason)
    return True


def _is_stable(coordinator: Any) -> bool:
    """True unless the member is provably mid-rebalance (an unknown shape counts as stable: no
    action). kafka-python 3.0.x keeps the state as ``kafka.structs.MemberState`` strings."""
    state = getattr(coordinator, "state", None)
    return not isinstance(state, str) or state == _STABLE


def close_consumer_abruptly(consumer: Any) -> None:
    """Drop a kafka-python consumer's connections without LeaveGroup (a crash, for tests)."""
    if consumer is None:
        return
    try:
        consumer._closed = True
        consumer._client.close()
    except Exception:  # best effort: kafka-python internals
        _log.warning("abrupt close of a kafka-python consumer failed", exc_info=True)
