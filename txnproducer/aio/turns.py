"""Whose transaction it is: one asyncio producer shared by many tasks (request handlers).

A producer runs one transaction at a time (Kafka's rule: one transactional id, one open
transaction). When ten request handlers share one producer, each ``async with
producer.transaction()`` must wait its turn - not fail with "a transaction is already open: call
commit_transaction()", advice that, followed, commits another task's half-written transaction - and
a ``send()`` from a handler that does not own the open transaction must not slip into it: its
record would commit or vanish with someone else's work.

**Holding the transaction.** A task *holds* a producer's transaction from the moment it is granted
the turn - ``async with producer.transaction()`` (waiting, FIFO) or ``producer.begin_transaction()``
(no waiting: it raises IllegalStateError if another task holds the turn or tasks are waiting for
it) - until it ends: for ``transaction()`` when the ``async with`` block exits; after an explicit
``begin_transaction()`` when a commit or abort ends the transaction (``commit_transaction()``,
``abort_transaction()``, or a fatal error), or when the holding task finishes without ending it
(the transaction is then *abandoned*: ``send``/``commit`` from any task refuse it, any task may
``abort_transaction()`` it, and the next ``transaction()`` aborts it first, with a WARNING). Tasks
the holder starts while it holds the transaction - ``asyncio.gather``, ``TaskGroup``,
``create_task`` - hold it too: holding is recorded in a ``contextvars`` variable, which a new task
copies from the code that creates it. Any other task's ``send``, ``send_offsets_to_transaction``,
``commit_transaction`` or ``abort_transaction`` raises IllegalStateError naming the holder.

**Waiting.** ``transaction()`` waits in FIFO order for at most ``max_block_ms`` (then TimeoutError
naming the holder and the queue). A waiter that is cancelled or times out leaves the queue; if the
turn had just been handed to it, it passes the turn on to the next waiter, so a cancellation never
strands the queue.

This is the asyncio producer's rule only. The sync producer follows the Java client: sends from any
thread join the open transaction (docs/concurrency.md).
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from txnproducer import errors

__all__ = ["TransactionTurns", "Turn"]

#: The turns the running code holds (its task's context; new tasks copy it). A tuple: a task may
#: hold turns of several producers (a pool's members) at once.
_HELD: ContextVar[tuple[Turn, ...]] = ContextVar("txnproducer_aio_held_turns", default=())


def _task_name(task: asyncio.Task[Any] | None) -> str:
    return task.get_name() if task is not None else "<no task>"


class Turn:
    """One task's hold on a producer's transaction (see the module docstring)."""

    __slots__ = ("explicit", "holder", "on_done", "released", "task")

    def __init__(self, task: asyncio.Task[Any] | None, explicit: bool) -> None:
        self.task = task
        self.holder = _task_name(task)
        self.explicit = explicit  # begin_transaction(), not transaction()
        self.released = False
        self.on_done: Callable[[asyncio.Task[Any]], None] | None = None


class TransactionTurns:
    """The FIFO queue of tasks waiting to hold one producer's transaction, and who holds it.

    ``is_open()`` says whether the producer's transaction is open (begun, not ended): an explicit
    turn whose transaction ended is released lazily, however it ended."""

    def __init__(self, transactional_id: str, max_block_s: float, is_open: Callable[[], bool]) -> None:
        self._transactional_id = transactional_id
        self._max_block_s = max_block_s
        self._is_open = is_open
        self._current: Turn | None = None
        self._waiters: deque[tuple[asyncio.Future[Turn], asyncio.Task[Any] | None]] = deque()
        #: the name of the task that finished holding an open transaction (None: none did)
        self.abandoned_by: str | None = None

    # -- who holds it -------------------------------------------------------------------------------

    @property
    def current(self) -> Turn | None:
        """The turn being held, after ending one whose time is over: an explicit turn whose
        transaction ended (commit, abort, fatal error), a turn whose task finished (its done
        callback may not have run yet)."""
        turn = self._current
        if turn is None:
            return None
        if turn.task is not None and turn.task.done():
            self._holder_done(turn, turn.task)
        elif turn.explicit and not self._is_open():
            self.release(turn)
        return self._current

    def settle(self) -> None:
        """After a commit or abort (whatever its outcome): an explicit turn whose transaction ended
        is released now, so that the next waiter need not wait for someone to look."""
        if self.current is None and not self._is_open():
            self.abandoned_by = None

    def held_here(self) -> bool:
        """Whether the running code holds the turn (its task, or a task it started holding it)."""
        turn = self.current
        return turn is not None and turn in _HELD.get()

    def check_holder(self, call: str) -> None:
        """IllegalStateError if the open transaction is another task's (or abandoned): ``call``
        may not touch it. ``abort_transaction`` may end an abandoned transaction."""
        turn = self._current
        if turn is not None and turn in _HELD.get():
            return  # the common case, once per send(): the running code holds the open transaction
        turn = self.current
        if turn is None:
            if self.abandoned_by is not None and call != "abort_transaction" and self._is_open():
                raise errors.IllegalStateError(self._abandoned_message(call))
            return
        if turn not in _HELD.get():
            raise errors.IllegalStateError(
                f"{call}() from task {_task_name(asyncio.current_task())!r}: the open transaction of "
                f"transactional_id {self._transactional_id!r} is held by task {turn.holder!r}, and a "
                "task may write only to a transaction it holds (it began it, or was started inside it "
                "by a task that holds it). Use `async with producer.transaction()`, which waits its "
                "turn, or AsyncTransactionalProducerPool for transactions at the same time")

    def _abandoned_message(self, call: str) -> str:
        return (f"{call}(): the open transaction of transactional_id {self._transactional_id!r} was begun "
                f"by task {self.abandoned_by!r}, which ended without committing or aborting it. Await "
                "abort_transaction() (any task may), or use `async with producer.transaction()`, which "
                "aborts it first")

    # -- taking the turn ----------------------------------------------------------------------------

    def take_now(self) -> Turn:
        """For ``begin_transaction()``: the turn at once, or IllegalStateError naming who holds it or
        how many wait (an explicit begin does not wait and does not jump the queue)."""
        turn = self.current
        if turn is not None and turn in _HELD.get():
            return turn  # ours already: the core decides (it refuses a second begin)
        if turn is not None or self._waiting():
            who = f"is held by task {turn.holder!r}" if turn is not None else "is free"
            raise errors.IllegalStateError(
                f"begin_transaction() from task {_task_name(asyncio.current_task())!r}: the transaction "
                f"of transactional_id {self._transactional_id!r} {who} and {self._waiting()} task(s) "
                "wait for it. A producer runs one transaction at a time: use `async with "
                "producer.transaction()`, which waits its turn, or AsyncTransactionalProducerPool")
        if self.abandoned_by is not None and self._is_open():
            raise errors.IllegalStateError(self._abandoned_message("begin_transaction"))
        return self._grant(asyncio.current_task(), explicit=True)

    async def take(self, call: str) -> Turn:
        """For ``transaction()``: wait (FIFO, at most ``max_block_ms``) for the turn. Cancelled or
        timed out, the waiter leaves the queue, passing on a turn it was just handed."""
        task = asyncio.current_task()
        turn = self.current
        if turn is not None and turn.task is task:
            raise errors.IllegalStateError(
                f"{call}: this task already holds the transaction of transactional_id "
                f"{self._transactional_id!r}; transactions do not nest")
        if self.current is None and not self._waiting():
            return self._hold(self._grant(task, explicit=False))
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Turn] = loop.create_future()
        entry = (fut, task)
        self._waiters.append(entry)
        timer = loop.call_later(self._max_block_s, self._expire, fut)
        try:
            turn = await fut
        except BaseException:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self.release(fut.result())  # handed to us as we were cancelled: pass it on
            elif entry in self._waiters:
                self._waiters.remove(entry)
            raise
        finally:
            timer.cancel()
        return self._hold(turn)

    def _expire(self, fut: asyncio.Future[Turn]) -> None:
        _ = self.current  # a last look: a turn whose time is over is handed on (perhaps to fut)
        if fut.done():
            return
        turn = self._current
        holder = f"held by task {turn.holder!r}" if turn is not None else "not yet handed on"
        fut.set_exception(errors.TimeoutError(
            f"transaction(): waited max_block_ms={int(self._max_block_s * 1000)} for the transaction of "
            f"transactional_id {self._transactional_id!r}, {holder}, with {self._waiting() - 1} other "
            "task(s) waiting. A producer runs one transaction at a time: shorten transactions, raise "
            "max_block_ms, or use AsyncTransactionalProducerPool"))

    def _waiting(self) -> int:
        return sum(1 for fut, _task in self._waiters if not fut.done())

    def _grant(self, task: asyncio.Task[Any] | None, explicit: bool) -> Turn:
        turn = Turn(task, explicit)
        self._current = turn
        if task is not None:  # a holder that finishes holding: the transaction is abandoned
            turn.on_done = functools.partial(self._holder_done, turn)
            task.add_done_callback(turn.on_done)
        if explicit:
            self._hold(turn)
        return turn

    @staticmethod
    def _hold(turn: Turn) -> Turn:
        """Record in the running context that it holds ``turn`` (dropping turns that ended)."""
        _HELD.set((*(t for t in _HELD.get() if not t.released), turn))
        return turn

    # -- giving it back -----------------------------------------------------------------------------

    def release(self, turn: Turn) -> None:
        """End ``turn`` (idempotent) and hand the turn to the first waiter still waiting."""
        if turn.released:
            return
        turn.released = True
        if turn.task is not None and turn.on_done is not None:
            turn.task.remove_done_callback(turn.on_done)
        if self._current is not turn:
            return
        self._current = None
        if not self._is_open():
            self.abandoned_by = None
        while self._waiters:
            fut, task = self._waiters.popleft()
            if not fut.done():
                fut.set_result(self._grant(task, explicit=False))
                return

    def _holder_done(self, turn: Turn, _task: asyncio.Task[Any]) -> None:
        if turn.released or self._current is not turn:
            return
        if self._is_open():
            self.abandoned_by = turn.holder
        self.release(turn)
