"""The Sender thread: the only thread that touches the network.

Each loop (the Java client's ``Sender.runOnce``):

1. If the transaction manager has a request in flight, only poll: no produce data moves while a
   coordinator request is outstanding, so the wire order the coordinator relies on (TV1:
   AddPartitionsToTxn before Produce; EndTxn after the last Produce answer) holds by
   construction. Else, if it has a next request (``next_request``), send it (FindCoordinator
   to the least-loaded node, the rest to the coordinator) and skip producing this loop.
2. Otherwise drain ready batches per leader into one ProduceRequest per node (TV2: v12;
   TV1: at most v11), and again while more is sendable at once.
3. Poll the network; Produce answers complete batches, retriable errors re-enqueue them with
   their sequence numbers (``produce_outcomes.py``), and batches older than ``delivery_timeout_ms``
   expire.

The loop never sleeps: it blocks in the network poll with a timeout derived from the next
linger deadline, retry backoff or expiry, and application threads wake it
(``NetworkClient.wakeup``) when a batch starts or fills or a transactional call needs the
network.
"""

from __future__ import annotations

import collections
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from txnproducer import errors
from txnproducer._internal.batching.accumulator import RecordAccumulator
from txnproducer._internal.batching.batch import ProducerBatch
from txnproducer._internal.listeners import Listeners
from txnproducer._internal.log import debug_enabled, get_logger
from txnproducer._internal.network.api_versions import PRODUCE_MAX_WITH_NAMES
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.network.connection_errors import BrokerSilent, CoordinatorMoved
from txnproducer._internal.overdue import OverdueWatch
from txnproducer._internal.produce_outcomes import ProduceOutcomes
from txnproducer._internal.protocol.produce_request import ProduceRequestData, Records, TopicData
from txnproducer._internal.protocol.produce_versions import PRODUCE_API_KEY
from txnproducer._internal.txn.state import COMPLETING, State
from txnproducer.config import ProducerConfig

__all__ = ["Sender"]


def _coordinator_request_failed(handler: Any, exc: BaseException) -> None:
    """A transactional request failed on the wire; one given up by the network's grey-failure watch
    names where it goes now (``network/grey_failures.py``), which the handler is told in its terms."""
    moved = (exc.node_id, exc.host, exc.port) if isinstance(exc, CoordinatorMoved) else None
    handler.fail(exc, moved_to=moved, ask_elsewhere=isinstance(exc, BrokerSilent))


def _no_poll(_timeout_s: float) -> None:
    """Stands in for the network poll where polling is not allowed (inside a poll callback)."""


# FindCoordinator's key type of each coordinator type
_KEY_TYPES = {"group": 0, "transaction": 1}

# the states run_once() checks on every iteration, as module constants (no attribute lookups)
_FATAL_ERROR = State.FATAL_ERROR
_ABORTABLE_ERROR = State.ABORTABLE_ERROR
_ABORTING = State.ABORTING_TRANSACTION


class Sender(threading.Thread):
    """Moves batches from the accumulator to the brokers and drives the transaction manager."""

    def __init__(self, *, network: NetworkClient, accumulator: RecordAccumulator,
                 transaction_manager: Any, config: ProducerConfig, metrics: Any = None) -> None:
        super().__init__(name=f"txnproducer-sender-{config.transactional_id}", daemon=True)
        self._net = network
        self._acc = accumulator
        self._tm = transaction_manager
        self._config = config
        self._metrics = metrics
        self._log = get_logger("txnproducer.sender").bind(
            transactional_id=config.transactional_id)
        self._running = True
        self._force_close = False
        self._cond = threading.Condition()
        self._tv_applied: int | None = None
        self._features_seen: Any = None  # the broker features _apply_transaction_version last read
        # what ended the loop; a plain attribute, as send() reads it on every record
        self.crashed: BaseException | None = None
        # called once if the thread dies (the producer's compiled send path stops taking records)
        self.on_crash: Callable[[], None] | None = None
        self.telemetry: Any = None  # tracing (otel/_attach.py): coordinator requests, batch resends
        self.stopped = False  # True once the thread has closed everything and is about to end
        # fired when the transaction version becomes known and when the thread stops: what
        # callers that must not block wait on instead of ``_cond``
        self.changed = Listeners()
        self._idle_poll_s = config.retry_backoff_ms / 1000
        # leaves a broker that stops answering once the cluster has moved on from it
        self._overdue = OverdueWatch(network, accumulator, transaction_manager, self._log)
        self._max_poll_s = min(config.request_timeout_ms, 1000) / 1000
        self._outcomes = ProduceOutcomes(
            network=network, accumulator=accumulator, transaction_manager=transaction_manager, config=config,
            metrics=metrics, event=self._event, telemetry=lambda: self.telemetry,
            after_answer=functools.partial(self._maybe_send_transactional_request, may_poll=False))
        # The first idle wait after produce data went out ends within linger_ms (see run_once): a
        # producer that just sent is likely to start its next batch soon, and a batch that lingers
        # at most as long as the Sender waits needs no wake-up (accumulator: looks_by). None (the
        # same wait as always) below a millisecond: a zero linger wakes the Sender for every batch.
        linger_s = config.linger_ms / 1000
        self._after_send_wait_s: float | None = linger_s if 0.001 <= linger_s < self._max_poll_s else None
        self._sent_since_idle = False

    def _event(self, level: str, event: str, **fields: Any) -> None:
        """Log ``event`` bound with the current producer id and epoch (DESIGN: logging)."""
        pe = self._tm.producer_id_and_epoch
        getattr(self._log, level)(event, producer_id=getattr(pe, "producer_id", -1),
                                  epoch=getattr(pe, "epoch", -1), **fields)

    # -- any thread -------------------------------------------------------------------------------

    def wakeup(self) -> None:
        self._net.wakeup()

    def initiate_close(self, force: bool = False) -> None:
        """Stop the loop; ``force`` skips finishing queued batches and the open transaction."""
        self._running = False
        if force:
            self._force_close = True
        self.wakeup()

    def wait_ready(self, timeout_s: float) -> int:
        """Wait until the cluster's transaction version is known and handed to the TM."""
        self._net.wait_until_ready(timeout_s)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while (tv := self.ready_version()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise errors.TimeoutError(
                        f"cluster transaction version not determined within {int(timeout_s * 1000)} ms")
                self._cond.wait(remaining)
            return tv

    def ready_version(self) -> int | None:
        """The step of :meth:`wait_ready` that does not wait: the transaction version handed to
        the TM, None while unknown, or raise (authentication failed, closed, thread ended)."""
        tv = self._tv_applied
        if tv is not None:
            return tv
        self._net.ready_features()  # raises what makes waiting pointless
        if self.crashed is not None or self.stopped or not self.is_alive():
            raise errors.ClosedError("the producer's network thread is not running") from self.crashed
        return None

    # -- the loop ---------------------------------------------------------------------------------

    def run(self) -> None:
        self._log.debug("txn.sender_started")
        try:
            failures = 0
            while self._running:
                try:
                    self.run_once()
                    failures = 0
                except Exception:  # a bug must not silently stop all delivery: log, go on
                    failures += 1
                    self._log.exception("txn.sender_loop_error", consecutive=failures)
                    if failures >= 50:
                        raise
                    self._net.poll(self._idle_poll_s)
            self._finish_after_close()
        except BaseException as exc:  # pragma: no cover - last line of defence
            self.crashed = exc
            if self.on_crash is not None:
                self.on_crash()
            self._log.exception("txn.sender_crashed")
            self._acc.abort_incomplete(errors.ClosedError(f"producer network thread crashed: {exc!r}"))
        finally:
            with self._cond:
                self._cond.notify_all()
            try:
                self._tm.close()
            finally:
                self._net.close()
            self.stopped = True
            self.changed.notify()
            self._log.debug("txn.sender_stopped")

    def _finish_after_close(self) -> None:
        """Graceful close: send what is queued, abort an open transaction (as the Java client)."""
        tm = self._tm
        while not self._force_close:
            if tm.has_fatal_error() or not tm.has_producer_id():
                break
            ongoing = tm.is_in_transaction() or tm.has_abortable_error() or tm.is_completing()
            if not ongoing and not tm.has_in_flight_request() and not self._acc.has_incomplete():
                break
            if ongoing and not tm.is_completing():
                self._event("info", "txn.abort_on_close")
                try:
                    tm.begin_abort()
                except errors.TxnProducerError:
                    break
            self.run_once()
        self._acc.abort_incomplete(errors.ClosedError("producer closed before the record was sent"))

    def run_once(self) -> None:
        """One iteration of the loop described in the module docstring."""
        net = self._net
        tm = self._tm
        net.maintain()
        auth_error = net.auth_error
        if auth_error is not None and not tm.has_fatal_error():
            # TLS or SASL refused us: fatal, as in the Java client (its Sender hands the
            # AuthenticationException to the transaction manager, which fails every request)
            tm.transition_to_fatal_error(auth_error)
        expiry = self._acc.next_expiry()  # the oldest incomplete batch's deadline: once per iteration
        if expiry is not None and expiry <= (now := time.monotonic()):
            self._outcomes.expire_batches(now)
            expiry = self._acc.next_expiry()
        features = net.features  # nearly every iteration: the features _apply_transaction_version saw
        if (features is None or features is not self._features_seen) \
                and not self._apply_transaction_version():
            net.poll(self._idle_poll_s)
            return
        state = tm.state  # read once: the checks below are the state's, as of this iteration
        if state is _FATAL_ERROR:
            exc = tm.last_error or errors.FatalError("producer is in a fatal error state")
            if self._acc.has_incomplete():
                self._acc.abort_incomplete(exc)
            net.poll(self._max_poll_s)
            return
        if state is _ABORTABLE_ERROR:
            self._acc.abort_undrained(tm.last_error or errors.TransactionAbortedError(
                "the transaction is aborting; record not sent"))
        if self._maybe_send_transactional_request():
            if tm.has_in_flight_request():
                self._overdue.check(time.monotonic())
            return
        if not tm.has_producer_id():
            net.poll(self._idle_poll_s)
            return
        now = time.monotonic()
        delay = self._send_produce_data(now, features)
        watching = self._overdue.check(now)
        if watching is not None:
            delay = min(delay, watching)
        if expiry is not None:
            delay = min(delay, max(0.0, expiry - now))
        txn_delay_ms = tm.next_request_delay_ms()
        if txn_delay_ms:  # a coordinator request is backing off (0: blocked on something else)
            delay = min(delay, txn_delay_ms / 1000)
        if self._sent_since_idle and not self._acc.has_incomplete():
            # Idle after sending (a small transaction's end): this one wait ends within linger_ms,
            # so the next transaction's first batch, which lingers that long, starts without
            # waking this thread (a wake-up costs a loop iteration and two context switches per
            # transaction; the Java client wakes its Sender for every new batch). At most one
            # short wait per burst of sending: an idle producer waits as long as before.
            self._sent_since_idle = False
            if self._after_send_wait_s is not None:
                delay = min(delay, self._after_send_wait_s)
        net.poll(delay)

    def _apply_transaction_version(self) -> bool:
        """Hand the broker's transaction version to the TM, only between transactions."""
        features = self._net.features
        if features is None or features is self._features_seen:  # nearly every iteration: nothing new
            return self._tv_applied is not None
        self._features_seen = features
        tv = features.effective_transaction_version
        # the TM defers a change until no transaction is open, and checks the versions these
        # features name once (they may have changed without the transaction version)
        self._tm.set_transaction_version(tv)
        if tv != self._tv_applied:
            with self._cond:
                if self._tv_applied is not None:
                    self._event("info", "txn.transaction_version_changed", old=self._tv_applied, new=tv)
                self._tv_applied = tv
                self._cond.notify_all()
            self.changed.notify()
        return self._tv_applied is not None

    # -- transactional requests ---------------------------------------------------------------

    def _maybe_send_transactional_request(self, may_poll: bool = True) -> bool:
        """Send the transaction manager's next request if it has one; True when this loop
        iteration is done (a request was sent or must wait, and the network was polled).

        ``may_poll=False`` is the call from a Produce answer's callback, inside the network
        poll (which must not be re-entered): the request goes out without waiting for the rest of
        that poll and the next loop iteration; every case that would wait is left to that
        iteration.
        """
        tm = self._tm
        net = self._net
        poll = net.poll if may_poll else _no_poll
        acc = self._acc
        incomplete = acc.has_incomplete()
        if incomplete and tm.state is _ABORTING and not tm.has_in_flight_request():
            acc.abort_undrained(errors.TransactionAbortedError(
                "the transaction was aborted before the record was sent"))
            incomplete = acc.has_incomplete()
        outlook = tm.request_outlook(incomplete)
        if outlook is None:  # a request in flight: nothing else goes to a coordinator meanwhile
            poll(self._max_poll_s)
            return True
        if not outlook:
            return False  # nearly every iteration: no lock taken
        handler = tm.next_request(self._acc.has_incomplete)  # evaluated under the TM lock
        if handler is None:
            return False
        ctype = handler.coordinator_type
        if ctype is None:
            node = net.least_loaded_node()  # a broker that left a request unanswered only if no other
            if node is None:
                tm.retry(handler)
                poll(self._idle_poll_s)
                return True
        else:
            found = tm.coordinator_node(ctype, handler.coordinator_key)
            if found is None:
                tm.lookup_coordinator(ctype, handler.coordinator_key)
                tm.retry(handler)
                return True
            node = found[0]
            net.ensure_broker(*found)
        delay = net.connection_delay(node)
        if delay > 0:  # the last connection attempt failed: rediscover, do not hammer
            if ctype is not None:
                tm.lookup_coordinator(ctype, handler.coordinator_key)
            tm.retry(handler)
            poll(min(delay, self._max_poll_s))
            return True
        if not net.is_ready(node):
            # connecting (its ApiVersions answer decides the request's version), or saturated by
            # produce requests: wait for the connection, then build the request for this broker
            net.ensure_connecting(node)
            if ctype is not None:  # a frozen broker's connection never gets ready: ask who coordinates
                self._overdue.coordinator_not_ready(ctype, handler.coordinator_key, node, time.monotonic())
            tm.retry(handler, backoff_ms=0)
            poll(self._max_poll_s)
            return True
        node_max = net.max_version(node, handler.request.API_KEY)
        if node_max is not None and node_max < handler.request.API_VERSION:
            try:
                handler.prepare(node_max)  # an older broker: the highest version it speaks
            except errors.TxnProducerError as exc:  # it does not speak this request at all
                handler.fail(exc)
                return True
        now = time.monotonic()
        if ctype is None:
            future = net.send_anywhere(node, handler.request)
        else:  # given up, naming the new coordinator, if the cluster moves on from a silent one
            future = net.send_to_coordinator(node, handler.request, _KEY_TYPES[ctype],
                                             handler.coordinator_key, now=now)
        tm.in_flight_started(handler)
        self._overdue.coordinator_request_sent(handler, node, now)
        if debug_enabled(self._log):
            self._event("debug", "txn.request_sent", api=type(handler.request).__name__, node=node)
        if self.telemetry is not None:  # its callbacks on the future run before the handler's
            self.telemetry.coordinator_request(handler, node, future)
        future.add_callback(handler.handle_response)
        future.add_errback(functools.partial(_coordinator_request_failed, handler))
        return True

    # -- produce data ---------------------------------------------------------------------------

    def _send_produce_data(self, now: float, features: Any) -> float:
        """Drain what is sendable into Produce requests; the poll's timeout. ``features``: the cluster's
        (run_once() read them: known, or it would not have come here)."""
        net = self._net
        acc = self._acc
        tm = self._tm
        if not acc.has_incomplete():  # what ready_and_drain answers then, without its arguments made
            return self._max_poll_s  # (the iteration after a commit's EndTxn answer: on the commit's path)
        # (the leaders as of now: no metadata answer is applied before this drain ends)
        leader_for, max_request_size, on_encode_error = net.leader_lookup(), self._config.max_request_size, \
            self._outcomes.fail_unencodable
        drained, delay, unknown_leader, unready = acc.ready_and_drain(
            leader_for, net.is_ready, now, tm.state in COMPLETING, max_request_size, on_encode_error)
        if unknown_leader:
            net.request_metadata_update()
        poll_s = self._max_poll_s if delay is None else max(0.0, min(delay, self._max_poll_s))
        for node in unready:  # sendable data, but no request may go there now: connect, or wait
            net.ensure_connecting(node)
            wait = net.connection_delay(node)
            if wait > 0:
                poll_s = min(poll_s, wait)
        if not drained:  # most iterations of a small transaction: nothing is sendable yet
            return poll_s
        assert features is not None
        tv = tm.transaction_version
        # One request per node per drain (at most one batch per partition, the protocol's rule),
        # drained again while more is sendable at once: what the Java client does in consecutive
        # loop iterations with a zero-timeout poll in between, without the iterations (a commit
        # of 1,000 records sends 3-5 requests in a row). A coordinator request that became
        # sendable meanwhile still goes first: the loop stops and the next iteration sends it.
        while drained:
            self._sent_since_idle = True
            for node, batches in drained.items():
                # each broker gets the version it speaks (brokers differ during a rolling upgrade)
                self._send_produce(node, batches,
                                   features.produce_version(tv, net.max_version(node, PRODUCE_API_KEY)))
            if tm.may_have_request(acc.has_incomplete()):
                return 0.0
            drained, _, _, _ = acc.ready_and_drain(
                leader_for, net.is_ready, now, tm.state in COMPLETING, max_request_size, on_encode_error)
        return poll_s

    def _send_produce(self, node: int, batches: list[ProducerBatch], version: int) -> None:
        # The request is our own encoder's (produce_codec: kafka-python's generic ProduceRequest
        # cost ~32 us of Sender CPU per request), sent on our connection to the leader.
        by_topic: dict[str, list[tuple[int, Records | None]]] = collections.defaultdict(list)
        records = 0
        size = 0
        for batch in batches:
            by_topic[batch.tp.topic].append((batch.tp.partition, batch.buffer))
            batch.sent_to = node
            records += batch.record_count
            size += len(batch.buffer)  # type: ignore[arg-type]  # drained: closed, its bytes fixed
        names_by_id: dict[Any, str] = {}
        if version > PRODUCE_MAX_WITH_NAMES:  # v13 names topics by id: all ids must be known
            for topic in by_topic:
                tid = self._net.topic_id(topic)
                if tid is None:
                    version = PRODUCE_MAX_WITH_NAMES
                    names_by_id.clear()  # v12 answers by name: a partial map would hide them
                    break
                names_by_id[tid] = topic
        topic_data: list[TopicData]
        if version > PRODUCE_MAX_WITH_NAMES:
            ids = {t: i for i, t in names_by_id.items()}
            topic_data = [(ids[t], p) for t, p in by_topic.items()]
        else:
            topic_data = list(by_topic.items())
        request = ProduceRequestData(
            version=version,
            transactional_id=self._config.transactional_id,
            acks=-1,
            timeout_ms=self._config.request_timeout_ms,
            topic_data=topic_data,
        )
        if self._metrics is not None:
            self._metrics.record_produce_request(len(batches), records, size)
        future = self._net.send(node, request)
        outcomes = self._outcomes
        future.add_callback(lambda response: outcomes.on_response(node, batches, response, names_by_id))
        future.add_errback(lambda exc: outcomes.on_failure(batches, exc))
