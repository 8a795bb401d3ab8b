"""The sink's bounded pool of transactional ids: ``<prefix>-<partition>-<slot>``.

Why a pool: the transaction coordinator keeps every transactional id it has seen for
``transactional.id.expiration.ms`` (7 days by default). An id per task attempt and micro-batch
(what this sink did before) means a query with 200 partitions and a 1 s trigger leaves 17 million
ids a day, which exhausts the brokers' memory - the reason Flink's KafkaSink moved to a pool. Here
the ids depend on the partition and on which of a partition's concurrent attempts is writing, never
on the batch: each micro-batch reuses them, so a query never has more than ``partitions x slots``
ids.

Which slot an attempt takes: it starts at ``attempt number mod slots`` (Spark numbers a task's
attempts 0, 1, 2 ... - retries and speculative copies), and skips an id whose transaction is open
at the coordinator (``Ongoing`` or being ended): that is another live attempt of the same partition
(a speculative copy, or an attempt of a stage Spark resubmitted, whose attempt numbers start at 0
again), and registering its id would abort the transaction it is writing or has prepared. An
attempt that finds every slot busy fails with :class:`PoolExhaustedError` (Spark retries it; if
that persists, raise ``transactional.id.slots``).
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import RetriableError

__all__ = ["PoolExhaustedError", "choose_slot", "pool_bound", "transactional_id"]


class PoolExhaustedError(RetriableError):
    """Every transactional id of the task's partition has an open transaction: other attempts of
    the same partition are still writing. Spark retries the task; raise ``transactional.id.slots``
    if this persists."""


def transactional_id(prefix: str, partition: int, slot: int) -> str:
    return f"{prefix}-{partition}-{slot}"


def pool_bound(partitions: int, slots: int) -> int:
    """The most transactional ids a query with ``partitions`` Spark partitions can use."""
    return partitions * slots


def choose_slot(prefix: str, partition: int, attempt: int, slots: int,
                busy: Callable[[str], bool]) -> tuple[int, str]:
    """(slot, transactional id) for this attempt: the first id from ``attempt mod slots`` on whose
    transaction is not open (``busy`` asks the coordinator)."""
    for step in range(slots):
        slot = (attempt + step) % slots
        candidate = transactional_id(prefix, partition, slot)
        if not busy(candidate):
            return slot, candidate
    raise PoolExhaustedError(
        f"all {slots} transactional ids of partition {partition} ({prefix}-{partition}-0..{slots - 1})"
        " have an open transaction: other attempts of this partition are still writing. Spark will"
        " retry this task; if this persists, raise the option transactional.id.slots")
