"""Adapter over kafka-python's connections and cluster metadata.

Why an adapter: kafka-python 3.0.12's ``KafkaNetClient`` runs an event loop that must be driven
by exactly one thread (concurrent ``poll`` raises). The Sender thread is that thread; this class
gives it a small, typed surface (send, poll, leaders, versions) and gives application threads
the few things they may do safely: wake the Sender, ask for a topic's metadata and wait for it.

It also reads what kafka-python's connection negotiation drops: the broker's *finalized
features* (``transaction.version`` decides TV1 vs TV2, KIP-890) from our own ApiVersions v3+
request, together with the per-API version ranges used to choose request versions.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import uuid
from typing import Any

import kafka.errors as kerrors
from kafka.future import Future
from kafka.net.compat import KafkaNetClient
from kafka.net.selector import NetworkSelector
from kafka.net.transport import KafkaTCPTransport
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.listeners import Listeners
from txnproducer._internal.log import get_logger
from txnproducer._internal.network.api_versions import BrokerFeatures, features_from
from txnproducer._internal.network.auth_failures import ConnectionDiagnosis
from txnproducer._internal.network.channel_security import ChannelSecurity, channel_security
from txnproducer._internal.network.connection import DirectConnection
from txnproducer._internal.network.direct_connections import DirectConnections
from txnproducer._internal.network.failure_log import ConnectionFailureLog
from txnproducer._internal.network.lean_poll import lean_poll
from txnproducer._internal.network.oauth_tokens import TokenCache, as_token_source
from txnproducer._internal.network.redaction import install_secret_filter
from txnproducer._internal.network.secured import EofLastTCPTransport, SecuredConnectionManager
from txnproducer._internal.network.selector import QuietMissSelector
from txnproducer._internal.network.settings import ConnectionSettings
from txnproducer._internal.network.tls_context import build_ssl_context
from txnproducer._internal.protocol import error_codes as ec

__all__ = ["NetworkClient"]

_API_VERSIONS_VERSION = 3  # the first version with finalized features (KIP-584)
# transports whose writes may be done at once (TLS transports may need a read first)
_PLAIN_TRANSPORTS = (KafkaTCPTransport, EofLastTCPTransport)


class NetworkClient:
    """kafka-python connections + metadata, driven by the Sender thread.

    Thread rules: ``wakeup``, ``request_topic``, ``wait_for_topic``, ``partitions_for``,
    ``wait_until_ready``, their steps that do not wait (``topic_partitions``, ``ready_features``),
    ``changed`` and the read-only properties may be called from any thread; everything
    else only from the Sender thread.
    """

    #: The Sender's requests go over its own connections (:mod:`.direct_connections`) in every
    #: security protocol and SASL mechanism they speak (all but GSSAPI); tests set this to False to run
    #: kafka-python's connection path.
    direct_io_enabled = True

    def __init__(self, config: ConnectionSettings, client: Any = None) -> None:
        self._config = config
        install_secret_filter()
        self._cond = threading.Condition()
        # fired with every notify of ``_cond``: what callers that must not block wait on instead
        self.changed = Listeners()
        self._diagnosis = ConnectionDiagnosis(config)
        self._failures = ConnectionFailureLog(get_logger("txnproducer.network"))
        self._auth_error: errors.AuthenticationError | None = None
        self._token_cache: TokenCache | None = None
        self._ssl_context: Any = None
        self._client = client if client is not None else self._kafka_client(config)
        # our own kafka-python client (not a test's): its loop and selector are the ones lean_poll
        # knows, and our selector dispatches the Sender's connections
        self._lean_poll = client is None
        security: ChannelSecurity | None = None
        if client is None and self.direct_io_enabled:
            security = channel_security(config, self._ssl_context, self._token_cache)
        self._direct_io = security is not None
        self.cluster = self._client.cluster
        self._direct = DirectConnections(
            config, self._client._net._selector, broker_address=self.cluster.broker_metadata,
            api_versions_request=self._api_versions_request, on_ready=self._direct_ready,
            on_close=self._direct_closed, security=security, on_setup_failed=self._connection_failed,
            failures=self._failures)
        self._manager = self._client._manager
        self._topics_to_add: set[str] = set()
        # topics the last metadata answer refused us (TOPIC_AUTHORIZATION_FAILED), and a count of
        # metadata answers, so that a waiting send() can tell a fresh refusal from an old one
        self._unauthorized: frozenset[str] = frozenset()
        self._metadata_answers = 0
        # topic -> sorted partition ids, replaced (not mutated) on every metadata update;
        # send() reads it directly (a hit is one dict lookup), partitions_for() fills it
        self.partition_cache: dict[str, list[int]] = {}
        self._features: BrokerFeatures | None = None
        self._features_future: Future | None = None
        self._features_at = 0.0
        self._features_error: BaseException | None = None
        self._bootstrap_started = False
        self._api_versions_version = _API_VERSIONS_VERSION
        self._closed = False
        # a wake-up is written and the poll has not returned since (see wakeup())
        self._wake_pending = False
        self._log = get_logger("txnproducer.network")
        self.cluster.add_listener(self._on_metadata)

    def _kafka_client(self, config: ConnectionSettings) -> Any:
        """kafka-python's client, with the connection manager that reports TLS/SASL failures
        (:mod:`secured`), the TLS context built once and, for OAUTHBEARER, the token cache."""
        kwargs = config.kafka_client_kwargs()
        context = build_ssl_context(config)  # ConfigError now, not per connection later
        if context is not None:
            kwargs["ssl_context"] = context
            self._ssl_context = context  # the Sender's own connections use it too
        if config.sasl_mechanism == "OAUTHBEARER":
            name = getattr(config, "transactional_id", None) or config.effective_client_id
            self._token_cache = TokenCache(as_token_source(config.sasl_oauth_token_provider), name)
            kwargs["sasl_oauth_token_provider"] = self._token_cache
        net = NetworkSelector(selector=QuietMissSelector, **kwargs)
        manager = SecuredConnectionManager(net, self._connection_failed, self._connection_ok, **kwargs)
        return KafkaNetClient(net=net, manager=manager)

    def _connection_failed(self, node: Any, broker: Any, exc: BaseException) -> None:
        """A kafka-python connection's setup failed (Sender thread): an authentication error ends
        every wait at once; anything else is kept for the message of a call that times out."""
        verdict = self._diagnosis.failed(node, broker, exc)
        if verdict is None:
            address = f"{broker.host}:{broker.port}" if broker is not None else str(node)
            self._failures.failed(node, address, _cause(exc))
            return
        with self._cond:
            first = self._auth_error is None
            if first:
                self._auth_error = verdict
            self._notify()
        if first:
            self._log.error("txn.authentication_failed", node=node, error=str(verdict))

    def _connection_ok(self, node: Any) -> None:
        self._diagnosis.connected(node)
        self._failures.connected(node)

    @property
    def auth_error(self) -> errors.AuthenticationError | None:
        """The first authentication failure (TLS or SASL), if any: fatal for the producer."""
        return self._auth_error

    def _why_unreachable(self) -> str:
        last = self._diagnosis.last_errors()
        if last is not None:
            return f" (last connection errors: {last})"
        if self._features_error is not None:
            return f" (last error: {self._features_error})"
        return ""

    def _notify(self) -> None:
        """Wake every waiter, blocked or not (caller holds ``_cond``)."""
        self._cond.notify_all()
        self.changed.notify()

    # -- any thread ----------------------------------------------------------------------------

    def wakeup(self) -> None:
        """Interrupt the Sender's network poll (cheap; safe from any thread).

        A wake-up written since the poll last returned is not written again: a one-record
        transaction wakes the Sender twice (its first record, then the commit) before it runs
        on a busy CPU, and each write is a system call. Safe because the flag is cleared only
        after the poll returns, which is after the wake-up socket was drained and before the
        Sender looks at what there is to do: a caller that skips the write made its change
        before that look."""
        if not self._wake_pending:
            self._wake_pending = True
            self._client.wakeup()

    @property
    def features(self) -> BrokerFeatures | None:
        return self._features

    def wait_until_ready(self, timeout_s: float) -> BrokerFeatures:
        """Wait until bootstrap finished and the broker features are known."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while (features := self.ready_features()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self.unreachable_error(timeout_s)
                self._cond.wait(remaining)
            return features

    def ready_features(self) -> BrokerFeatures | None:
        """The step of :meth:`wait_until_ready` that does not wait: the features, None while
        unknown, or raise (authentication failed, closed)."""
        if self._features is None:
            if self._auth_error is not None:
                raise self._auth_error
            if self._closed:
                raise errors.ClosedError("producer closed while connecting to the cluster")
        return self._features

    def unreachable_error(self, timeout_s: float) -> errors.TimeoutError:
        return errors.TimeoutError(
            f"could not reach the cluster at {self._config.bootstrap_servers} within "
            f"{int(timeout_s * 1000)} ms (max_block_ms or the call's timeout){self._why_unreachable()}")

    def partitions_for(self, topic: str) -> list[int] | None:
        """Known partition ids of ``topic`` (cached until the next metadata update)."""
        cached = self.partition_cache.get(topic)
        if cached is not None:
            return cached
        parts = self.cluster.partitions_for_topic(topic)
        if not parts:
            return None
        result = sorted(parts)
        self.partition_cache[topic] = result
        return result

    def available_partitions_for(self, topic: str) -> list[int]:
        parts = self.cluster.available_partitions_for_topic(topic)
        return sorted(parts) if parts else []

    def request_topic(self, topic: str) -> int:
        """Ask the Sender to fetch metadata for ``topic`` (kafka-python's topic set is not
        thread-safe, so the Sender applies the change); returns the count of metadata answers
        so far, for :meth:`topic_partitions`."""
        with self._cond:
            self._topics_to_add.add(topic)
            answers = self._metadata_answers
        self.wakeup()
        return answers

    def wait_for_topic(self, topic: str, timeout_s: float) -> list[int]:
        """Partitions of ``topic``, fetching metadata if needed; TimeoutError after ``timeout_s``.

        A topic the principal may not describe raises TopicAuthorizationError as soon as a
        metadata answer *fetched for this call* refuses it (an earlier refusal is asked again,
        so that an ACL granted meanwhile is seen), as the Java client's ``waitOnMetadata``."""
        parts = self.partitions_for(topic)
        if parts:
            return parts
        answers_before = self.request_topic(topic)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not (parts := self.topic_partitions(topic, answers_before)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self.topic_timeout_error(topic, timeout_s)
                self._cond.wait(remaining)
            return parts

    def topic_partitions(self, topic: str, answers_before: int) -> list[int] | None:
        """The step of :meth:`wait_for_topic` that does not wait: the partitions, None while
        unknown, or raise (refused by an answer newer than ``answers_before``, which
        :meth:`request_topic` returned; authentication failed; closed)."""
        parts = self.partitions_for(topic)
        if parts:
            return parts
        if self._auth_error is not None:
            raise self._auth_error
        if topic in self._unauthorized and self._metadata_answers > answers_before:
            raise errors.TopicAuthorizationError(
                f"not authorized to access topic {topic!r}: the cluster refused to describe it "
                "(TOPIC_AUTHORIZATION_FAILED). Grant this principal DESCRIBE and WRITE on the "
                "topic; abort the transaction and retry once the ACL is in place.",
                error_code=ec.TOPIC_AUTHORIZATION_FAILED)
        if self._closed:
            raise errors.ClosedError("producer closed while waiting for topic metadata")
        return None

    def topic_timeout_error(self, topic: str, timeout_s: float) -> errors.TimeoutError:
        return errors.TimeoutError(
            f"topic {topic!r} not present in metadata after {int(timeout_s * 1000)} ms "
            f"(max_block_ms){self._why_unreachable()}")

    def _on_metadata(self, cluster: Any) -> None:
        with self._cond:
            # cleared, never replaced: the compiled send path holds this dict (each reader makes
            # one lookup, atomic under the GIL)
            self.partition_cache.clear()
            self._unauthorized = frozenset(cluster.unauthorized_topics)
            self._metadata_answers += 1
            self._notify()

    # -- Sender thread ---------------------------------------------------------------------------

    def maintain(self) -> None:
        """Start bootstrap, apply requested topics, keep the broker features fresh."""
        if not self._bootstrap_started:
            self._bootstrap_started = True
            self._manager.bootstrap_async()
        if self._topics_to_add:
            with self._cond:
                topics, self._topics_to_add = self._topics_to_add, set()
            for topic in topics:
                try:
                    self.cluster.add_topic(topic)
                except (TypeError, ValueError):
                    continue  # invalid name: wait_for_topic times out with a clear message
            self.cluster.request_update()
        if not self._manager.bootstrapped:
            return
        stale = time.monotonic() - self._features_at > self._config.metadata_max_age_ms / 1000
        in_flight = self._features_future is not None and not self._features_future.is_done
        if (self._features is None or stale) and not in_flight:
            self._request_features()

    def _request_features(self) -> None:
        node = self._client.least_loaded_node()
        if node is None:
            return
        request = ApiVersionsRequest(
            version=self._api_versions_version,
            client_software_name="txnproducer",
            client_software_version=self._config.kafka_client_kwargs()["client_software_version"],
        )
        future = self.send(node, request, direct=False)
        self._features_future = future
        future.add_callback(self._on_api_versions)
        future.add_errback(self._on_api_versions_error)

    def _on_api_versions(self, response: Any) -> None:
        if response.error_code == ec.UNSUPPORTED_VERSION and self._api_versions_version > 0:
            # a pre-2.4 broker: ask with the version it supports (it has no features: TV1)
            supported = [k.max_version for k in response.api_keys or ()
                         if k.api_key == ApiVersionsRequest.API_KEY]
            self._api_versions_version = min(supported[0], 2) if supported else 0
            self._features_at = time.monotonic() - self._config.metadata_max_age_ms / 1000  # ask again now
            return
        if response.error_code != ec.NONE:
            self._on_api_versions_error(errors.BrokerError(
                f"ApiVersions answered error code {response.error_code}", error_code=response.error_code))
            return
        with self._cond:
            self._adopt_features(features_from(response))
            self._features_at = time.monotonic()
            self._features_error = None
            self._notify()

    def _adopt_features(self, features: BrokerFeatures) -> None:
        """Keep the cluster's features from the answer with the highest finalized-features epoch
        (the Java client's ApiVersions rule): a broker that has not caught up with a feature
        change must not roll the transaction version back (caller holds ``_cond``)."""
        current = self._features
        if current is None or features.features_epoch >= current.features_epoch:
            self._features = features

    def _on_api_versions_error(self, exc: BaseException) -> None:
        with self._cond:
            self._features_error = exc
            # retry soon, not only after metadata_max_age
            self._features_at = time.monotonic() - self._config.metadata_max_age_ms / 1000 + 0.1

    @property
    def bootstrapped(self) -> bool:
        return bool(self._manager.bootstrapped)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The topic's id from Metadata v10+, None when unknown (then Produce uses names)."""
        tid = self.cluster.topic_id(topic)
        if tid is None or tid.int == 0:
            return None
        return tid  # type: ignore[no-any-return]

    def leader_for(self, tp: TopicPartition) -> int | None:
        leader = self.cluster.leader_for_partition(tp)
        return None if leader is None or leader < 0 else int(leader)

    def is_ready(self, node: int) -> bool:
        """True when a request to ``node`` would go out now (connected, under the in-flight limit,
        not throttled)."""
        if self._direct_io:
            return self._direct.is_ready(node)
        return bool(self._client.is_ready(node))

    def ensure_connecting(self, node: Any) -> None:
        """Start a connection to ``node`` if none exists (no-op while in reconnect backoff)."""
        if self._direct_io:
            self._direct.connection(node)
            return
        try:
            self._client.maybe_connect(node)
        except Exception:  # unknown broker id, auth failure: the next metadata refresh decides
            self.cluster.request_update()

    def connection_delay(self, node: Any) -> float:
        """Seconds until a reconnect to ``node`` may be attempted."""
        if self._direct_io:
            return self._direct.connection_delay(node)
        return float(self._manager.connection_delay(node))

    def has_connection(self, node: Any) -> bool:
        if self._direct_io:
            return node in self._direct
        return node in self._manager._conns

    def ensure_broker(self, node: int, host: str, port: int) -> None:
        """Make ``node`` connectable even if Metadata has not listed it yet (a coordinator
        answered by FindCoordinator before our next metadata refresh)."""
        if self.cluster.broker_metadata(node) is None:
            from kafka.protocol.metadata import MetadataResponse

            self.cluster._coordinator_brokers[node] = MetadataResponse.MetadataResponseBroker(
                node, host, port, None)

    def follow_leader_hint(self, tp: TopicPartition, leader_id: int, leader_epoch: int) -> bool:
        """Apply a KIP-951 current-leader hint to the cached metadata (only if its leader epoch is
        newer than what we know); a metadata refresh is still requested to confirm it."""
        changed = bool(self.cluster.update_partition_leader(tp, leader_id, leader_epoch))
        self.request_metadata_update()
        return changed

    def abandon(self, node: Any, reason: str) -> None:
        """Close our connections to ``node``: every request waiting on it fails now (retriable), as
        if ``request_timeout_ms`` had passed. For a broker the cluster has moved away from while it
        does not answer (a grey failure); its requests are then sent again where they now belong."""
        error = kerrors.KafkaConnectionError(reason)
        self._direct.close(node, error)
        theirs = self._manager._conns.get(node)
        if theirs is not None:
            with contextlib.suppress(Exception):  # closing must not raise; the socket goes either way
                theirs.close(error)
        self._log.info("txn.broker_abandoned", node=node, reason=reason)

    def refresh_metadata_avoiding(self, suspects: set[Any]) -> tuple[Any, Future] | None:
        """Ask a broker other than ``suspects`` for metadata now and apply the answer; kafka-python's
        own refresh goes to its least loaded node, which may be the broker that stopped answering
        (then the refresh waits ``request_timeout_ms``). Returns the broker asked and the request's
        future; None when no other broker is known."""
        candidates = [b.node_id for b in self.cluster.brokers() if b.node_id not in suspects]
        if not candidates:
            return None
        ready = [n for n in candidates if self.is_ready(n)]
        node = random.choice(ready or candidates)
        future = self.send(node, self.cluster.metadata_request(), direct=False)
        future.add_callback(self.cluster.update_metadata)
        future.add_errback(lambda exc: self._log.debug("txn.metadata_refresh_failed", node=node,
                                                       error=repr(exc)))
        return node, future

    def least_loaded_node(self, avoid: set[Any] | frozenset[Any] = frozenset()) -> Any:
        """A broker for a request any broker can answer: kafka-python's least loaded one if it is
        ready and not one of ``avoid`` (brokers that left a request unanswered), else a ready broker
        not avoided, else one to connect to (None when none is known). A ready connection first: a
        frozen broker still accepts connections but never completes their handshake."""
        node = self._client.least_loaded_node()
        if node is not None and node not in avoid and self.is_ready(node):
            return node
        others = [b.node_id for b in self.cluster.brokers() if b.node_id not in avoid]
        ready = [n for n in others if self.is_ready(n)]
        if ready:
            return ready[0]
        return node if node is not None and node not in avoid else (others or [None])[0]

    def send(self, node: Any, request: Any, *, direct: bool = True, timeout_s: float | None = None) -> Future:
        """Send ``request`` to ``node``; the returned kafka Future resolves in :meth:`poll`.

        ``direct=False`` keeps the request on kafka-python's connection (the ApiVersions that
        reads the broker's features, which must see what kafka-python negotiated). ``timeout_s``
        is the request's own bound on its answer, for a request the broker holds on purpose (a
        group's JoinGroup); None: ``request_timeout_ms``."""
        if self._direct_io and direct:
            return self._direct.send(node, request, timeout_s)
        to_kafka_python = getattr(request, "to_kafka_python", None)
        if to_kafka_python is not None:  # our codec's request (EndTxn): kafka-python's own class there
            request = to_kafka_python()
        try:
            if timeout_s is None:
                future = self._client.send(node, request)
            else:
                future = self._manager.send(request, node_id=node, request_timeout_ms=timeout_s * 1000)
        except Exception as exc:  # connection setup errors surface as a failed future
            return Future().failure(exc)
        self._write_now(node)
        return future

    # -- the Sender's own connections (direct_io) -------------------------------------------------

    def _api_versions_request(self, version: int) -> Any:
        return ApiVersionsRequest(
            version=version, client_software_name="txnproducer",
            client_software_version=self._config.kafka_client_kwargs()["client_software_version"])

    def _direct_ready(self, conn: DirectConnection, response: Any) -> None:
        """A connection's ApiVersions answer: what that broker speaks (and, v3+, the cluster's
        features, kept if they are at least as new as those we have)."""
        self._failures.connected(conn.node_id)
        self._diagnosis.connected(conn.node_id)
        with self._cond:
            if getattr(response, "finalized_features_epoch", None) is not None:
                self._adopt_features(features_from(response))
                self._notify()

    def max_version(self, node: Any, api_key: int) -> int | None:
        """The highest version of ``api_key`` broker ``node`` speaks, from the ApiVersions
        exchange of our connection to it (None: not connected yet, or it did not say).

        Each request is built for its destination, as in the Java client: during a rolling
        upgrade brokers of two versions serve the same cluster, and a version only the newer
        ones know would make the older one close the connection."""
        if self._direct_io:
            versions = self._direct.api_versions(node)
        else:
            their = self._manager._conns.get(node)
            data = getattr(their, "broker_version_data", None)
            versions = getattr(data, "api_versions", None)
        entry = versions.get(api_key) if versions else None
        return None if entry is None else int(entry[1])

    def _direct_closed(self) -> None:
        if not self._closed:
            self.request_metadata_update()  # the broker may have moved or gone

    def _write_now(self, node: Any) -> None:
        """Put a plaintext request on the wire now instead of in the next two polls.

        Why: kafka-python's transport only queues the bytes and schedules a task that first
        waits for the socket to be writable, so a request reaches the broker two network polls
        after ``send`` (measured: about 0.17 ms later, plus the CPU of those polls). A
        non-blocking send from the transport's own buffer keeps its order and its error path;
        what the socket does not take stays queued for the scheduled task. TLS transports are
        left to kafka-python (their writes can need a read first).
        """
        conn = self._manager._conns.get(node)
        transport: Any = getattr(conn, "transport", None)
        if type(transport) not in _PLAIN_TRANSPORTS or transport._closed or not transport._write_buffer:
            return
        sent, err = transport._sock_send()
        if err is not None:
            transport.abort(error=err)
        elif sent:
            transport.last_write = time.monotonic()

    def in_flight_count(self, node: Any = None) -> int:
        theirs = int(self._client.in_flight_request_count(node))
        if not self._direct_io:
            return theirs
        return (theirs if node is None else 0) + self._direct.in_flight_count(node)

    def poll(self, timeout_s: float) -> None:
        """Wait for network events and handle them: blocks at most ``timeout_s`` unless woken or
        IO happens (or until the next timeout or throttle end of the Sender's own connections)."""
        self._direct.poll(timeout_s, self._kafka_poll)

    def _kafka_poll(self, timeout_ms: float) -> None:
        try:
            if self._lean_poll:
                lean_poll(self._client._net, timeout_ms / 1000, self._full_poll)
            else:
                self._full_poll(timeout_ms)
        finally:
            self._wake_pending = False  # after the drain, before the caller's next look (wakeup())

    def _full_poll(self, timeout_ms: float) -> None:
        self._client.poll(timeout_ms=timeout_ms)

    def request_metadata_update(self) -> None:
        """Ask for a metadata refresh (no-op when one is already requested: each request wakes
        the network loop, so repeating it would spin)."""
        if not self.cluster.need_update:
            self.cluster.request_update()

    def metadata_ttl_s(self) -> float:
        return float(self.cluster.ttl()) / 1000

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._notify()
        self._direct.close_all(errors.ClosedError("producer closed before the broker answered"))
        if self._token_cache is not None:
            self._token_cache.close()
        with contextlib.suppress(Exception):  # closing must not raise; the sockets go either way
            self._client.close()


def _cause(exc: BaseException) -> str:
    """kafka-python's connection error as a user reads it: ``KafkaConnectionError: 111 ECONNREFUSED``."""
    text = str(exc) or str(exc.__cause__ or "") or "no details"
    name = type(exc).__name__
    return text if text.startswith(name) else f"{name}: {text}"
