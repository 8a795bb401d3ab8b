"""One synchronous request/response path to the brokers for the admin tools, on the producer's network.

Why the producer's ``NetworkClient``: it already turns every security protocol the producer supports
(TLS with CA, client certificates and CRLs, SASL PLAIN/SCRAM/GSSAPI/OAUTHBEARER with the token cache)
into connections of ours, reports a refused handshake or authentication at once as a typed
:class:`~txnproducer.errors.AuthenticationError` naming broker and cause (not as a timeout). The admin
tools get the same semantics on every protocol by using it, not a second connection stack.

Why synchronous: an admin call is a short sequence of requests, each depending on the previous answer
(Metadata, then DescribeProducers to the leaders, then ListTransactions, ...). The calling thread
drives the network itself - the role the Sender thread has in the producer - so there is no thread to
start or stop. Every wait is bounded by the call's :class:`Deadline` (``default.api.timeout.ms``) and
ends early when the network reports an authentication failure.

A broker that stops answering without closing its connections (a grey failure: SIGSTOP, a long pause)
is left as the producer leaves it (``network/grey_failures.py``): a lookup (:meth:`AdminConnection.send_any`:
Metadata, FindCoordinator) it leaves unanswered for a second goes to another broker; a request to a
coordinator (``send(..., coordinator_of=...)``) is given up once another broker is named the coordinator,
and :class:`~txnproducer._internal.network.connection_errors.CoordinatorMoved` tells the caller to find it
again - not after ``request_timeout_ms``.

Each request is built for its destination broker's versions (``build(version)`` gets the highest
version both that broker and kafka-python's message classes speak), as the Java client does: during a
rolling upgrade two brokers may speak different versions, and a request module must refuse a filter the
broker cannot apply instead of letting a lower version drop it silently.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import kafka.errors as kerrors

from txnproducer._internal.log import get_logger
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.network.connection_errors import CoordinatorMoved
from txnproducer.errors import TimeoutError

from .errors import BrokerTooOldError, ClusterUnreachableError, UnexpectedBrokerError
from .settings import AdminSettings

__all__ = ["AdminConnection", "Deadline"]

#: the Kafka release that brought the admin APIs a broker may lack, for the error that says so
_SINCE = {61: ", Kafka 3.0+, KIP-664", 65: ", Kafka 3.0+, KIP-664", 66: ", Kafka 3.0+, KIP-664"}
_POLL_S = 0.1  # the longest single network wait; a wait returns earlier on any I/O
# what a request can fail with before an answer: the connection broke or the broker did not answer in
# request_timeout_ms; sent again (to a fresh connection) while the call's deadline allows
_CONNECTION_ERRORS = (
    kerrors.KafkaConnectionError,
    kerrors.NodeNotReadyError,
    kerrors.RequestTimedOutError,
    kerrors.KafkaTimeoutError,
    kerrors.UnknownBrokerIdError,
)


class Deadline:
    """The end of one admin call (monotonic clock); ``timeout_ms`` is what the messages name."""

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self._end = time.monotonic() + timeout_ms / 1000

    def remaining(self) -> float:
        return self._end - time.monotonic()

    def timeout(self, what: str, why: str = "") -> TimeoutError:
        return TimeoutError(
            f"{what}: not done within {self.timeout_ms} ms (default.api.timeout.ms)"
            f"{': ' + why if why else ''}"
        )


class AdminConnection:
    """Requests to chosen brokers, answered synchronously (see the module docstring)."""

    def __init__(self, settings: AdminSettings) -> None:
        self.settings = settings
        self._net = NetworkClient(settings.config)
        self._log = get_logger("txnproducer.admin")

    def deadline(self) -> Deadline:
        """A new deadline for one call: ``default.api.timeout.ms`` from now."""
        return Deadline(self.settings.timeout_ms)

    def close(self) -> None:
        self._net.close()

    # -- driving the network -----------------------------------------------------------------------

    def _pump(self, done: Callable[[], bool], deadline: Deadline, what: str) -> None:
        """Drive the network until ``done()``; raise at the deadline, on an authentication failure, or
        once no bootstrap server has taken a connection for ``settings.unreachable_after_ms``."""
        while not done():
            if self._net.auth_error is not None:
                raise self._net.auth_error
            self._check_reachable(what)
            remaining = deadline.remaining()
            if remaining <= 0:
                raise deadline.timeout(
                    what,
                    f"the cluster at {self.settings.config.bootstrap_servers} did not answer"
                    if not self._net.bootstrapped
                    else "",
                )
            self._net.maintain()
            self._net.poll(min(remaining, _POLL_S))

    def _check_reachable(self, what: str) -> None:
        bound_ms = self.settings.unreachable_after_ms
        if bound_ms is None:
            return
        unreachable = self._net.bootstrap_unreachable()
        if unreachable is None or unreachable[0] * 1000 < bound_ms or unreachable[1] < 2:
            return
        last = self._net.why_unreachable().strip().removeprefix("(").removesuffix(")")
        raise ClusterUnreachableError(
            f"{what}: no bootstrap server of {self.settings.config.bootstrap_servers} took a connection in"
            f" {unreachable[0]:.1f} s ({unreachable[1]} attempts each{'; ' + last if last else ''}). Is"
            " Kafka running there, listening on that address and port?")

    def any_node(self, deadline: Deadline) -> int:
        """A broker for a request any broker answers (Metadata): bootstrap first if needed."""
        self._pump(
            lambda: self._net.bootstrapped and self._net.least_loaded_node() is not None,
            deadline,
            "connecting to the cluster",
        )
        node = self._net.least_loaded_node()
        return int(node)

    def know_broker(self, node: int, host: str, port: int) -> None:
        """Make ``node`` reachable before a Metadata answer lists it (a coordinator)."""
        self._net.ensure_broker(node, host, port)

    def max_version(self, node: int, api_key: int) -> int | None:
        """The highest version of ``api_key`` the connected broker ``node`` advertises (None: it does
        not speak the API)."""
        return self._net.max_version(node, api_key)

    def backoff(self, deadline: Deadline, what: str) -> None:
        """Wait ``retry_backoff_ms`` before asking again after a retriable error code (a coordinator
        loading, markers still being written), driving the network meanwhile; TimeoutError when the
        deadline comes first."""
        until = time.monotonic() + self.settings.config.retry_backoff_ms / 1000
        self._pump(lambda: time.monotonic() >= until, deadline, what)

    def _connect(self, node: int, deadline: Deadline, what: str) -> None:
        def ready() -> bool:
            if self._net.is_ready(node):
                return True
            self._net.ensure_connecting(node)
            return False

        self._pump(ready, deadline, f"{what} (connecting to broker {node})")

    def send(
        self, node: int, request_cls: Any, build: Callable[[int], Any], deadline: Deadline, what: str,
        *, coordinator_of: tuple[int, str] | None = None,
    ) -> Any:
        """Send ``build(version)`` to broker ``node`` and return its answer. ``version`` is the highest
        one of ``request_cls`` that both the broker and kafka-python's message classes speak; ``build``
        may raise :class:`BrokerTooOldError` when that is too low for what it must send. A broken
        connection or a request unanswered within ``request_timeout_ms`` is sent again until the
        deadline. ``coordinator_of``: ``node`` coordinates that (key type, key); once it leaves the
        request unanswered and another broker is named, :class:`CoordinatorMoved` is raised (find the
        coordinator again)."""
        return self._send(lambda: node, request_cls, build, deadline, what, coordinator_of, anywhere=False)

    def send_any(self, request_cls: Any, build: Callable[[int], Any], deadline: Deadline, what: str) -> Any:
        """:meth:`send` a request any broker can answer (Metadata, FindCoordinator) to the least loaded
        broker; one that leaves it unanswered for a second while others answer is passed over."""
        return self._send(lambda: self.any_node(deadline), request_cls, build, deadline, what, None,
                          anywhere=True)

    def _send(self, choose: Callable[[], int], request_cls: Any, build: Callable[[int], Any],
              deadline: Deadline, what: str, coordinator_of: tuple[int, str] | None, *,
              anywhere: bool) -> Any:
        while True:
            node = choose()
            self._connect(node, deadline, what)
            broker_max = self.max_version(node, request_cls.API_KEY)
            if broker_max is None or broker_max < request_cls.min_version:
                since = _SINCE.get(request_cls.API_KEY, "")
                raise BrokerTooOldError(
                    f"{what}: broker {node} does not speak {_api_name(request_cls)} (API key"
                    f" {request_cls.API_KEY}{since}); upgrade it"
                )
            request = build(min(broker_max, request_cls.max_version))
            if coordinator_of is not None:
                future = self._net.send_to_coordinator(node, request, *coordinator_of)
            elif anywhere:
                future = self._net.send_anywhere(node, request)
            else:
                future = self._net.send(node, request)
            self._pump(functools.partial(_is_done, future), deadline, what)
            if future.succeeded():
                return future.value
            exc = future.exception
            if isinstance(exc, CoordinatorMoved):
                self._log.info("txn.admin_coordinator_moved", node=node, coordinator=exc.node_id, what=what)
                raise exc
            if not isinstance(exc, _CONNECTION_ERRORS):
                raise UnexpectedBrokerError(f"{what}: broker {node} failed the request: {exc!r}") from exc
            self._log.debug("txn.admin_request_retried", node=node, what=what, error=repr(exc))


def _is_done(future: Any) -> bool:
    return bool(future.is_done)


def _api_name(request_cls: Any) -> str:
    name: str = request_cls.__name__
    return name.removesuffix("Request")
