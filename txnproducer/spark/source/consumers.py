"""The consumers a Python worker keeps between tasks (Spark's ``KafkaDataConsumer`` pool, for Python).

Why keep them: a task of a micro-batch reads one range, often a few hundred milliseconds of work,
and opening a consumer costs its bootstrap, metadata and - on a secured cluster - a TLS handshake
and a SASL exchange per broker. Spark reuses a Python worker process for the tasks it runs one after
the other (``spark.python.worker.reuse``, true by default), so a module-level cache lives as long as
the worker: the next task reading with the same settings borrows the consumer, keeps its connections
and fetch sessions, and - when it reads the same partition from where the last range ended, the
usual case for a stream - even the records the consumer fetched ahead.

The cache is keyed by the consumer settings and the isolation level (never logged: they hold
secrets), bounded (:data:`MAX_KEPT` consumers, the least recently used closed first), and every
consumer in it is closed when the worker exits. A consumer is lent to one task at a time; one a task
gave back after an error is closed, not kept (its state is unknown).
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator

from ...consumer import TransactionalConsumer
from .options import SourceOptions

__all__ = ["MAX_KEPT", "borrowed", "close_all"]

#: consumers a Python worker keeps (distinct settings, or ranges read at once by one worker)
MAX_KEPT = 4
_CLOSE_S = 5.0

_Key = tuple[tuple[tuple[str, str], ...], bool]
_kept: OrderedDict[_Key, list[TransactionalConsumer]] = OrderedDict()
_lock = threading.Lock()


def _key(options: SourceOptions) -> _Key:
    return tuple(sorted(options.consumer_settings.items())), options.read_committed


def _count() -> int:
    return sum(len(v) for v in _kept.values())


def _take(key: _Key) -> TransactionalConsumer | None:
    with _lock:
        idle = _kept.get(key)
        if not idle:
            return None
        consumer = idle.pop()
        if not idle:
            del _kept[key]
        return consumer


def _give_back(key: _Key, consumer: TransactionalConsumer) -> None:
    evicted: list[TransactionalConsumer] = []
    with _lock:
        _kept.setdefault(key, []).append(consumer)
        _kept.move_to_end(key)
        while _count() > MAX_KEPT:
            oldest = next(iter(_kept))
            evicted.append(_kept[oldest].pop(0))
            if not _kept[oldest]:
                del _kept[oldest]
    for old in evicted:
        old.close(_CLOSE_S)


@contextlib.contextmanager
def borrowed(options: SourceOptions) -> Iterator[TransactionalConsumer]:
    """A consumer for ``options`` (kept, or new), given back to the cache when the block ends
    normally and closed when it raises."""
    key = _key(options)
    consumer = _take(key)
    if consumer is None or consumer.closed:
        consumer = TransactionalConsumer(options.consumer_config(),
                                         read_uncommitted=not options.read_committed)
    try:
        yield consumer
    except BaseException:
        consumer.close(_CLOSE_S)
        raise
    _give_back(key, consumer)


def close_all() -> None:
    """Close every kept consumer (at the worker's exit; tests)."""
    with _lock:
        consumers = [c for idle in _kept.values() for c in idle]
        _kept.clear()
    for consumer in consumers:
        with contextlib.suppress(Exception):
            consumer.close(_CLOSE_S)


atexit.register(close_all)
