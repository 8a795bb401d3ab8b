"""AsyncRecordFuture: what ``await producer.send(...)`` gives back - the record's delivery, awaitable.

Why a wrapper and not an ``asyncio.Future`` per record: most applications never await single
records (they await the commit, which waits for all of them), and an asyncio future completed from
the Sender thread costs a ``call_soon_threadsafe`` - a wake-up of the event loop - per record. This
object costs nothing until it is awaited; only then does it register on the record's
:class:`~txnproducer.RecordFuture` for one wake-up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator
from typing import Any

from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer.aio._waiting import wait_signal, waker
from txnproducer.producer import RecordFuture, RecordMetadata

__all__ = ["AsyncRecordFuture"]


class AsyncRecordFuture:
    """The outcome of one ``send()``: ``await`` it for the record's
    :class:`~txnproducer.RecordMetadata`, or its delivery error (the classes of docs/guide/errors.md:
    ``TransactionAbortedError``, ``DeliveryTimeoutError``, ``TopicAuthorizationError``, ...).

    Awaiting is bounded by how long the record can still be delivered (``delivery_timeout_ms`` plus
    ``request_timeout_ms``), then TimeoutError; cancelling the awaiting task only stops the wait.
    """

    __slots__ = ("_future", "_wait_s")

    def __init__(self, future: RecordFuture, wait_s: float) -> None:
        self._future = future
        self._wait_s = wait_s

    @property
    def topic_partition(self) -> TopicPartition:
        """Where the record was queued."""
        return self._future.topic_partition

    @property
    def record_future(self) -> RecordFuture:
        """The underlying thread-safe future (``add_callback`` runs on the producer's thread)."""
        return self._future

    def done(self) -> bool:
        """True once the record is acknowledged or failed."""
        return self._future.done()

    def result(self) -> RecordMetadata:
        """The metadata of a done record (raises its error); InvalidStateError before."""
        if not self._future.done():
            raise asyncio.InvalidStateError("the record is not acknowledged yet: await it")
        return self._future.get(0)

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        return self._wait().__await__()

    async def _wait(self) -> RecordMetadata:
        future = self._future
        if not future.done():
            fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            wake = waker(fut)
            future.add_callback(lambda _metadata, _exc: wake())
            if not await wait_signal(fut, time.monotonic() + self._wait_s) and not future.done():
                tp = future.topic_partition
                raise errors.TimeoutError(
                    f"record for {tp.topic}-{tp.partition} not acknowledged within delivery_timeout_ms")
        return future.get(0)

    def __repr__(self) -> str:
        tp = self._future.topic_partition
        return f"AsyncRecordFuture({tp.topic}-{tp.partition}, done={self.done()})"
