"""The chaos tier's fault scheduler: a seeded random schedule of MockCluster faults.

Why MockCluster-specific and apart from the workload: how a fault is made is the cluster's business (a
real-broker run would kill -9 or SIGSTOP processes instead); the workload and the checker in
``tests/_support`` only see its effects. The schedule is a sequence of short episodes - one or two faults,
held for a bounded time, then undone - drawn from ``random.Random(seed)``, so the seed names the schedule
(thread timing still varies from run to run). Every episode is logged with the request-log position at which
it began, so a failure report can show faults between the requests they disturbed.

Error codes are injected only on the APIs where Kafka answers them, per class (retriable: the library retries;
abortable: the transaction must abort; fatal: the producer must close), so that what the client is told is
always something a broker could say. An injected answer is given instead of handling the request, so the
cluster's state never disagrees with it - except for a retry of a request already handled, see ABORTABLE.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from tests._support.chaos_workload import ProducerWorker
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.testing import MockCluster
from txnproducer.testing.txn_metadata import MAX_EPOCH

__all__ = ["FAULT_KINDS", "FaultEvent", "FaultScheduler"]

# api -> codes Kafka answers there, per class. TV1-only APIs are dropped for TV2 clusters (no client sends
# them there, so a rule for them would never be used).
RETRIABLE: dict[str, tuple[int, ...]] = {
    "Produce": (ec.NOT_LEADER_OR_FOLLOWER, ec.REQUEST_TIMED_OUT, ec.NOT_ENOUGH_REPLICAS,
                ec.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ec.UNKNOWN_TOPIC_OR_PARTITION,
                ec.CONCURRENT_TRANSACTIONS),
    "FindCoordinator": (ec.COORDINATOR_NOT_AVAILABLE, ec.COORDINATOR_LOAD_IN_PROGRESS),
    "InitProducerId": (ec.COORDINATOR_NOT_AVAILABLE, ec.NOT_COORDINATOR, ec.COORDINATOR_LOAD_IN_PROGRESS,
                       ec.CONCURRENT_TRANSACTIONS),
    "EndTxn": (ec.COORDINATOR_NOT_AVAILABLE, ec.NOT_COORDINATOR, ec.COORDINATOR_LOAD_IN_PROGRESS,
               ec.CONCURRENT_TRANSACTIONS),
    "TxnOffsetCommit": (ec.COORDINATOR_NOT_AVAILABLE, ec.NOT_COORDINATOR, ec.COORDINATOR_LOAD_IN_PROGRESS,
                        ec.CONCURRENT_TRANSACTIONS, ec.REQUEST_TIMED_OUT, ec.UNKNOWN_TOPIC_OR_PARTITION),
    "AddPartitionsToTxn": (ec.COORDINATOR_NOT_AVAILABLE, ec.NOT_COORDINATOR, ec.CONCURRENT_TRANSACTIONS),
    "AddOffsetsToTxn": (ec.COORDINATOR_NOT_AVAILABLE, ec.NOT_COORDINATOR, ec.CONCURRENT_TRANSACTIONS),
}
# Not EndTxn: its retry (after a dropped answer) may be of a commit the coordinator already made, and an
# abortable answer to that would be false - the client would abort a committed transaction. A Produce or
# TxnOffsetCommit already handled is covered by the abort that follows, and a fatal answer leaves the
# outcome unknown, which the checker allows either way.
ABORTABLE: dict[str, tuple[int, ...]] = {
    "Produce": (ec.TRANSACTION_ABORTABLE, ec.INVALID_PRODUCER_EPOCH, ec.OUT_OF_ORDER_SEQUENCE_NUMBER,
                ec.UNKNOWN_PRODUCER_ID, ec.TOPIC_AUTHORIZATION_FAILED),
    "TxnOffsetCommit": (ec.ILLEGAL_GENERATION, ec.UNKNOWN_MEMBER_ID, ec.TRANSACTION_ABORTABLE),
}
FATAL: dict[str, tuple[int, ...]] = {
    "Produce": (ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,),
    "InitProducerId": (ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,),
    "EndTxn": (ec.PRODUCER_FENCED, ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    "TxnOffsetCommit": (ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,),
    "AddPartitionsToTxn": (ec.PRODUCER_FENCED, ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    "AddOffsetsToTxn": (ec.PRODUCER_FENCED, ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
}
TV1_ONLY = ("AddPartitionsToTxn", "AddOffsetsToTxn")

# APIs whose requests are dropped or delayed: the producers' (fault kinds "drop_connection", "delay"), and
# the ones the pipeline's consumers use ("group_drop_connection", "group_delay").
PRODUCER_APIS = ("Produce", "FindCoordinator", "InitProducerId", "EndTxn", "TxnOffsetCommit", "Metadata",
                 "AddPartitionsToTxn", "AddOffsetsToTxn")
GROUP_APIS = ("Fetch", "Heartbeat", "JoinGroup", "SyncGroup", "OffsetFetch", "ListOffsets",
              "ConsumerGroupHeartbeat")

FAULT_KINDS = (
    "stop_broker", "move_coordinator", "freeze_coordinator", "drop_connection", "drop_all_connections",
    "delay", "black_hole",
    "retriable_error", "abortable_error", "fatal_error", "expire_transaction", "hold_markers",
    "epoch_near_exhaustion", "zombie", "restart", "rebalance", "group_drop_connection", "group_delay",
)


@attrs.frozen
class FaultEvent:
    """One fault as the scheduler made it: when (seconds into the run), where in the request log."""

    at_s: float
    seq: int
    text: str


class FaultScheduler(threading.Thread):
    """Draws episodes until :meth:`stop`; :meth:`calm_down` then undoes whatever is left.

    ``workers`` cooperate for zombies and restarts; ``transactional_ids`` (workers' and processors') are
    the targets of coordinator moves and transaction timeouts; ``kinds`` the fault kinds to draw from.
    """

    def __init__(self, cluster: MockCluster, rng: Any, workers: Sequence[ProducerWorker],
                 transactional_ids: Sequence[str], group_id: str, kinds: Sequence[str],
                 hold_s: tuple[float, float] = (0.05, 1.0), gap_s: tuple[float, float] = (0.0, 0.2)) -> None:
        super().__init__(name="chaos-faults", daemon=True)
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {FAULT_KINDS}")
        self.cluster = cluster
        self.rng = rng
        self.workers = list(workers)
        self.transactional_ids = list(transactional_ids)
        self.group_id = group_id
        self.kinds = list(kinds)
        self.hold_s = hold_s
        self.gap_s = gap_s
        self.events: list[FaultEvent] = []
        self.errors: list[BaseException] = []
        self._halt = threading.Event()
        self._started_at = time.monotonic()
        tv1 = cluster.state.transaction_version < 2
        tables = {"retriable": RETRIABLE, "abortable": ABORTABLE, "fatal": FATAL}
        self._apis = {cls: {api: codes for api, codes in table.items() if tv1 or api not in TV1_ONLY}
                      for cls, table in tables.items()}
        self._disturbed = {"producer": [api for api in PRODUCER_APIS if tv1 or api not in TV1_ONLY],
                           "group": list(GROUP_APIS)}
        self._stopped: set[int] = set()
        # one explicit list: fault kind -> what makes it (and returns what undoes it)
        self._makers: dict[str, Callable[[], list[Callable[[], None]]]] = {
            "stop_broker": self._stop_broker,
            "move_coordinator": self._move_coordinator,
            "freeze_coordinator": self._freeze_coordinator,
            "drop_connection": functools.partial(self._drop_connection, "producer"),
            "drop_all_connections": self._drop_all_connections,
            "delay": functools.partial(self._delay, "producer"),
            "black_hole": self._black_hole,
            "retriable_error": functools.partial(self._inject, "retriable"),
            "abortable_error": functools.partial(self._inject, "abortable"),
            "fatal_error": functools.partial(self._inject, "fatal"),
            "expire_transaction": self._expire_transaction,
            "hold_markers": self._hold_markers,
            "epoch_near_exhaustion": self._epoch_near_exhaustion,
            "zombie": self._zombie,
            "restart": self._restart,
            "rebalance": self._rebalance,
            "group_drop_connection": functools.partial(self._drop_connection, "group"),
            "group_delay": functools.partial(self._delay, "group"),
        }
        assert set(self._makers) == set(FAULT_KINDS)

    def stop(self, timeout: float = 30.0) -> None:
        self._halt.set()
        self.join(timeout)

    def run(self) -> None:
        try:
            while not self._halt.is_set():
                self._episode()
        except BaseException as exc:  # reported by the test: a scheduler that died stops making faults
            self.errors.append(exc)

    def log(self, text: str) -> None:
        at = time.monotonic() - self._started_at
        self.events.append(FaultEvent(at, self.cluster.requests.next_seq(), text))

    def _episode(self) -> None:
        kinds = self.rng.sample(self.kinds, k=min(len(self.kinds), self.rng.choice((1, 2, 2, 3))))
        undo: list[Callable[[], None]] = []
        for kind in kinds:
            undo.extend(self._makers[kind]())
        self._halt.wait(self.rng.uniform(*self.hold_s))  # the fault lasts a while
        self.cluster.clear_faults()
        for step in undo:
            step()
        self._halt.wait(self.rng.uniform(*self.gap_s))

    def calm_down(self) -> None:
        """Undo every fault: no rule, no black hole, every broker up, no marker held."""
        self.cluster.clear_faults()
        for broker_id in sorted(self._stopped):
            self.cluster.start_broker(broker_id)
        self._stopped.clear()
        self.cluster.release_markers()
        self.log("calm: every fault undone")

    # -- the faults: each makes one and returns what undoes it (besides clear_faults) ----------------------

    def _stop_broker(self) -> list[Callable[[], None]]:
        alive = [b for b in self.cluster.broker_ids if b not in self._stopped]
        if len(alive) < 2:
            return []
        broker_id = self.rng.choice(alive)
        self.log(f"stop_broker({broker_id})")
        self.cluster.stop_broker(broker_id)
        self._stopped.add(broker_id)

        def start() -> None:
            self.cluster.start_broker(broker_id)
            self._stopped.discard(broker_id)
            self.log(f"start_broker({broker_id})")

        return [start]

    def _move_coordinator(self) -> list[Callable[[], None]]:
        tid = self.rng.choice(self.transactional_ids)
        to = self.rng.choice(self.cluster.broker_ids)
        self.log(f"move_coordinator({tid!r}, to_broker={to})")
        self.cluster.move_coordinator(tid, to)
        return []

    def _freeze_coordinator(self) -> list[Callable[[], None]]:
        """SIGSTOP of a transaction coordinator (or the pipeline group's): its connections stay open and it
        answers nothing; the controller fences it 0.5-2 s on (a session timeout, scaled down) and its keys
        move; it stays frozen a while after that, then is thawed - its late answers come, from the
        cluster's state then - and rejoins (clear_faults) at the episode's end."""
        alive = [b for b in self.cluster.broker_ids if b not in self._stopped]
        if len(alive) < 2:
            return []
        if self.rng.random() < 0.25:
            key, key_type = self.group_id, "group"
        else:
            key, key_type = self.rng.choice(self.transactional_ids), "transaction"
        broker_id = self.cluster.coordinator_for(key, key_type)
        if broker_id in self._stopped:
            return []
        fence_after = self.rng.uniform(0.5, 2.0)
        self.log(f"freeze_broker({broker_id}) [the {key_type} coordinator of {key!r}], fenced after"
                 f" {fence_after:.1f}s")
        self.cluster.freeze_broker(broker_id, fence_after_s=fence_after)
        self._halt.wait(fence_after + self.rng.uniform(0.2, 2.0))  # frozen past its fence

        def thaw() -> None:
            self.log(f"thaw_broker({broker_id}) (clear_faults thawed it; it rejoined)")

        return [thaw]

    def _drop_connection(self, side: str) -> list[Callable[[], None]]:
        api = self.rng.choice(self._disturbed[side])
        count = self.rng.randint(1, 3)
        when = self.rng.choice(("before", "after"))
        self.log(f"drop_connection_after({api}, count={count}, when={when!r})")
        self.cluster.drop_connection_after(api, count=count, when=when)
        return []

    def _drop_all_connections(self) -> list[Callable[[], None]]:
        broker_id = self.rng.choice([None, *self.cluster.broker_ids])
        self.log(f"drop_connections(broker_id={broker_id})")
        self.cluster.drop_connections(broker_id)
        return []

    def _delay(self, side: str) -> list[Callable[[], None]]:
        api = self.rng.choice(self._disturbed[side])
        delay_ms = self.rng.randint(20, 800)
        count = self.rng.randint(1, 5)
        self.log(f"delay_responses({api}, {delay_ms} ms, count={count})")
        self.cluster.delay_responses(api, delay_ms, count=count)
        return []

    def _black_hole(self) -> list[Callable[[], None]]:
        broker_id = self.rng.choice(self.cluster.broker_ids)
        self.log(f"black_hole({broker_id})")
        self.cluster.black_hole(broker_id)

        def lift() -> None:
            self.log(f"black_hole({broker_id}, enabled=False)")

        return [lift]  # clear_faults() lifts it

    def _inject(self, cls: str) -> list[Callable[[], None]]:
        table = self._apis[cls]
        api = self.rng.choice(sorted(table))
        code = self.rng.choice(table[api])
        count = self.rng.randint(1, 5)
        self.log(f"inject_error({api}, {ec.error_name(code)}, count={count}) [{cls}]")
        self.cluster.inject_error(api, code, count=count)
        return []

    def _expire_transaction(self) -> list[Callable[[], None]]:
        tid = self.rng.choice(self.transactional_ids)
        self.log(f"expire_transaction({tid!r})")
        self.cluster.expire_transaction(tid)
        return []

    def _hold_markers(self) -> list[Callable[[], None]]:
        tid = self.rng.choice([None, *self.transactional_ids])
        self.log(f"hold_markers({tid!r})")
        self.cluster.hold_markers(tid)

        def release() -> None:
            self.cluster.release_markers()
            self.log("release_markers()")

        return [release]

    def _epoch_near_exhaustion(self) -> list[Callable[[], None]]:
        worker = self.rng.choice(self.workers)
        epoch = MAX_EPOCH - 2 - self.rng.randint(0, 3)  # init_transactions() adds one

        def before_init(tid: str) -> None:
            self.cluster.set_producer_epoch(tid, epoch)  # ValueError when not idle: a plain restart
            self.log(f"set_producer_epoch({tid!r}, {epoch})")

        self.log(f"restart {worker.producer_name} with its epoch at {epoch} (if idle)")
        worker.restart_next(before_init)
        return []

    def _restart(self) -> list[Callable[[], None]]:
        worker = self.rng.choice(self.workers)
        self.log(f"restart {worker.producer_name}")
        worker.restart_next(lambda tid: None)
        return []

    def _zombie(self) -> list[Callable[[], None]]:
        """Pause a worker mid-transaction, fence it with a successor, let it go on as a zombie."""
        worker = self.rng.choice(self.workers)
        request = worker.pause_next()
        if not request.paused.wait(10.0):
            request.resume.set()  # it never got there (busy failing): no zombie this time
            self.log(f"zombie: {worker.producer_name} did not pause")
            return []
        self.log(f"zombie: {worker.producer_name} paused mid-transaction; a successor inits")
        worker.fence(request)
        self.log(f"zombie: successor of {worker.producer_name} fenced={request.fenced}; the zombie resumes")
        return []

    def _rebalance(self) -> list[Callable[[], None]]:
        self.log(f"force_rebalance({self.group_id!r})")
        self.cluster.force_rebalance(self.group_id)
        return []
