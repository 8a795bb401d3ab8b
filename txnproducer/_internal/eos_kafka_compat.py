"""Work-arounds for kafka-python 3.0.12 consumer-group behaviour the processor depends on.

Why: a member that stops applying assignments stalls a pipeline for good, so the processor guards
against a kafka-python bug instead of waiting for a fix. When the group leader rejoins because its
metadata snapshot changed (it assigned before the input topics' metadata was known, or partitions
were added) and the caller's ``poll`` timeout expires during that join, kafka-python keeps the
finished join task but never applies it: ``need_rejoin()`` is False (the snapshot now matches), so no
later ``poll`` looks at the task again. The member then never heartbeats, is dropped after
``session_timeout_ms`` and stays idle forever. Both helpers are best effort and touch only
kafka-python internals that exist in 3.0.x; with other versions they do nothing.
"""

from __future__ import annotations

from typing import Any

from txnproducer._internal.log import get_logger

__all__ = ["load_metadata_before_join", "rescue_lost_join"]

_log = get_logger("txnproducer.eos")


def load_metadata_before_join(consumer: Any) -> None:
    """After ``subscribe``: fetch metadata now (public ``topics()``), so the first assignment is made
    with the input partitions known and the leader's snapshot matches; no metadata-triggered rejoin."""
    try:
        consumer.topics()
    except Exception as exc:  # joining works without it, with one extra rebalance
        _log.warning("eos.metadata_prefetch_failed", error=repr(exc))


def rescue_lost_join(consumer: Any) -> bool:
    """Call after ``poll`` returned (never during it): if a finished join was dropped, request a
    rejoin so the next ``poll`` joins again. Returns True if it did."""
    coordinator = getattr(consumer, "_coordinator", None)
    task = getattr(coordinator, "_join_task", None)
    if coordinator is None or task is None:
        return False
    try:
        if not task.is_done or coordinator.need_rejoin():
            return False
        coordinator.request_rejoin()
    except Exception:  # not the kafka-python we know: leave it alone
        return False
    _log.warning("eos.rejoin_after_lost_assignment")
    return True
