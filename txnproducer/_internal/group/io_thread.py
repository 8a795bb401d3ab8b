"""The member's own network thread: its connections, the calls other threads hand it, heartbeats.

Why a thread of its own (the Java client's heartbeat thread, with the network in it): a member must
heartbeat while the application processes what it polled, and a rebalance started by one ``poll``
must go on - JoinGroup answered, the leader's assignment computed, SyncGroup sent - even when that
``poll`` has returned. The network (:class:`~txnproducer._internal.network.client.NetworkClient`,
the producer's: bootstrap, TLS, SASL, its own PLAINTEXT connections) may be driven by one thread
only; this is that thread. Other threads never touch it: they queue a call with :meth:`GroupIo.call_soon`
and wait on the member's condition for its outcome.

Requests wait for their broker's connection to be ready before they are built (:meth:`GroupIo.send`),
so that each is built for the versions that broker's ApiVersions answer names.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs
import kafka.errors as kerrors

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.network.client import NetworkClient

__all__ = ["GroupIo"]

_IDLE_S = 1.0  # the longest the thread sleeps without a reason to wake up


@attrs.define
class _PendingSend:
    node: int | str  # a bootstrap server's id is a string until Metadata names its broker id
    build: Callable[[Callable[[int], int | None]], Any]
    on_response: Callable[[Any], None]
    on_failure: Callable[[BaseException], None]
    timeout_s: float | None
    give_up_at: float
    coordinator_of: tuple[int, str] | None = None  # (key type, key) of a request to a coordinator
    anywhere: bool = False  # any broker can answer it (FindCoordinator)


class GroupIo:
    """Runs the member's network (see the module docstring).

    ``tick(now) -> seconds`` is called on every turn of the loop, on this thread, and says how soon
    it wants to run again (heartbeats, retries); ``on_error(exc)`` is told of anything a call or the
    tick raised (the member turns it into a fatal error for its owner).
    """

    def __init__(self, network: NetworkClient, *, name: str, setup_timeout_s: float,
                 tick: Callable[[float], float], on_error: Callable[[BaseException], None]) -> None:
        self.network = network
        self._tick = tick
        self._on_error = on_error
        self._setup_timeout_s = setup_timeout_s
        self._calls: collections.deque[Callable[[], None]] = collections.deque()
        self._lock = threading.Lock()
        self._pending: list[_PendingSend] = []
        self._stopping = False
        self._log = get_logger("txnproducer.group")
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def on_io_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the IO thread, in order (any thread)."""
        with self._lock:
            self._calls.append(fn)
        self.network.wakeup()

    def wakeup(self) -> None:
        self.network.wakeup()

    def stop(self, timeout_s: float) -> bool:
        """Stop the thread (it fails what is still waiting for a connection) and close the network;
        False if the thread did not end within ``timeout_s`` (it is a daemon: it ends with the
        process, and ends its loop within a second)."""
        with self._lock:
            self._stopping = True
        self.network.wakeup()
        if self._thread.is_alive() and not self.on_io_thread:
            self._thread.join(max(0.0, timeout_s))
        return not self._thread.is_alive()

    # -- on the IO thread -----------------------------------------------------------------------

    def send(self, node: int | str, build: Callable[[Callable[[int], int | None]], Any],
             on_response: Callable[[Any], None], on_failure: Callable[[BaseException], None],
             timeout_s: float | None = None, *, coordinator_of: tuple[int, str] | None = None,
             anywhere: bool = False) -> None:
        """Send to ``node`` once its connection is ready: ``build(max_version)`` makes the request,
        where ``max_version(api_key)`` is that broker's highest version (None: it did not say).
        Exactly one of ``on_response(response)`` / ``on_failure(exc)`` is called, on this thread;
        a broker that cannot be reached fails it (KafkaConnectionError), and so does a request the
        broker refuses to frame or answer. ``coordinator_of``: ``node`` coordinates that (key type,
        key) - if it stops answering and another broker is named, the request fails with
        CoordinatorMoved; ``anywhere``: any broker can answer it - if ``node`` stops answering, it
        fails with BrokerSilent (``network/grey_failures.py``)."""
        give_up = time.monotonic() + self._setup_timeout_s + 1.0
        self._pending.append(_PendingSend(node, build, on_response, on_failure, timeout_s, give_up,
                                          coordinator_of, anywhere))
        self._send_ready()

    def _send_ready(self) -> None:
        if not self._pending:
            return
        network = self.network
        now = time.monotonic()
        current, self._pending = self._pending, []
        waiting: list[_PendingSend] = []
        for item in current:
            node = item.node
            try:
                if network.is_ready(node):
                    self._send_now(item)
                elif network.auth_error is not None:
                    item.on_failure(network.auth_error)
                elif (not network.has_connection(node) and network.connection_delay(node) > 0) \
                        or now >= item.give_up_at:
                    item.on_failure(kerrors.KafkaConnectionError(
                        f"broker {node} cannot be reached now (connection failed or not ready within "
                        "socket_connection_setup_timeout_ms)"))
                else:
                    network.ensure_connecting(node)
                    waiting.append(item)
            except BaseException as exc:  # one request's trouble must not lose the others
                self._on_error(exc)
        self._pending = waiting + self._pending  # (callbacks may have sent more meanwhile)

    def _send_now(self, item: _PendingSend) -> None:
        node = item.node

        def max_version(api_key: int) -> int | None:
            return self.network.max_version(node, api_key)

        try:
            request = item.build(max_version)
        except BaseException as exc:  # an unsupported version, a request we cannot build
            item.on_failure(exc)
            return
        if item.coordinator_of is not None:
            key_type, key = item.coordinator_of
            future = self.network.send_to_coordinator(node, request, key_type, key, timeout_s=item.timeout_s)
        elif item.anywhere:
            future = self.network.send_anywhere(node, request)
        else:
            future = self.network.send(node, request, timeout_s=item.timeout_s)
        future.add_callback(lambda response: self._answered(item, response))
        future.add_errback(item.on_failure)

    def _answered(self, item: _PendingSend, response: Any) -> None:
        """Hand an answer on. kafka-python's futures swallow what a callback raises: an answer we
        could not process would leave its waiter waiting, so it fails the request instead."""
        try:
            item.on_response(response)
        except BaseException as exc:
            self._log.error("group.answer_not_processed", api=type(response).__name__, error=repr(exc))
            item.on_failure(errors.FatalError(
                f"could not process the {type(response).__name__} answer of broker {item.node} "
                f"({type(exc).__name__}: {exc})"))

    def _run(self) -> None:
        network = self.network
        try:
            while True:
                with self._lock:
                    if self._stopping:
                        break
                    calls, self._calls = self._calls, collections.deque()
                for fn in calls:
                    self._guarded(fn)
                try:
                    network.maintain()
                except Exception as exc:  # bootstrap trouble: the waits that need it time out
                    self._log.debug("group.network_maintain_failed", error=repr(exc))
                self._guarded(self._send_ready)
                wait = _IDLE_S
                try:
                    wait = min(wait, max(0.0, self._tick(time.monotonic())))
                except BaseException as exc:
                    self._on_error(exc)
                if self._pending:
                    wait = min(wait, 0.05)  # a connection becoming ready is no network event of ours
                network.poll(wait)
        except BaseException as exc:  # the loop itself broke: nothing will be answered any more
            self._on_error(exc)
        finally:
            stopped = kerrors.KafkaConnectionError("the group member is closing")
            for item in self._pending:
                self._guarded(lambda item=item: item.on_failure(stopped))  # type: ignore[misc]
            self._pending = []
            network.close()

    def _guarded(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as exc:
            self._on_error(exc)
