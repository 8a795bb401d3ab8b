"""Migration from the directory commit log of earlier versions (the ``commit.log`` option).

Why it runs at all: a query that was stopped (or crashed) under an earlier version may have left
work only that directory knows about - a batch recorded as committed whose transactions were not
all completed, transactions of attempts nobody will commit, and the id of the last committed
micro-batch, which Spark replays if its own commit log missed it. :func:`finish_legacy_log` settles
all three once, on the driver, before the query's first task; afterwards the directory is not
touched again and the option can be removed (CHANGELOG, "Migrating").
"""

from __future__ import annotations

import os

from txnproducer._internal.log import get_logger

from .commit_log import CommitLog
from .completion import complete_states, fence_transactional_ids
from .decision import COMMIT, DONE, Decision
from .options import SinkOptions
from .state_topic import ANNOUNCEMENTS, StateTopic

__all__ = ["finish_legacy_log"]

_log = get_logger("txnproducer.spark")
_warned: set[str] = set()


def finish_legacy_log(options: SinkOptions, state: StateTopic) -> None:
    """Finish what the ``commit.log`` directory recorded (idempotent; nothing if it is absent)."""
    path = options.commit_log
    if path is None or not os.path.isdir(path):
        return
    if path not in _warned:  # Spark creates the writer for every batch: say it once per process
        _warned.add(path)
        _log.warning("txn.spark_commit_log_deprecated", path=path,
                     hint="the sink keeps its state in the Kafka topic state.topic; remove commit.log")
    log = CommitLog(path)
    settings, parallelism, timeout_s = (options.producer_settings, options.commit_parallelism,
                                        options.commit_timeout_s)
    for entry in log.undone():
        _log.warning("txn.spark_recovering_batch", key=entry.key, transactions=len(entry.states))
        complete_states(entry.states, commit=True, settings=settings, parallelism=parallelism,
                        timeout_s=timeout_s)
        log.mark_done(entry.key)
    # attempts nobody will commit (fencing one whose commit just completed changes nothing)
    fence_transactional_ids([p.transactional_id for p in log.pending()], settings=settings,
                            parallelism=parallelism, timeout_s=timeout_s)
    for p in log.pending():
        log.remove_pending(p.transactional_id)
    batches = log.committed_batches()
    prefix = options.transactional_id_prefix
    if batches and state.latest_decision(prefix) is None:
        # "" matches any query id: Spark's replay of this batch is skipped, whatever the query's id
        end = state.end_offset(ANNOUNCEMENTS)
        state.write_decision(Decision(prefix, batches[-1], COMMIT, DONE, (), "", end, end))
        _log.warning("txn.spark_commit_log_migrated", prefix=prefix, last_batch=batches[-1])
