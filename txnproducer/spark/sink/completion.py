"""Driver-side phase two: commit or abort prepared transactions, and fence orphans.

Why separate producers: a prepared transaction is completed by a producer for *its*
transactional id that never calls ``init_transactions()`` (that would abort it) - the
``complete_transaction(state)`` path of brokers without KIP-939, which is also idempotent for a
repeated commit. Orphans (transactions of failed, killed or speculative task attempts whose state
nobody will commit) are ended the other way: ``init_transactions()`` for their id aborts whatever
is open and fences any straggler still writing under it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from txnproducer._internal.log import get_logger

from ...config import ProducerConfig
from ...errors import PreparedTransactionLostError, TxnProducerError
from ...prepared import PreparedTxnState
from ...producer import TransactionalProducer

__all__ = ["SinkCommitError", "complete_states", "fence_transactional_ids"]

_log = get_logger("txnproducer.spark")
_T = TypeVar("_T")
_NO_KWARGS: Mapping[str, Any] = {}


def _submit(pool: ThreadPoolExecutor, fn: Callable[..., _T], *args: Any) -> Future[_T]:
    """``pool.submit`` in a copy of the caller's context: the producers' spans in the pool's threads
    are children of the decision's span (:mod:`txnproducer.spark.sink.tracing`)."""
    return pool.submit(contextvars.copy_context().run, fn, *args)


class SinkCommitError(RuntimeError):
    """Completing a batch's prepared transactions failed; the message lists each failure."""


def _producer(settings: dict[str, str], transactional_id: str, timeout_s: float,
              producer_kwargs: Mapping[str, Any]) -> TransactionalProducer:
    config = {**settings, "transactional.id": transactional_id}
    if "max.block.ms" not in config and "max_block_ms" not in config:
        config["max.block.ms"] = str(int(timeout_s * 1000))
    return TransactionalProducer(ProducerConfig.from_mapping(config), **producer_kwargs)


def _complete_one(state: PreparedTxnState, commit: bool, settings: dict[str, str],
                  timeout_s: float, producer_kwargs: Mapping[str, Any]) -> BaseException | None:
    producer = _producer(settings, state.transactional_id, timeout_s, producer_kwargs)
    try:
        producer.complete_transaction(state, commit=commit, timeout=timeout_s)
        return None
    except TxnProducerError as exc:
        return exc
    finally:
        producer.close(timeout_s)


def complete_states(states: Iterable[PreparedTxnState], *, commit: bool, settings: dict[str, str],
                    parallelism: int, timeout_s: float,
                    producer_kwargs: Mapping[str, Any] = _NO_KWARGS) -> None:
    """Complete every state (concurrently); raise SinkCommitError naming each failure.
    ``producer_kwargs``: for the producers (their OpenTelemetry providers).

    Aborting tolerates transactions that are already gone; committing does not: a
    PreparedTransactionLostError means records are lost, which must stop the query.
    """
    todo = [s for s in states if not s.is_empty]
    if not todo:
        return
    failures: list[str] = []
    lost = False
    with ThreadPoolExecutor(max_workers=min(parallelism, len(todo)),
                            thread_name_prefix="txnkafka-complete") as pool:
        futures = [(s, _submit(pool, _complete_one, s, commit, settings, timeout_s, producer_kwargs))
                   for s in todo]
        for state, future in futures:
            error = future.result()
            if error is None:
                _log.info("txn.spark_completed", transactional_id=state.transactional_id,
                          producer_id=state.producer_id, epoch=state.epoch, committed=commit)
                continue
            lost = lost or isinstance(error, PreparedTransactionLostError)
            failures.append(f"{state}: {error}")
    if failures:
        verb = "commit" if commit else "abort"
        raise SinkCommitError(
            f"txnkafka could not {verb} {len(failures)} of {len(todo)} prepared transaction(s)"
            + (" - RECORDS WERE LOST (the batch must be rewritten)" if lost else "")
            + ": " + "; ".join(failures)
        )


def fence_transactional_ids(ids: Iterable[str], *, settings: dict[str, str], parallelism: int,
                            timeout_s: float, producer_kwargs: Mapping[str, Any] = _NO_KWARGS) -> None:
    """Abort whatever transaction is open under each id (and fence its producer)."""
    todo = sorted(set(ids))
    if not todo:
        return

    def fence(transactional_id: str) -> None:
        producer = _producer(settings, transactional_id, timeout_s, producer_kwargs)
        try:
            producer.init_transactions(timeout=timeout_s)
        finally:
            producer.close(timeout_s)
        # warning: a crashed or superseded task attempt's transaction was aborted - worth seeing in
        # the executor/driver logs without any logging setup (Python workers have none)
        _log.warning("txn.spark_orphan_fenced", transactional_id=transactional_id)

    with ThreadPoolExecutor(max_workers=min(parallelism, len(todo)),
                            thread_name_prefix="txnkafka-fence") as pool:
        for future in [_submit(pool, fence, t) for t in todo]:
            future.result()
