"""Async producers for tests: a factory with the test defaults, and a plain asyncio runner.

Why no pytest-asyncio: each test body is ``run(main())`` - ``asyncio.run`` with a bound - which
needs no plugin and no event-loop fixture scoping rules, and fails a hung test after a bound
instead of hanging the suite. Teardown closes the producers with the sync core's ``close`` (bounded,
idempotent), which works after the test's loop is gone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from tests._support.producers import ProducerFactory
from txnproducer.aio import AsyncTransactionalProducer

T = TypeVar("T")
RUN_BOUND_S = 90.0


def run(coro: Coroutine[Any, Any, T], bound_s: float = RUN_BOUND_S) -> T:
    """Run ``coro`` on a fresh event loop, failing (not hanging) after ``bound_s``."""

    async def bounded() -> T:
        return await asyncio.wait_for(coro, bound_s)

    return asyncio.run(bounded())


class AsyncProducerFactory(ProducerFactory):
    """ProducerFactory for AsyncTransactionalProducer; ``close_all`` uses the sync close of the same
    core (bounded, idempotent), which needs no event loop."""

    producer_class = AsyncTransactionalProducer

    @staticmethod
    def close(producer: Any, timeout: float) -> None:
        producer._core.close(timeout)


async def suspended() -> None:
    """Let every task that is ready run up to its next await (one pass of the event loop)."""
    await asyncio.sleep(0)
