"""Async producers for tests: a factory with the test defaults, and a plain asyncio runner.

Why no pytest-asyncio: each test body is ``run(main())`` - ``asyncio.run`` with a bound - which
needs no plugin, no event-loop fixture scoping rules, and fails a hung test in seconds with the
pending tasks named. Teardown closes the producers with the sync core's ``close`` (bounded,
idempotent), which works after the test's loop is gone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from tests._support.producers import TEST_DEFAULTS
from txnproducer.aio import AsyncTransactionalProducer
from txnproducer.testing import MockCluster

T = TypeVar("T")
RUN_BOUND_S = 90.0


def run(coro: Coroutine[Any, Any, T], bound_s: float = RUN_BOUND_S) -> T:
    """Run ``coro`` on a fresh event loop, failing (not hanging) after ``bound_s``."""

    async def bounded() -> T:
        return await asyncio.wait_for(coro, bound_s)

    return asyncio.run(bounded())


class AsyncProducerFactory:
    """``make(txn_id=None, cluster=None, **settings)`` builds an AsyncTransactionalProducer on
    ``cluster`` with the test defaults; ``close_all`` closes them (any thread, no loop needed)."""

    def __init__(self, cluster: MockCluster, default_txn_id: str, **defaults: Any) -> None:
        self._cluster = cluster
        self._default_txn_id = default_txn_id
        self._defaults = {**TEST_DEFAULTS, **defaults}
        self.producers: list[AsyncTransactionalProducer] = []

    def __call__(self, txn_id: str | None = None, cluster: MockCluster | None = None,
                 **settings: Any) -> AsyncTransactionalProducer:
        producer = AsyncTransactionalProducer(
            bootstrap_servers=(cluster or self._cluster).bootstrap_servers,
            transactional_id=txn_id or self._default_txn_id, **{**self._defaults, **settings})
        self.producers.append(producer)
        return producer

    def close_all(self, timeout: float) -> None:
        for producer in self.producers:
            producer._core.close(timeout)  # the sync close of the same core: no event loop needed


async def suspended() -> None:
    """Let every task that is ready run up to its next await (one pass of the event loop)."""
    await asyncio.sleep(0)
