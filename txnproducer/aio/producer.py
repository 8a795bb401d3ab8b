"""AsyncTransactionalProducer: the transactional producer for asyncio services.

Same settings (:class:`~txnproducer.ProducerConfig`), same errors, same semantics as
:class:`~txnproducer.TransactionalProducer` - it runs the same core (:mod:`._loop_core`) - but no
call blocks the event loop: where the sync producer waits (buffer memory, metadata of a new
topic, the coordinator's answers, the Sender stopping), a coroutine awaits a future the Sender
thread completes with ``loop.call_soon_threadsafe`` (:mod:`._waiting`). Each call holds the loop
only for its own bookkeeping (microseconds; a few locks the Sender holds briefly), and a tight loop
of ``await send(...)`` gives other tasks a turn at least every millisecond.

Cancellation (what a cancelled task leaves behind):

* ``await commit_transaction()`` / ``abort_transaction()`` / ``init_transactions()`` /
  ``send_offsets_to_transaction()``: the call goes on in the background, exactly as when its
  bound runs out (KIP-691); awaiting the same call again returns its outcome. Until then the
  producer refuses other transactional calls, naming the one to await.
* inside ``async with producer.transaction():`` the transaction is aborted (the abort is awaited
  before the cancellation propagates). If the commit is what was cancelled, it goes on; the next
  ``transaction()`` first waits for it (or for an abort cancelled in turn) and aborts it if it
  failed with an abortable error.
* ``await send()`` waiting for buffer memory or metadata: the record is not queued.
* awaiting a record's delivery or ``flush()``: only the wait stops.
* ``close()``: closing goes on; awaiting ``close()`` again waits for it. ``close()`` is safe from
  any state and from any task: calls waiting in other tasks end with their outcome or ClosedError.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from kafka.structs import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from kafka.util import ensure_valid_topic_name

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.txn.result import TransactionalRequestResult
from txnproducer.aio._loop_core import BufferFull, LoopCore, MetadataNeeded
from txnproducer.aio._waiting import wait_batches, wait_result, wait_until
from txnproducer.aio.group_metadata import as_group_metadata
from txnproducer.aio.record_future import AsyncRecordFuture
from txnproducer.config import ProducerConfig
from txnproducer.producer import HeadersArg

__all__ = ["AsyncTransactionalProducer"]

# a tight loop of sends that never has to wait gives the event loop a turn this often
_YIELD_EVERY_S = 0.001


class AsyncTransactionalProducer:
    """Exactly-once producer for asyncio (KIP-98, KIP-447, KIP-890 TV2): the sync producer's API
    as coroutines. See the module docstring for cancellation; README "asyncio" for examples.

    Construct it anywhere (connecting happens in the background); use it from one event loop.
    Raises ConfigError on construction for invalid settings. ``tracer_provider``, ``meter_provider``,
    ``record_spans``: as the sync producer's (spans take the calling task's context).
    """

    def __init__(self, config: ProducerConfig | None = None, *, tracer_provider: Any = None,
                 meter_provider: Any = None, record_spans: bool | None = None, **settings: Any) -> None:
        if config is None:
            config = ProducerConfig.from_mapping(settings)
        elif settings:
            config = config.with_overrides(**settings)
        self._config = config
        # Serializers run here, once per record, so that a send() that waited and is tried again
        # hands the core bytes: a user's serializer is never called twice for one record.
        self._key_serializer: Callable[[Any], Any] | None = config.key_serializer
        self._value_serializer: Callable[[Any], Any] | None = config.value_serializer
        self._core = LoopCore(config.with_overrides(key_serializer=None, value_serializer=None),
                              tracer_provider=tracer_provider, meter_provider=meter_provider,
                              record_spans=record_spans)
        self._max_block_s = config.max_block_ms / 1000
        self._next_yield = 0.0
        # commit/abort a transaction() left running when its task was cancelled
        self._orphaned: str | None = None
        self._log = get_logger("txnproducer.aio").bind(transactional_id=config.transactional_id)

    # -- properties (the sync producer's) ---------------------------------------------------------

    @property
    def config(self) -> ProducerConfig:
        return self._config

    @property
    def state(self) -> Any:
        """The transaction manager's state (``txnproducer._internal.txn.state.State``)."""
        return self._core.state

    @property
    def producer_id(self) -> int:
        return self._core.producer_id

    @property
    def epoch(self) -> int:
        return self._core.epoch

    @property
    def transaction_version(self) -> int:
        return self._core.transaction_version

    @property
    def closed(self) -> bool:
        return self._core.closed

    def metrics(self) -> dict[str, float]:
        """The sync producer's metrics (Java client's transaction metrics and counters)."""
        return self._core.metrics()

    # -- transactional API ------------------------------------------------------------------------

    async def init_transactions(self, timeout: float | None = None, keep_prepared_txn: bool = False) -> None:
        """Register the transactional id with its coordinator, fencing older instances and
        aborting what they left open. Bounded by ``timeout`` or ``max_block_ms``.

        Raises TimeoutError (await it again to keep waiting), FatalError subclasses (fenced, not
        authorized, unsupported), IllegalStateError (already initialized), ClosedError.
        """
        core = self._core
        core.check_open("init_transactions")
        bound, name = core.bound(timeout)
        deadline = time.monotonic() + bound
        await wait_until(core.ready_version, core.ready_changed, deadline,
                         lambda: core.not_ready_error(bound))
        result = core.start_init(keep_prepared_txn)
        await self._finish("init", result, max(0.0, deadline - time.monotonic()), name)
        self._log.info("txn.initialized", producer_id=self.producer_id, epoch=self.epoch,
                       transaction_version=self.transaction_version)

    def begin_transaction(self) -> None:
        """Start a transaction (local: nothing is sent, nothing awaited).

        Raises IllegalStateError when not READY (also while a commit or abort whose task was
        cancelled has not been awaited again), FatalError after a fatal error, ClosedError.
        """
        self._core.begin_transaction()

    async def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                   timestamp_ms: int | None = None, headers: HeadersArg = None) -> AsyncRecordFuture:
        """Queue one record in the open transaction; returns once it is queued, with its
        :class:`~txnproducer.aio.AsyncRecordFuture` (await that for the delivery).

        Awaits buffer memory or metadata of a new topic, together at most ``max_block_ms``
        (TimeoutError; nothing queued). Raises what the sync ``send()`` raises: SerializationError,
        RecordTooLargeError, InvalidRecordError, IllegalStateError (no transaction open),
        AbortableError/FatalError (the transaction already failed), ClosedError. Cancelled while
        it waits: the record is not queued.
        """
        core = self._core
        if key is not None and self._key_serializer is not None:
            key = core.serialize(self._key_serializer, key, "key", topic)
        if value is not None and self._value_serializer is not None:
            value = core.serialize(self._value_serializer, value, "value", topic)
        try:
            future = core.send(topic, value, key, partition, timestamp_ms, headers)
        except (MetadataNeeded, BufferFull) as blocked:
            future = await self._send_when_possible(blocked, topic, value, key, partition, timestamp_ms,
                                                    headers)
        now = time.monotonic()
        if now >= self._next_yield:
            if self._next_yield:  # not the first send: sends have held the loop for a while
                await asyncio.sleep(0)
            self._next_yield = time.monotonic() + _YIELD_EVERY_S
        return AsyncRecordFuture(future, core.record_wait_s)

    async def _send_when_possible(self, blocked: Exception, *args: Any) -> Any:
        """The send that would have blocked: await what it needs, try again (one deadline)."""
        core = self._core
        topic = args[0]
        deadline = time.monotonic() + self._max_block_s
        while True:
            if isinstance(blocked, MetadataNeeded):
                await self._topic_partitions(topic, deadline)
                try:
                    return core.send(*args)
                except (MetadataNeeded, BufferFull) as again:
                    blocked = again
                continue
            core.count_memory_waiter(+1)  # while we wait the Sender sends every batch at once
            try:
                return await wait_until(lambda: self._try_send(args), (core.memory_freed,), deadline,
                                        core.buffer_timeout_error)
            except MetadataNeeded as again:  # the topic left the metadata meanwhile
                blocked = again
            finally:
                core.count_memory_waiter(-1)

    def _try_send(self, args: tuple[Any, ...]) -> Any:
        try:
            return self._core.send(*args)
        except BufferFull:
            return None

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: Any,
        timeout: float | None = None,
    ) -> None:
        """Commit consumed ``offsets`` (the *next* offsets to read) for a consumer group as part of
        this transaction.

        ``group_metadata``: an aiokafka ``AIOKafkaConsumer`` (its KIP-447 group metadata is read
        with :func:`~txnproducer.aio.aiokafka_group_metadata`, so a zombie consumer is fenced),
        ``ConsumerGroupMetadata`` (kafka-python's ``consumer.group_metadata()``), or a bare group
        id (no fencing). Raises CommitFailedError (the group rebalanced: abort and reprocess),
        other AbortableError, FatalError, IllegalStateError, TimeoutError, ConfigError, ClosedError.
        """
        core = self._core
        core.check_open("send_offsets_to_transaction")
        gm: ConsumerGroupMetadata | str = as_group_metadata(group_metadata)
        bound, name = core.bound(timeout)
        result = core.start_offsets(offsets, gm)
        await self._finish("offsets", result, bound, name)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush every record of the transaction, then commit it atomically.

        Raises AbortableError subclasses (await :meth:`abort_transaction`), FatalError subclasses
        (close the producer), IllegalStateError, TimeoutError (await it again to keep waiting for
        the same commit), ClosedError. Cancelled: the commit goes on; await it again for its outcome.
        """
        core = self._core
        core.check_open("commit_transaction")
        bound, name = core.bound(timeout)
        await self._finish("commit", core.start_commit(), bound, name)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the open transaction: nothing sent in it becomes visible to read_committed readers.

        Raises FatalError subclasses, IllegalStateError, TimeoutError (await it again to keep
        waiting), ClosedError. Cancelled: the abort goes on; await it again for its outcome.
        """
        core = self._core
        core.check_open("abort_transaction")
        bound, name = core.bound(timeout)
        await self._finish("abort", core.start_abort(), bound, name)

    async def _finish(self, op: str, result: TransactionalRequestResult, bound: float, name: str) -> None:
        """Await ``op``'s result; a call that timed out or was cancelled stays pending (KIP-691)."""
        try:
            await wait_result(result, bound, name)
        except (errors.TimeoutError, asyncio.CancelledError):
            raise
        except BaseException:
            self._core.forget(op, result)
            raise
        self._core.forget(op, result)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncTransactionalProducer]:
        """``async with producer.transaction():`` begins; commits on success; on an exception -
        cancellation included - or a commit that failed with an abortable error, aborts and
        re-raises. First waits for a commit or abort an earlier ``transaction()`` left running
        when its task was cancelled."""
        await self._settle_orphan()
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            await self._abort_quietly()
            raise
        try:
            await self.commit_transaction()
        except errors.AbortableError:
            await self._abort_quietly()
            raise
        except asyncio.CancelledError:
            self._orphaned = "commit"
            raise

    async def _abort_quietly(self) -> None:
        try:
            await self.abort_transaction()
        except errors.TxnProducerError as exc:  # keep the original error visible
            self._log.warning("txn.abort_failed", error=repr(exc))
        except asyncio.CancelledError:
            self._orphaned = "abort"
            raise

    async def _settle_orphan(self) -> None:
        op, self._orphaned = self._orphaned, None
        if op is None:
            return
        result = self._core.pending(op)
        if result is None:  # someone awaited it meanwhile
            return
        try:
            await self._finish(op, result, self._max_block_s, "max_block_ms")
        except errors.AbortableError as exc:
            self._log.warning("txn.orphaned_commit_failed", error=repr(exc))
            await self.abort_transaction()
        except asyncio.CancelledError:
            self._orphaned = op
            raise

    # -- data -------------------------------------------------------------------------------------

    async def flush(self, timeout: float | None = None) -> None:
        """Send every queued record now and wait until each is acknowledged or failed.

        ``timeout=None`` waits as long as records can still be delivered (``delivery_timeout_ms``
        plus ``request_timeout_ms``). Raises TimeoutError, ClosedError.
        """
        core = self._core
        core.check_open("flush")
        if timeout is not None and timeout < 0:
            raise errors.ConfigError(f"timeout must be >= 0 seconds or None, got {timeout!r}")
        bound_s = core.record_wait_s if timeout is None else timeout
        bound = "delivery_timeout_ms" if timeout is None else f"timeout={timeout}s"
        batches = core.begin_flush()
        try:
            await wait_batches(batches, time.monotonic() + bound_s, bound)
        finally:
            core.end_flush()

    async def partitions_for(self, topic: str) -> list[int]:
        """Partition ids of ``topic`` (fetching metadata, bounded by ``max_block_ms``)."""
        self._core.check_open("partitions_for")
        try:
            ensure_valid_topic_name(topic)
        except (TypeError, ValueError) as exc:
            raise errors.ConfigError(f"invalid topic name {topic!r}: {exc}") from None
        return await self._topic_partitions(topic, time.monotonic() + self._max_block_s)

    async def _topic_partitions(self, topic: str, deadline: float) -> list[int]:
        core = self._core
        answers = core.request_topic(topic)
        return await wait_until(lambda: core.topic_partitions(topic, answers), (core.metadata_changed,),
                                deadline, lambda: core.topic_timeout_error(topic, self._max_block_s))

    # -- lifecycle --------------------------------------------------------------------------------

    async def close(self, timeout: float | None = None) -> None:
        """Send queued records, abort an open transaction, and stop (idempotent, any state).

        Waits at most ``timeout`` seconds (default ``max_block_ms``); after that, queued records
        fail with ClosedError and connections are dropped. ``close(0)`` closes at once. Cancelled:
        closing goes on; await ``close()`` again to wait for it.
        """
        core = self._core
        bound, _ = core.bound(timeout)
        core.begin_close(bound)

        def stopped() -> bool | None:
            return True if core.stopped else None

        try:
            await wait_until(stopped, (core.sender_changed,), time.monotonic() + bound,
                             lambda: errors.TimeoutError("close"))
            return
        except errors.TimeoutError:
            self._log.warning("txn.close_forced", timeout_s=bound)
            core.force_close()
        forced_bound = max(5.0, self._config.request_timeout_ms / 1000)
        try:
            await wait_until(stopped, (core.sender_changed,), time.monotonic() + forced_bound,
                             lambda: errors.TimeoutError("close"))
        except errors.TimeoutError:
            self._log.warning("txn.close_incomplete", timeout_s=forced_bound)

    async def __aenter__(self) -> AsyncTransactionalProducer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return (f"AsyncTransactionalProducer(transactional_id={self._config.transactional_id!r}, "
                f"state={getattr(self.state, 'name', self.state)})")
