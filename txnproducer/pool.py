"""TransactionalProducerPool: N producers for N transactions at the same time, from threads.

Why a pool: a producer runs one transaction at a time (one transactional id, one open transaction:
Kafka's rule), and - as in the Java client - every thread's ``send()`` joins the open transaction.
A service whose threads each need a transaction of their own therefore needs a producer per
concurrent transaction. The pool holds ``size`` producers with the stable transactional ids
``<prefix>-0`` ... ``<prefix>-<size-1>``; ``with pool.transaction() as producer:`` takes an idle one
(FIFO, waiting at most ``max_block_ms``), runs one transaction on it and gives it back.

Sizing: ``size`` is how many transactions may be open at once. Each producer has its own Sender
thread and broker connections, and each open transaction holds back what ``read_committed``
consumers see of its partitions until it ends: keep ``size`` to the concurrency the service needs
(a few, tens at most), not one per request.

Fencing: the ids are the identity of the pool. A pool started again with the same prefix (a
restart, a new deployment) fences the old pool's producers and aborts their open transactions -
which is the point: zombies cannot commit. Two pools *running* with the same prefix fence each
other: the one initialized last wins, and the other pool's next transaction on a fenced producer
raises ProducerFencedError, after which that pool is closed and every call raises it. Give every
running instance its own prefix (``orders-api-<host or pod name>``), and keep ``size`` when
restarting (ids of a smaller pool's missing members are not fenced: a transaction a crashed
predecessor left open on them is aborted only by the coordinator after ``transaction_timeout_ms``).

:mod:`txnproducer.aio.pool` is the same for asyncio.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

from txnproducer import errors
from txnproducer._internal.txn.state import State
from txnproducer.config import ProducerConfig
from txnproducer.producer import TransactionalProducer

__all__ = ["TransactionalProducerPool", "fatal_error_of", "fenced_pool_error", "member_configs"]


def member_configs(config: ProducerConfig | Mapping[str, Any] | None, settings: Mapping[str, Any],
                   size: int, transactional_id_prefix: str | None) -> list[ProducerConfig]:
    """The validated settings of a pool's members: ``transactional_id`` ``<prefix>-<n>``.

    ConfigError for a size that is not an int >= 1, a missing prefix, or a transactional id given
    (a pool names its producers; a ProducerConfig's own id is replaced)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise errors.ConfigError(f"size must be an int >= 1 (transactions open at once), got {size!r}")
    if not isinstance(transactional_id_prefix, str) or not transactional_id_prefix:
        raise errors.ConfigError(
            "transactional_id_prefix must be a non-empty string: the pool's producers are '<prefix>-0' "
            f"... '<prefix>-{size - 1}', stable across restarts; got {transactional_id_prefix!r}")
    given = dict(config) if isinstance(config, Mapping) else {}
    named = [k for k in (*given, *settings) if k in ("transactional_id", "transactional.id")]
    if named:
        raise errors.ConfigError(
            f"a pool names its producers '{transactional_id_prefix}-<n>': pass transactional_id_prefix, "
            f"not {named[0]!r}")
    first = ProducerConfig.from_arguments(
        config, {**settings, "transactional_id": f"{transactional_id_prefix}-0"}) \
        if not isinstance(config, ProducerConfig) \
        else config.with_overrides(**settings, transactional_id=f"{transactional_id_prefix}-0")
    return [first] + [first.with_overrides(transactional_id=f"{transactional_id_prefix}-{n}")
                      for n in range(1, size)]


def fenced_pool_error(prefix: str, cause: BaseException) -> errors.ProducerFencedError:
    """What every call of a pool whose producer was fenced raises."""
    error = errors.ProducerFencedError(
        f"the pool with transactional_id_prefix {prefix!r} was fenced: another producer (another pool "
        f"with the same prefix?) took over {prefix}-<n> ({cause}). This pool is closed; two running pools "
        "must not share a prefix: give each instance its own",
        error_code=errors.ProducerFencedError.error_code)
    error.__cause__ = cause
    return error


def fatal_error_of(member: Any) -> errors.FatalError | None:
    """The fatal error a producer (sync or the async one's core) is stopped by, None if it is not:
    a call in FATAL_ERROR raises it again, with its class."""
    if member.state is not State.FATAL_ERROR:
        return None
    try:
        member.begin_transaction()
    except errors.FatalError as exc:
        return exc
    except errors.TxnProducerError:
        return None
    return None  # not reached: FATAL_ERROR refuses every call


def _settle(member: TransactionalProducer) -> None:
    """Finish what the last transaction on ``member`` left: a commit or abort whose wait timed out
    (waited for again), a transaction that can only abort (aborted)."""
    state = member.state
    if state is State.COMMITTING_TRANSACTION:
        with contextlib.suppress(errors.AbortableError):
            member.commit_transaction()
        state = member.state
    if state in (State.IN_TRANSACTION, State.ABORTING_TRANSACTION, State.ABORTABLE_ERROR):
        member.abort_transaction()


class _Waiter:
    __slots__ = ("event", "member")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.member: TransactionalProducer | None = None


class TransactionalProducerPool:
    """``size`` :class:`~txnproducer.TransactionalProducer` with ids ``<prefix>-<n>`` (see the
    module docstring for sizing and fencing). Thread-safe.

    ``TransactionalProducerPool(size=4, transactional_id_prefix="orders-api-host1",
    bootstrap_servers=..., **settings)``; settings as the producer takes them (keywords, a mapping
    in either spelling, or a ProducerConfig), without ``transactional_id``. ConfigError on
    construction for invalid settings. Call :meth:`init_transactions` once before the first
    transaction.
    """

    def __init__(self, config: ProducerConfig | Mapping[str, Any] | None = None, *, size: int,
                 transactional_id_prefix: str | None = None, **settings: Any) -> None:
        self._configs = member_configs(config, settings, size, transactional_id_prefix)
        self._prefix = str(transactional_id_prefix)
        self._max_block_s = self._configs[0].max_block_ms / 1000
        self._lock = threading.Lock()
        self._members: list[TransactionalProducer] = []
        try:
            for member_config in self._configs:
                self._members.append(TransactionalProducer(member_config))
        except BaseException:
            for member in self._members:
                member.close(0)
            raise
        self._ready: set[TransactionalProducer] = set()  # initialized (a replacement is not, at first)
        self._idle: deque[TransactionalProducer] = deque(self._members)
        self._waiters: deque[_Waiter] = deque()
        self._fenced: errors.ProducerFencedError | None = None
        self._closed = False

    @property
    def size(self) -> int:
        return len(self._configs)

    @property
    def transactional_ids(self) -> list[str]:
        return [c.transactional_id for c in self._configs]

    def init_transactions(self, timeout: float | None = None) -> None:
        """Initialize every producer (fencing older instances with the same ids and aborting what
        they left open), one after the other. ``timeout``: seconds per producer, default
        ``max_block_ms``. Raises what the producer's ``init_transactions`` raises."""
        self._check_usable()
        for member in list(self._members):
            if member not in self._ready:
                member.init_transactions(timeout)
                self._ready.add(member)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[TransactionalProducer]:
        """``with pool.transaction() as producer:`` takes an idle producer (FIFO, waiting at most
        ``max_block_ms``: TimeoutError), begins a transaction on it, commits on success, aborts and
        re-raises on an exception, and gives the producer back.

        Send only through the yielded producer, and only in the block. A producer that fails
        fatally is closed and replaced (the replacement initializes on its first use); a fenced
        one closes the pool (ProducerFencedError from then on). Raises what the producer's
        ``transaction()`` raises, TimeoutError, ClosedError, ProducerFencedError.
        """
        member = self._take()
        try:
            if member not in self._ready:
                member.init_transactions()
                self._ready.add(member)
            _settle(member)
            with member.transaction():
                yield member
        except BaseException as exc:
            # a fatal error may be the abort's, after the error the block saw (a zombie's records
            # fail with INVALID_PRODUCER_EPOCH, then its abort is fenced)
            fatal = exc if isinstance(exc, errors.FatalError) else fatal_error_of(member)
            if isinstance(fatal, errors.ProducerFencedError):
                self._fence(fatal)
                raise self._fenced or fatal from exc
            if fatal is not None:
                member = self._replace(member)
            raise
        finally:
            self._give(member)

    # -- the idle producers, FIFO --------------------------------------------------------------------

    def _take(self) -> TransactionalProducer:
        with self._lock:
            self._check_usable()
            if self._idle and not self._waiters:
                return self._idle.popleft()
            waiter = _Waiter()
            self._waiters.append(waiter)
        if waiter.event.wait(self._max_block_s):
            with self._lock:
                member = waiter.member
                self._check_usable()
            if member is not None:
                return member
        with self._lock:
            if waiter.member is not None:  # handed over just as the wait ran out: ours after all
                return waiter.member
            self._waiters.remove(waiter)
            self._check_usable()
            busy = self.size - len(self._idle)
        raise errors.TimeoutError(
            f"pool {self._prefix!r}: no producer became free within max_block_ms="
            f"{int(self._max_block_s * 1000)} ({busy} of {self.size} in transactions). Raise size or "
            "max_block_ms, or shorten transactions")

    def _give(self, member: TransactionalProducer) -> None:
        with self._lock:
            if self._closed:
                return
            if self._waiters:
                waiter = self._waiters.popleft()
                waiter.member = member
                waiter.event.set()
            else:
                self._idle.append(member)

    def _check_usable(self) -> None:
        if self._fenced is not None:
            raise self._fenced
        if self._closed:
            raise errors.ClosedError(f"pool {self._prefix!r} is closed; create a new one")

    def _replace(self, failed: TransactionalProducer) -> TransactionalProducer:
        """A producer that failed fatally: closed, and a new one with its id in its place."""
        failed.close(0)
        fresh = TransactionalProducer(failed.config)
        with self._lock:
            self._members[self._members.index(failed)] = fresh
            self._ready.discard(failed)
        return fresh

    def _fence(self, cause: errors.ProducerFencedError) -> None:
        with self._lock:
            if self._fenced is None:
                self._fenced = fenced_pool_error(self._prefix, cause)
        self.close(0)

    # -- lifecycle -----------------------------------------------------------------------------------

    def close(self, timeout: float | None = None) -> None:
        """Close every producer (each aborts its open transaction); waiting calls end with
        ClosedError. ``timeout``: seconds in all, default ``max_block_ms``. Idempotent."""
        with self._lock:
            already = self._closed
            self._closed = True
            waiters, self._waiters = list(self._waiters), deque()
        for waiter in waiters:
            waiter.event.set()
        if already:
            return
        deadline = time.monotonic() + (self._max_block_s if timeout is None else timeout)
        for member in self._members:
            member.close(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> TransactionalProducerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TransactionalProducerPool(transactional_id_prefix={self._prefix!r}, size={self.size})"
