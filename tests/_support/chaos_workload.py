"""Chaos workloads: producer threads that keep a ledger, and a supervised consume-transform-produce group.

Why in ``tests/_support``: the chaos tier runs them against MockCluster, and a real-broker chaos run
(several KRaft nodes, kill -9, SIGSTOP) can run the same workload with a bootstrap string; nothing here
knows how faults are made. Faults that need the workload's cooperation - a producer paused mid-transaction
while a successor fences it (a zombie), a producer restarted at a transaction boundary with something done
to the cluster in between - are offered as requests a scheduler may make (:meth:`ProducerWorker.pause_next`,
:meth:`ProducerWorker.restart_next`).

Each :class:`ProducerWorker` is one application: a loop of transactions of random size over random
partitions (explicit, keyed and keyless records), some aborted on purpose, handling every error as the
docs/guide/errors.md table says (abortable: abort; fatal: close and start a new instance with the same
transactional id; timeouts of commit/abort/init: call again, then give up and close) and writing what it
was told into the :class:`~tests._support.txn_ledger.Ledger`. :class:`EosGroup` keeps
``TransactionalProcessor`` instances running, restarting one after a fatal error as an application would.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from kafka.structs import TopicPartition

from tests._support.eos_pipeline import ProcessorThreads
from tests._support.txn_ledger import Ledger, Outcome, RecordId, TxnEntry
from txnproducer import errors
from txnproducer.eos import TransactionalProcessor
from txnproducer.producer import TransactionalProducer

__all__ = ["PRODUCER_SETTINGS", "EosGroup", "ProducerWorker", "RunControl", "WorkloadConfig", "ZombieRequest"]

# Short bounds so that faults lasting ~1 s are survivable and a run stays short; consistent with the
# library's rules (delivery_timeout_ms >= linger_ms + request_timeout_ms).
PRODUCER_SETTINGS: dict[str, Any] = {
    "request_timeout_ms": 1500,
    "delivery_timeout_ms": 4000,
    "max_block_ms": 4000,
    "transaction_timeout_ms": 10000,
    "retry_backoff_ms": 20,
    "retry_backoff_max_ms": 200,
    "reconnect_backoff_ms": 20,
    "reconnect_backoff_max_ms": 200,
    "metadata_max_age_ms": 2000,
    "socket_connection_setup_timeout_ms": 1500,
}

# How often a call that timed out is made again before the application gives up (docs/guide/errors.md:
# "call the same method again to keep waiting for the same result").
CALL_ATTEMPTS = 3


@attrs.frozen
class WorkloadConfig:
    """What the producer workers do. ``topics`` maps each topic they write to its partition count and a
    weight (how often a record goes there)."""

    bootstrap: str
    topics: Mapping[str, tuple[int, float]]
    max_records: int = 8
    abort_ratio: float = 0.1
    flush_ratio: float = 0.05
    calm_transactions: int = 5
    producer: Mapping[str, Any] = attrs.field(factory=lambda: dict(PRODUCER_SETTINGS))

    def setting_s(self, name: str) -> float:
        return float(self.producer[name]) / 1000


class RunControl:
    """The phases of a run, shared by the workers and whoever drives them.

    Chaos phase: workers run transactions until :attr:`calm` is set (faults stopped). Calm phase: each
    worker runs ``calm_transactions`` more, which must not fail. ``deadline`` (monotonic) bounds every
    retry loop, so a run that cannot make progress ends instead of hanging.
    """

    def __init__(self, deadline: float) -> None:
        self.calm = threading.Event()
        self.deadline = deadline
        self._cond = threading.Condition()
        self._ended = 0

    def transaction_ended(self) -> None:
        with self._cond:
            self._ended += 1
            self._cond.notify_all()

    @property
    def ended(self) -> int:
        with self._cond:
            return self._ended

    def wait_for_transactions(self, n: int, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._ended >= n, timeout)

    def past_deadline(self) -> bool:
        return time.monotonic() > self.deadline


@attrs.define(eq=False)
class ZombieRequest:
    """A scheduler's request to pause a worker mid-transaction (see :meth:`ProducerWorker.pause_next`)."""

    paused: threading.Event = attrs.field(factory=threading.Event)
    resume: threading.Event = attrs.field(factory=threading.Event)
    successor: TransactionalProducer | None = None
    fenced: bool = False  # the successor's init_transactions() returned before the zombie resumed


class ProducerWorker(threading.Thread):
    """One application with one transactional id (see the module docstring)."""

    def __init__(self, name: str, transactional_id: str, config: WorkloadConfig, ledger: Ledger,
                 rng: Any, control: RunControl, first_txn: int = 0, instances: int = 0) -> None:
        """``first_txn`` and ``instances``: where a process that continues a killed one's journal starts
        (``tests/chaos/producer_process.py``), so record ids stay unique."""
        super().__init__(name=f"chaos-{name}", daemon=True)
        self.producer_name = name
        self.transactional_id = transactional_id
        self.config = config
        self.ledger = ledger
        self.rng = rng
        self.control = control
        self.producer: TransactionalProducer | None = None
        self.instances = instances
        self._next_txn = first_txn
        self._calm_done = 0
        self._calm = False  # sampled when each init or transaction starts: its errors count as calm
        self._lock = threading.Lock()
        self._zombie: ZombieRequest | None = None
        self._restart: Callable[[str], None] | None = None
        self._max_block_s = config.setting_s("max_block_ms")
        self._delivery_s = config.setting_s("delivery_timeout_ms")
        self._topics = list(config.topics)
        self._weights = [weight for _, weight in config.topics.values()]

    # -- requests a scheduler may make ------------------------------------------------------------------

    def pause_next(self) -> ZombieRequest:
        """Pause inside the next transaction, after some sends, until ``request.resume`` is set; a
        scheduler fences the paused instance meanwhile with :meth:`fence`. The paused instance then
        tries to finish its transaction: its commit must fail and none of its records may be visible."""
        request = ZombieRequest()
        with self._lock:
            if self._zombie is not None:
                self._zombie.resume.set()
            self._zombie = request
        return request

    def fence(self, request: ZombieRequest) -> None:
        """Start a successor instance with the same transactional id (its init_transactions() fences the
        paused one), on the caller's thread; the worker carries on with it after the zombie's transaction."""
        try:
            successor = self._new_instance()
            request.fenced = self._init(successor, txn=None)
            request.successor = successor
        finally:
            request.resume.set()

    def restart_next(self, before_init: Callable[[str], None]) -> None:
        """At the next transaction boundary: close the instance, call ``before_init(transactional_id)``
        (a scheduler's hook, e.g. to move the epoch near exhaustion; ValueError means "not now"), and
        start a new instance."""
        with self._lock:
            self._restart = before_init

    # -- the application ---------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            while self._calm_done < self.config.calm_transactions and not self.control.past_deadline():
                self._calm = self.control.calm.is_set()
                self._maybe_restart()
                if self.producer is None:
                    self.producer = self._start()
                    continue
                self._transaction(self.producer)
                if self._calm:
                    self._calm_done += 1
            if self._calm_done < self.config.calm_transactions:
                self._unexpected("run", errors.TimeoutError("the run's deadline passed"))
        except BaseException as exc:  # a bug of the workload or the library: reported, never swallowed
            self._unexpected("run", exc)
        finally:
            self._finish()

    def _unexpected(self, call: str, exc: BaseException, txn: int | None = None) -> None:
        self.ledger.error(self.producer_name, txn, call, exc, self._calm, expected=False)

    def _expected(self, call: str, exc: BaseException, txn: int | None) -> None:
        self.ledger.error(self.producer_name, txn, call, exc, self._calm)

    def _new_instance(self) -> TransactionalProducer:
        self.instances += 1
        settings = dict(self.config.producer)
        settings["linger_ms"] = self.rng.choice([0, 1, 2, 5])
        return TransactionalProducer(bootstrap_servers=self.config.bootstrap,
                                     transactional_id=self.transactional_id, **settings)

    def _init(self, producer: TransactionalProducer, txn: int | None) -> bool:
        """init_transactions(), called again after a timeout; False (closed) after a fatal error."""
        for _ in range(CALL_ATTEMPTS):
            timeout = self.rng.choice([None, self._max_block_s / 2])
            bound = self._max_block_s if timeout is None else timeout
            try:
                with self.ledger.timed(self.producer_name, txn, "init_transactions", bound):
                    producer.init_transactions(timeout)
                return True
            except (errors.TimeoutError, errors.RetriableError) as exc:
                self._expected("init_transactions", exc, txn)
            except errors.FatalError as exc:
                self._expected("init_transactions", exc, txn)
                break
            except errors.TxnProducerError as exc:
                self._unexpected("init_transactions", exc, txn)
                break
        self._close(producer, txn)
        return False

    def _start(self) -> TransactionalProducer | None:
        producer = self._new_instance()
        return producer if self._init(producer, None) else None

    def _close(self, producer: TransactionalProducer, txn: int | None) -> None:
        bound = self._max_block_s / 2
        try:
            with self.ledger.timed(self.producer_name, txn, "close", bound):
                producer.close(bound)
        except Exception as exc:
            self._unexpected("close", exc, txn)
        if self.producer is producer:
            self.producer = None

    def _maybe_restart(self) -> None:
        with self._lock:
            hook, self._restart = self._restart, None
        if hook is None or self.control.calm.is_set():
            return
        if self.producer is not None:
            self._close(self.producer, None)
        with contextlib.suppress(ValueError):  # the cluster could not do it now: a plain restart
            hook(self.transactional_id)

    def _take_zombie(self) -> ZombieRequest | None:
        with self._lock:
            request, self._zombie = self._zombie, None
        return request

    def _finish(self) -> None:
        """Leave nothing open: a transaction a fatally failed instance left is aborted by a last instance's
        init_transactions() (as a restarted application would)."""
        if self.producer is not None:
            self._close(self.producer, None)
            return
        producer = self._start()
        if producer is not None:
            self._close(producer, None)

    # -- one transaction -----------------------------------------------------------------------------------

    def _transaction(self, producer: TransactionalProducer) -> None:
        txn = self._next_txn
        self._next_txn += 1
        intent = "abort" if self.rng.random() < self.config.abort_ratio else "commit"
        entry = self.ledger.begin(self.producer_name, txn, self.transactional_id, self.instances, self._calm,
                                  intent)
        zombie = None if self._calm else self._take_zombie()
        n = self.rng.randint(1, self.config.max_records)
        pause_after = self.rng.randrange(n) if zombie is not None else -1
        committing = False
        try:
            producer.begin_transaction()
            for index in range(n):
                self._send(producer, entry, index)
                if index == pause_after:
                    assert zombie is not None
                    self._play_zombie(zombie, entry)
                if self.rng.random() < self.config.flush_ratio:
                    self._flush(producer, txn)
            if intent == "abort":
                self._abort(producer, entry, "abort_transaction() returned")
                return
            committing = True
            self._commit(producer, entry)
        except errors.AbortableError as exc:
            self._expected("transaction", exc, txn)
            self._abort(producer, entry, f"aborted after {exc!r}")
        except (errors.TimeoutError, errors.RetriableError) as exc:
            self._expected("transaction", exc, txn)
            if committing:  # commit_transaction() kept failing so: the outcome is unknown
                self._close(producer, txn)
                self._end(entry, Outcome.UNKNOWN, f"closed after the commit kept failing: {exc!r}")
            else:  # send() gave up (buffer or metadata): this application gives up the transaction
                self._abort(producer, entry, f"aborted after {exc!r}")
        except errors.FatalError as exc:
            self._expected("transaction", exc, txn)
            self._close(producer, txn)
            self._end_fatal(entry, committing, f"closed after {exc!r}")
        except errors.TxnProducerError as exc:
            self._unexpected("transaction", exc, txn)
            self._close(producer, txn)
            self._end_fatal(entry, committing, f"closed after unexpected {exc!r}")
        finally:
            if zombie is not None:
                self._adopt_successor(producer, zombie, txn)

    def _send(self, producer: TransactionalProducer, entry: TxnEntry, index: int) -> None:
        topic = self.rng.choices(self._topics, self._weights)[0]
        partitions = self.config.topics[topic][0]
        value = RecordId(self.producer_name, entry.txn, index).encode()
        how = self.rng.random()
        partition = self.rng.randrange(partitions) if how < 0.7 else None
        key = value if 0.7 <= how < 0.9 else None  # keyed: murmur2 chooses; else keyless: sticky
        with self.ledger.timed(self.producer_name, entry.txn, "send", self._max_block_s):
            future = producer.send(topic, value=value, key=key, partition=partition)
        self.ledger.sent(entry, future, topic, partition, self._delivery_s)

    def _flush(self, producer: TransactionalProducer, txn: int) -> None:
        """flush(timeout): a wait, not a verdict - a TimeoutError leaves the transaction going. The short
        wait may run out even when all is well (acks=all from three replicas of a real cluster can take
        longer than 50 ms), so only the long one running out counts as a failure in the calm phase."""
        timeout = self.rng.choice([0.05, self._max_block_s / 2])
        try:
            with self.ledger.timed(self.producer_name, txn, "flush", timeout):
                producer.flush(timeout)
        except errors.TimeoutError as exc:
            self.ledger.error(self.producer_name, txn, "flush", exc, self._calm and timeout >= 1.0)

    def _commit(self, producer: TransactionalProducer, entry: TxnEntry) -> None:
        self._call_again(producer.commit_transaction, "commit_transaction", entry.txn, ())
        self._end(entry, Outcome.COMMITTED, "commit_transaction() returned")

    def _abort(self, producer: TransactionalProducer, entry: TxnEntry, reason: str) -> None:
        """Abort; whatever happens, the transaction was never committed (no EndTxn(commit) was asked for
        or the library said it cannot commit), so nothing of it may be visible."""
        try:
            # an AbortableError from abort_transaction(): "the abort itself failed", call it again
            self._call_again(producer.abort_transaction, "abort_transaction", entry.txn,
                             (errors.AbortableError,))
        except errors.TxnProducerError as exc:
            expected = isinstance(exc, (errors.FatalError, errors.TimeoutError, errors.RetriableError,
                                        errors.AbortableError))
            self.ledger.error(self.producer_name, entry.txn, "abort_transaction", exc, self._calm, expected)
            self._close(producer, entry.txn)
            reason = f"{reason}; closed after the abort failed: {exc!r}"
        self._end(entry, Outcome.ABORTED, reason)

    def _call_again(self, call: Callable[[float | None], None], name: str, txn: int,
                    also: tuple[type[BaseException], ...]) -> None:
        """``call(timeout)``, made again after a TimeoutError or RetriableError (or one of ``also``), up to
        CALL_ATTEMPTS times; the last attempt's error is raised."""
        again: tuple[type[BaseException], ...] = (errors.TimeoutError, errors.RetriableError, *also)
        for attempt in range(CALL_ATTEMPTS):
            timeout = self.rng.choice([None, self._max_block_s / 2])
            bound = self._max_block_s if timeout is None else timeout
            try:
                with self.ledger.timed(self.producer_name, txn, name, bound):
                    call(timeout)
                return
            except again as exc:
                if attempt == CALL_ATTEMPTS - 1:
                    raise
                self._expected(name, exc, txn)

    def _end(self, entry: TxnEntry, outcome: Outcome, reason: str) -> None:
        self.ledger.end(entry, outcome, reason)
        self.control.transaction_ended()

    def _end_fatal(self, entry: TxnEntry, committing: bool, reason: str) -> None:
        """After a fatal error the coordinator may have committed only if a commit was asked for and no
        successor had fenced this instance before."""
        unknown = committing and not entry.fenced_before_commit
        self._end(entry, Outcome.UNKNOWN if unknown else Outcome.ABORTED, reason)

    # -- zombies ---------------------------------------------------------------------------------------------

    def _play_zombie(self, request: ZombieRequest, entry: TxnEntry) -> None:
        request.paused.set()
        if not request.resume.wait(max(0.0, self.control.deadline - time.monotonic())):
            return
        entry.fenced_before_commit = request.fenced

    def _adopt_successor(self, zombie: TransactionalProducer, request: ZombieRequest, txn: int) -> None:
        """After the zombie's transaction: close the zombie, carry on with the successor."""
        request.paused.set()  # also when the pause point was never reached (an early error)
        request.resume.wait(max(0.0, self.control.deadline - time.monotonic()))
        if not request.fenced:
            return  # no successor took over (its init failed and closed it): not a zombie after all
        if self.producer is zombie:
            self._close(zombie, txn)
        self.producer = request.successor


@attrs.define(eq=False)
class EosGroup:
    """``TransactionalProcessor`` instances of one group, each restarted (same instance name, so the same
    transactional id: it fences what its predecessor left) after ``run()`` raised, as an application's
    supervisor would. txnproducer errors (fatal, or a bounded wait of ``start()``) are expected under faults;
    anything else goes to the ledger as unexpected, unless it is one of ``known`` (a listed library bug)."""

    threads: ProcessorThreads
    names: list[str]
    ledger: Ledger
    overrides: Callable[[], dict[str, Any]]  # per instance start: e.g. random transaction sizes
    known: tuple[type[BaseException], ...] = ()
    stopping: threading.Event = attrs.field(factory=threading.Event)
    committed: int = 0
    aborted: int = 0
    restarts: int = 0
    _current: dict[str, TransactionalProcessor] = attrs.field(factory=dict)
    _supervisors: list[threading.Thread] = attrs.field(factory=list)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def start(self) -> None:
        for name in self.names:
            thread = threading.Thread(target=self._supervise, args=(name,), name=f"eos-{name}", daemon=True)
            self._supervisors.append(thread)
            thread.start()

    def _supervise(self, name: str) -> None:
        expected: tuple[type[BaseException], ...] = (errors.TxnProducerError, *self.known)
        while not self.stopping.is_set():
            with self._lock:
                if self.stopping.is_set():
                    return
                proc = self._current[name] = self.threads.build(name, **self.overrides())
            try:
                proc.run()
            except expected as exc:  # fatal, or start() ran out of time
                self.ledger.error(f"eos-{name}", None, "processor.run", exc, calm=False)
            except BaseException as exc:
                self.ledger.error(f"eos-{name}", None, "processor.run", exc, calm=False, expected=False)
            finally:
                proc.stop(timeout=10)  # no-op when run() closed it
                metrics = proc.metrics()
                with self._lock:
                    self.committed += metrics["transactions_committed"]
                    self.aborted += metrics["transactions_aborted"]
                    self.restarts += not self.stopping.is_set()

    def wait_drained(self, ends: Mapping[int, int], topic: str, timeout: float) -> bool:
        """Until the group committed at least ``ends`` (partition -> offset) of ``topic``."""
        with self.threads.cond:
            return self.threads.cond.wait_for(
                lambda: all(self.threads.committed.get(TopicPartition(topic, p), 0) >= end
                            for p, end in ends.items()),
                timeout)

    def describe(self) -> str:
        """Each instance's state, for a report on a pipeline that did not drain."""
        with self._lock:
            current = dict(self._current)
        lines = [f"pipeline committed offsets (on_commit): {sorted(self.threads.committed.items())}"]
        for name, proc in sorted(current.items()):
            assigned = sorted(f"{tp.topic}-{tp.partition}" for tp in proc.assignment())
            lines.append(f"  {name} ({proc.transactional_id}): closed={proc.closed} assigned={assigned} "
                         f"metrics={proc.metrics()}")
        return "\n".join(lines)

    def stop(self, timeout: float) -> None:
        """Commit what is open, close every instance and stop restarting them."""
        with self._lock:
            self.stopping.set()
            current = list(self._current.values())
        stoppers = [threading.Thread(target=p.stop, args=(timeout,)) for p in current]
        for thread in stoppers:
            thread.start()
        for thread in stoppers + self._supervisors:
            thread.join(timeout + 10)
            if thread.is_alive():
                self.ledger.error("eos", None, "stop", errors.TimeoutError(f"{thread.name} did not stop"),
                                  calm=False, expected=False)

