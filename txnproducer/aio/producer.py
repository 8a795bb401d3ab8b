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
  before the cancellation propagates). If the commit is what was cancelled (or timed out), it goes
  on; the next ``transaction()`` first waits for it (or for an abort cancelled or timed out in
  turn) and aborts it if it failed with an abortable error.
* waiting for its turn in ``transaction()`` (another task holds the transaction): the task leaves
  the queue; a turn handed to it at that moment goes to the next task.
* ``await send()`` waiting for buffer memory or metadata: the record is not queued.
* awaiting a record's delivery or ``flush()``: only the wait stops.
* ``close()``: closing goes on; awaiting ``close()`` again waits for it. ``close()`` is safe from
  any state and from any task: calls waiting in other tasks end with their outcome or ClosedError.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from kafka.structs import OffsetAndMetadata, TopicPartition
from kafka.util import ensure_valid_topic_name

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.txn.result import TransactionalRequestResult
from txnproducer.aio._loop_core import BufferFull, LoopCore, MetadataNeeded
from txnproducer.aio._waiting import wait_batches, wait_result, wait_until
from txnproducer.aio.group_metadata import as_group_metadata
from txnproducer.aio.record_future import AsyncRecordFuture
from txnproducer.aio.turns import TransactionTurns
from txnproducer.config import ProducerConfig
from txnproducer.producer import HeadersArg

__all__ = ["AsyncTransactionalProducer"]

# a tight loop of sends that never has to wait gives the event loop a turn this often (counted from
# the last time this producer's task gave the loop up: a commit that waited for its EndTxn restarts it)
_YIELD_EVERY_S = 0.001


class AsyncTransactionalProducer:
    """Exactly-once producer for asyncio (KIP-98, KIP-447, KIP-890 TV2): the sync producer's API
    as coroutines. See the module docstring for cancellation; docs/guide/asyncio.md for examples.

    Settings as the sync producer takes them (keywords, a mapping given positionally, or a
    ProducerConfig): milliseconds; every call's ``timeout`` argument is seconds, ``None`` meaning
    ``max_block_ms``.

    Shared by many tasks, it runs one transaction at a time: ``async with producer.transaction()``
    waits its turn (FIFO, ``max_block_ms``), and only the task holding the open transaction (and
    tasks it starts inside it) may send into it, commit or abort it; any other task gets
    IllegalStateError naming the holder (``txnproducer/aio/turns.py``, docs/concurrency.md). For
    transactions at the same time use :class:`~txnproducer.aio.AsyncTransactionalProducerPool`.

    Construct it anywhere (connecting happens in the background); use it from one event loop.
    Raises ConfigError on construction for invalid settings. ``tracer_provider``, ``meter_provider``,
    ``record_spans``: as the sync producer's (spans take the calling task's context).
    """

    def __init__(self, config: ProducerConfig | Mapping[str, Any] | None = None, *,
                 tracer_provider: Any = None, meter_provider: Any = None, record_spans: bool | None = None,
                 **settings: Any) -> None:
        config = ProducerConfig.from_arguments(config, settings)
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
        # which task holds the transaction, and who waits for it (turns.py)
        core = self._core
        self._turns = TransactionTurns(config.transactional_id, self._max_block_s,
                                       lambda: core.transaction_open)
        # send() calls of the open transaction that have not completed: a forgotten `await` leaves
        # one here, and commit refuses to commit without its record (counted per transaction)
        self._generation = 0
        self._unfinished_sends = 0
        self._log = get_logger("txnproducer.aio").bind(transactional_id=config.transactional_id)

    # -- properties (the sync producer's) ---------------------------------------------------------

    @property
    def config(self) -> ProducerConfig:
        return self._config

    @property
    def state(self) -> Any:
        """The transaction manager's state, a :class:`~txnproducer.TransactionState`."""
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
        """The sync producer's metrics (Java client's transaction metrics and counters; times in
        nanoseconds, sizes in bytes)."""
        return self._core.metrics()

    # -- transactional API ------------------------------------------------------------------------

    async def init_transactions(self, timeout: float | None = None, keep_prepared_txn: bool = False) -> None:
        """Register the transactional id with its coordinator, fencing older instances and
        aborting what they left open. Bounded by ``timeout`` (seconds) or ``max_block_ms``.

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
        """Start a transaction (local: nothing is sent, nothing awaited); the running task holds
        it until a commit or abort ends it (see docs/concurrency.md).

        Raises IllegalStateError when not READY (also while a commit or abort whose task was
        cancelled has not been awaited again), when another task holds the producer's transaction
        or waits for it (``async with producer.transaction()`` waits its turn instead), FatalError
        after a fatal error, ClosedError.
        """
        held = self._turns.current
        turn = self._turns.take_now()
        try:
            self._core.begin_transaction()
        except BaseException:
            if turn is not held:  # granted for this begin, which failed: give it back
                self._turns.release(turn)
            raise
        self._generation += 1
        self._unfinished_sends = 0

    def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
             timestamp_ms: int | None = None, headers: HeadersArg = None
             ) -> Coroutine[Any, Any, AsyncRecordFuture]:
        """Queue one record in the open transaction: ``await`` it; it returns once the record is
        queued, with its :class:`~txnproducer.aio.AsyncRecordFuture` (await that for the delivery).

        Awaits buffer memory or metadata of a new topic, together at most ``max_block_ms``
        (TimeoutError; nothing queued). Raises what the sync ``send()`` raises: SerializationError,
        RecordTooLargeError, InvalidRecordError, IllegalStateError (no transaction open, or one that
        another task holds), AbortableError/FatalError (the transaction already failed),
        ClosedError. Cancelled while it waits: the record is not queued.

        Nothing is queued until it is awaited (it is a coroutine). A send that is never awaited -
        a forgotten ``await`` - is counted: committing the transaction then raises
        IllegalStateError instead of committing without its record. (Why not queue the record at
        the call, without a coroutine: a send that must wait - metadata of a new topic, buffer
        memory - could then only finish in the background, after a commit that did not wait for it,
        and its record would land in the next transaction or nowhere.)
        """
        self._unfinished_sends += 1
        return self._send(self._generation, topic, value, key, partition, timestamp_ms, headers)

    async def _send(self, generation: int, topic: str, value: Any, key: Any, partition: int | None,
                    timestamp_ms: int | None, headers: HeadersArg) -> AsyncRecordFuture:
        try:
            self._turns.check_holder("send")
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
        finally:
            if generation == self._generation:
                self._unfinished_sends -= 1
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
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | Iterable[Any],
        group_metadata: Any,
        timeout: float | None = None,
    ) -> None:
        """Commit consumed ``offsets`` (the *next* offsets to read) for a consumer group as part of
        this transaction.

        ``offsets`` and ``group_metadata`` take what the sync call takes (see
        :meth:`TransactionalProducer.send_offsets_to_transaction
        <txnproducer.TransactionalProducer.send_offsets_to_transaction>`), and an aiokafka
        ``AIOKafkaConsumer`` as ``group_metadata`` (its KIP-447 group metadata is read with
        :func:`~txnproducer.aio.aiokafka_group_metadata`, so a zombie consumer is fenced). A bare
        group id cannot fence (deprecated: a warning, once per producer). ``timeout``: seconds,
        default ``max_block_ms``. Raises CommitFailedError (the group rebalanced: abort and
        reprocess), other AbortableError, FatalError, IllegalStateError (also from a task that does
        not hold the transaction), TimeoutError, ConfigError, ClosedError.
        """
        core = self._core
        core.check_open("send_offsets_to_transaction")
        self._turns.check_holder("send_offsets_to_transaction")
        gm = as_group_metadata(group_metadata)
        bound, name = core.bound(timeout)
        result = core.start_offsets(offsets, gm)
        await self._finish("offsets", result, bound, name)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush every record of the transaction, then commit it atomically. ``timeout``: seconds,
        default ``max_block_ms``.

        Raises AbortableError subclasses (await :meth:`abort_transaction`), FatalError subclasses
        (close the producer), IllegalStateError (also: a task that does not hold the transaction,
        or a ``send()`` of it not awaited), TimeoutError (await it again to keep waiting for the
        same commit), ClosedError. Cancelled: the commit goes on; await it again for its outcome.
        """
        core = self._core
        core.check_open("commit_transaction")
        self._turns.check_holder("commit_transaction")
        if self._unfinished_sends > 0 and core.in_transaction:
            raise errors.IllegalStateError(self._unfinished_message("commit_transaction()"))
        bound, name = core.bound(timeout)
        try:
            await self._finish("commit", core.start_commit(), bound, name)
        finally:
            self._turns.settle()

    def _unfinished_message(self, call: str) -> str:
        return (f"{call}: {self._unfinished_sends} send() call(s) of this transaction have not completed - "
                "never awaited (a forgotten `await`?) or still waiting in another task - so their records "
                "are not queued and a commit would leave them out. Await every send() before committing; "
                "abort_transaction() drops the transaction")

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the open transaction: nothing sent in it becomes visible to read_committed readers.
        ``timeout``: seconds, default ``max_block_ms``.

        Raises FatalError subclasses, IllegalStateError (also from a task that does not hold the
        transaction; any task may abort a transaction whose task ended without ending it),
        TimeoutError (await it again to keep waiting), ClosedError. Cancelled: the abort goes on;
        await it again for its outcome.
        """
        core = self._core
        core.check_open("abort_transaction")
        self._turns.check_holder("abort_transaction")
        bound, name = core.bound(timeout)
        try:
            await self._finish("abort", core.start_abort(), bound, name)
        finally:
            self._turns.settle()

    async def _finish(self, op: str, result: TransactionalRequestResult, bound: float, name: str) -> None:
        """Await ``op``'s result; a call that timed out or was cancelled stays pending (KIP-691)."""
        try:
            if await wait_result(result, bound, name):
                # the loop had its turn: the next send starts a new millisecond without a yield of
                # its own (each transaction's first send had yielded - an extra loop iteration per
                # transaction - since transactions take longer than the millisecond)
                self._next_yield = 0.0
        except (errors.TimeoutError, asyncio.CancelledError):
            raise
        except BaseException:
            self._core.forget(op, result)
            raise
        self._core.forget(op, result)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncTransactionalProducer]:
        """``async with producer.transaction():`` waits its turn, begins, commits on success; on an
        exception - cancellation included - or a commit that failed with an abortable error, aborts
        and re-raises.

        A producer runs one transaction at a time: while another task holds it, this waits (FIFO,
        at most ``max_block_ms``, then TimeoutError; cancellable). It then first settles what an
        earlier holder left: a commit or abort left running when its task was cancelled (awaited,
        and aborted if it failed with an abortable error), a transaction whose task ended without
        ending it (aborted, with a WARNING). Inside the block this task, and the tasks it starts
        there, hold the transaction; a send from another task raises IllegalStateError. A
        ``send()`` not awaited by the end of the block aborts the transaction (IllegalStateError).
        """
        turn = await self._turns.take("transaction()")
        try:
            await self._settle_orphan()
            await self._settle_abandoned()
            self.begin_transaction()
            try:
                yield self
            except BaseException:
                await self._abort_quietly()
                raise
            if self._unfinished_sends > 0:
                message = self._unfinished_message("transaction()")
                await self._abort_quietly()
                raise errors.IllegalStateError(f"{message}; the transaction was aborted")
            try:
                await self.commit_transaction()
            except errors.AbortableError:
                await self._abort_quietly()
                raise
            except (asyncio.CancelledError, errors.TimeoutError):
                self._orphaned = "commit"  # it goes on: the next transaction() settles it first
                raise
        finally:
            self._turns.release(turn)

    async def _settle_abandoned(self) -> None:
        """Abort a transaction whose task ended holding it (after its pending commit or abort, if
        one was under way), so that the transaction about to begin is not refused."""
        who = self._turns.abandoned_by
        core = self._core
        if who is None or not core.transaction_open:
            return
        for op in ("commit", "abort"):
            result = core.pending(op)
            if result is not None:
                with contextlib.suppress(errors.AbortableError):
                    await self._finish(op, result, self._max_block_s, "max_block_ms")
        if core.transaction_open:
            self._log.warning("txn.abandoned_transaction_aborted", task=who)
            await self.abort_transaction()
        self._turns.abandoned_by = None

    async def _abort_quietly(self) -> None:
        try:
            await self.abort_transaction()
        except errors.TxnProducerError as exc:  # keep the original error visible
            self._log.warning("txn.abort_failed", error=repr(exc))
            if isinstance(exc, errors.TimeoutError):
                self._orphaned = "abort"
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

        ``timeout``: seconds; ``None`` waits as long as records can still be delivered
        (``delivery_timeout_ms`` plus ``request_timeout_ms``). Raises TimeoutError, ClosedError.
        """
        core = self._core
        core.check_open("flush")
        if timeout is not None:
            core.bound(timeout)  # ConfigError: negative, or almost certainly milliseconds
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
        fail with ClosedError and connections are dropped. ``close(0)`` closes at once (without a
        warning: it was asked for). Cancelled: closing goes on; await ``close()`` again to wait for
        it. Any task may close it.
        """
        core = self._core
        bound, _ = core.bound(timeout, plausible=False)
        core.begin_close(bound)

        def stopped() -> bool | None:
            return True if core.stopped else None

        try:
            await wait_until(stopped, (core.sender_changed,), time.monotonic() + bound,
                             lambda: errors.TimeoutError("close"))
            return
        except errors.TimeoutError:
            # close(0) asked for it: not worth a warning
            (self._log.debug if bound == 0 else self._log.warning)("txn.close_forced", timeout_s=bound)
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
