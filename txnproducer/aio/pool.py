"""AsyncTransactionalProducerPool: N asyncio producers for N transactions at the same time.

One :class:`~txnproducer.aio.AsyncTransactionalProducer` runs one transaction at a time; tasks
sharing it take turns (:mod:`.turns`). A service whose handlers need transactions *at the same
time* uses a pool: ``size`` producers with the stable transactional ids ``<prefix>-0`` ...
``<prefix>-<size-1>``, and ``async with pool.transaction() as producer:`` takes an idle one (FIFO,
waiting at most ``max_block_ms``, cancellable), runs one transaction on it and gives it back.
Sizing and fencing are the sync pool's (:mod:`txnproducer.pool`): ``size`` is how many
transactions may be open at once; two *running* pools with the same prefix fence each other (the
pool whose producer is fenced closes and raises ProducerFencedError from then on); a restart with
the same prefix and size fences the previous instance, as it should.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from txnproducer import errors
from txnproducer.aio.producer import AsyncTransactionalProducer
from txnproducer.config import ProducerConfig
from txnproducer.pool import fatal_error_of, fenced_pool_error, member_configs

__all__ = ["AsyncTransactionalProducerPool"]


class AsyncTransactionalProducerPool:
    """``size`` AsyncTransactionalProducers with ids ``<prefix>-<n>`` (see the module docstring).

    ``AsyncTransactionalProducerPool(size=4, transactional_id_prefix="orders-api-pod-7",
    bootstrap_servers=..., **settings)``; settings as the producer takes them, without
    ``transactional_id``. ConfigError on construction for invalid settings. Create it when the
    service starts (each producer starts a thread), ``await pool.init_transactions()`` once, use it
    from one event loop; ``async with`` closes it.
    """

    def __init__(self, config: ProducerConfig | Mapping[str, Any] | None = None, *, size: int,
                 transactional_id_prefix: str | None = None, **settings: Any) -> None:
        self._configs = member_configs(config, settings, size, transactional_id_prefix)
        self._prefix = str(transactional_id_prefix)
        self._max_block_s = self._configs[0].max_block_ms / 1000
        self._members: list[AsyncTransactionalProducer] = []
        try:
            for member_config in self._configs:
                self._members.append(AsyncTransactionalProducer(member_config))
        except BaseException:  # (a thread that would not start): stop those that did
            for member in self._members:
                member._core.close(0)
            raise
        self._ready: set[AsyncTransactionalProducer] = set()
        self._idle: deque[AsyncTransactionalProducer] = deque(self._members)
        self._waiters: deque[asyncio.Future[AsyncTransactionalProducer]] = deque()
        self._fenced: errors.ProducerFencedError | None = None
        self._closed = False

    @property
    def size(self) -> int:
        return len(self._configs)

    @property
    def transactional_ids(self) -> list[str]:
        return [c.transactional_id for c in self._configs]

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Initialize every producer at once (fencing older instances with the same ids and
        aborting what they left open). ``timeout``: seconds, default ``max_block_ms``. Raises what
        the producer's ``init_transactions`` raises (the first error; the others still finish)."""
        self._check_usable()
        todo = [m for m in self._members if m not in self._ready]
        outcomes = await asyncio.gather(*(m.init_transactions(timeout) for m in todo), return_exceptions=True)
        for member, outcome in zip(todo, outcomes, strict=True):
            if outcome is None:
                self._ready.add(member)
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        if failures:
            raise failures[0]

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncTransactionalProducer]:
        """``async with pool.transaction() as producer:`` takes an idle producer (FIFO, at most
        ``max_block_ms``: TimeoutError; cancellable), runs ``producer.transaction()`` on it - begin,
        commit on success, abort and re-raise on an exception or cancellation - and gives it back.

        Send only through the yielded producer, from this task (and tasks it starts in the block).
        A producer that fails fatally is closed and replaced (the replacement initializes on first
        use); a fenced one closes the pool (ProducerFencedError from then on).
        """
        member = await self._take()
        try:
            if member not in self._ready:
                await member.init_transactions()
                self._ready.add(member)
            async with member.transaction():
                yield member
        except BaseException as exc:
            # a fatal error may be the abort's, after the error the block saw (a zombie's records
            # fail with INVALID_PRODUCER_EPOCH, then its abort is fenced)
            fatal = exc if isinstance(exc, errors.FatalError) else fatal_error_of(member)
            if isinstance(fatal, errors.ProducerFencedError):
                await self._fence(fatal)
                raise self._fenced or fatal from exc
            if fatal is not None:
                member = await self._replace(member)
            raise
        finally:
            self._give(member)

    # -- the idle producers, FIFO --------------------------------------------------------------------

    async def _take(self) -> AsyncTransactionalProducer:
        self._check_usable()
        if self._idle and not any(not w.done() for w in self._waiters):
            return self._idle.popleft()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[AsyncTransactionalProducer] = loop.create_future()
        self._waiters.append(fut)
        timer = loop.call_later(self._max_block_s, self._expire, fut)
        try:
            return await fut
        except BaseException:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self._give(fut.result())  # handed to us as we were cancelled: pass it on
            elif fut in self._waiters:
                self._waiters.remove(fut)
            raise
        finally:
            timer.cancel()

    def _expire(self, fut: asyncio.Future[AsyncTransactionalProducer]) -> None:
        if not fut.done():
            busy = self.size - len(self._idle)
            fut.set_exception(errors.TimeoutError(
                f"pool {self._prefix!r}: no producer became free within max_block_ms="
                f"{int(self._max_block_s * 1000)} ({busy} of {self.size} in transactions). Raise size or "
                "max_block_ms, or shorten transactions"))

    def _give(self, member: AsyncTransactionalProducer) -> None:
        if self._closed:
            return
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(member)
                return
        self._idle.append(member)

    def _check_usable(self) -> None:
        if self._fenced is not None:
            raise self._fenced
        if self._closed:
            raise errors.ClosedError(f"pool {self._prefix!r} is closed; create a new one")

    async def _replace(self, failed: AsyncTransactionalProducer) -> AsyncTransactionalProducer:
        """A producer that failed fatally: closed (at once), a new one with its id in its place."""
        await failed.close(0)
        fresh = AsyncTransactionalProducer(failed.config)
        self._members[self._members.index(failed)] = fresh
        self._ready.discard(failed)
        return fresh

    async def _fence(self, cause: errors.ProducerFencedError) -> None:
        if self._fenced is None:
            self._fenced = fenced_pool_error(self._prefix, cause)
        await self.close(0)

    # -- lifecycle -----------------------------------------------------------------------------------

    async def close(self, timeout: float | None = None) -> None:
        """Close every producer at once (each aborts its open transaction); tasks waiting for a
        producer get ClosedError. ``timeout``: seconds, default ``max_block_ms``. Idempotent."""
        already, self._closed = self._closed, True
        waiters, self._waiters = list(self._waiters), deque()
        closed = errors.ClosedError(f"pool {self._prefix!r} was closed while this task waited for a producer")
        for fut in waiters:
            if not fut.done():
                fut.set_exception(self._fenced or closed)
        if already:
            return
        deadline = time.monotonic() + (self._max_block_s if timeout is None else timeout)
        await asyncio.gather(*(m.close(max(0.0, deadline - time.monotonic())) for m in self._members))

    async def __aenter__(self) -> AsyncTransactionalProducerPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncTransactionalProducerPool(transactional_id_prefix={self._prefix!r}, size={self.size})"
