"""The client's one surface over the network: connections, cluster metadata, broker features, waits.

Why one object: the Sender (and a group member's IO thread, an admin call's thread) drives the network
from one thread and needs a small, typed surface - send, poll, leaders, versions; application threads
need the few things they may do safely - wake the network thread, ask for a topic's metadata and wait
for it, wait until the cluster's features are known. Everything under it is ours
(:mod:`.direct_connections`, :mod:`.cluster_metadata`, :mod:`.refresh`): kafka-python supplies the
message classes only.

What a call can be told, as the Java client's ``NetworkClient`` tells it: an authentication or TLS
failure at once as a typed :class:`~txnproducer.errors.AuthenticationError` naming the broker and the
cause (fatal: every wait ends); a broker that cannot be reached as a WARNING per failing broker while the
call still waits (:mod:`.failure_log`), then the call's own TimeoutError naming the last errors.

Thread rules: ``wakeup``, ``request_topic``, ``wait_for_topic``, ``partitions_for``,
``available_partitions_for``, ``wait_until_ready``, their steps that do not wait (``topic_partitions``,
``ready_features``), ``changed`` and the read-only properties may be called from any thread; everything
else only from the network thread.
"""

from __future__ import annotations

import math
import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import kafka.errors as kerrors
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.listeners import Listeners
from txnproducer._internal.log import get_logger
from txnproducer._internal.network.addresses import USE_ALL_DNS_IPS, bootstrap_addresses
from txnproducer._internal.network.api_versions import BrokerFeatures, features_from
from txnproducer._internal.network.auth_failures import ConnectionDiagnosis
from txnproducer._internal.network.channel_security import channel_security
from txnproducer._internal.network.cluster_metadata import ClusterMetadata
from txnproducer._internal.network.connection import DirectConnection
from txnproducer._internal.network.direct_connections import DirectConnections
from txnproducer._internal.network.failure_log import ConnectionFailureLog
from txnproducer._internal.network.future import Future
from txnproducer._internal.network.grey_failures import SILENT_AFTER_S, Coordinator, GreyFailureWatch
from txnproducer._internal.network.oauth_tokens import TokenCache, as_token_source
from txnproducer._internal.network.redaction import install_secret_filter
from txnproducer._internal.network.refresh import MetadataRefresh
from txnproducer._internal.network.settings import ConnectionSettings
from txnproducer._internal.network.tls_context import build_ssl_context
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.errors import ConfigError

__all__ = ["NetworkClient"]


class NetworkClient:
    """Connections + metadata + features, driven by one network thread (see the module docstring)."""

    def __init__(self, config: ConnectionSettings) -> None:
        self._config = config
        install_secret_filter()
        self._cond = threading.Condition()
        # fired with every notify of ``_cond``: what callers that must not block wait on instead
        self.changed = Listeners()
        self._log = get_logger("txnproducer.network")
        self._diagnosis = ConnectionDiagnosis(config)
        self._failures = ConnectionFailureLog(self._log)
        self._auth_error: errors.AuthenticationError | None = None
        try:
            addresses = bootstrap_addresses(list(config.bootstrap_servers),
                                            getattr(config, "client_dns_lookup", None) or USE_ALL_DNS_IPS)
        except ValueError as exc:
            raise ConfigError(f"bootstrap_servers: {exc}") from None
        self.cluster = ClusterMetadata(addresses, metadata_max_age_ms=config.metadata_max_age_ms,
                                       retry_backoff_ms=getattr(config, "retry_backoff_ms", 100))
        ssl_context = build_ssl_context(config)  # ConfigError now, not per connection later
        self._token_cache: TokenCache | None = None
        if config.sasl_mechanism == "OAUTHBEARER" and config.security_protocol.startswith("SASL_"):
            name = getattr(config, "transactional_id", None) or config.effective_client_id
            self._token_cache = TokenCache(as_token_source(config.sasl_oauth_token_provider), name)
        self._software_version = str(config.kafka_client_kwargs()["client_software_version"])
        self._direct = DirectConnections(
            config, broker_address=self.cluster.broker_metadata,
            api_versions_request=self._api_versions_request, on_ready=self._connection_ready,
            on_close=self._connection_closed,
            security=channel_security(config, ssl_context, self._token_cache),
            on_setup_failed=self._connection_failed)
        self._refresh = MetadataRefresh(self, self.cluster, metadata_max_age_ms=config.metadata_max_age_ms,
                                        api_versions_request=self._api_versions_request,
                                        on_features=self._features_answered)
        # requests to coordinators and lookups a silent broker leaves unanswered (grey_failures.py)
        self._grey = GreyFailureWatch(self, self._log)
        self._topics_to_add: set[str] = set()
        # topics the last metadata answer refused us (TOPIC_AUTHORIZATION_FAILED), and a count of
        # metadata answers, so that a waiting send() can tell a fresh refusal from an old one
        self._unauthorized: frozenset[str] = frozenset()
        self._metadata_answers = 0
        # topic -> sorted partition ids, cleared (never replaced) on every metadata update;
        # send() reads it directly (a hit is one dict lookup), partitions_for() fills it
        self.partition_cache: dict[str, list[int]] = {}
        self._features: BrokerFeatures | None = None
        self._closed = False
        # a wake-up is written and the poll has not returned since (see wakeup())
        self._wake_pending = False
        # the end of the network thread's current wait (time.monotonic()); infinite while it is not
        # waiting, when it may already have looked at what there is to do (see looks_by())
        self._wait_ends = math.inf
        # bootstrap connections may be open (until the first Metadata answer and their requests' answers)
        self._bootstrap_connections = True
        self.cluster.add_listener(self._on_metadata)

    # -- connection outcomes (network thread) ---------------------------------------------------

    def _connection_failed(self, node: Any, broker: Any, exc: BaseException) -> None:
        """A connection's setup or (re-)authentication failed: an authentication error ends every
        wait at once; anything else is a WARNING (rate-limited per broker) and kept for the message of
        a call that times out."""
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

    def _connection_ready(self, conn: DirectConnection, response: Any) -> None:
        """A connection's ApiVersions answer: what that broker speaks, and the cluster's features
        (kept if they are at least as new as those we have)."""
        self._failures.connected(conn.node_id)
        self._diagnosis.connected(conn.node_id)
        self._features_answered(response)

    def _features_answered(self, response: Any) -> None:
        self._refresh.features_answered()
        with self._cond:
            self._adopt_features(features_from(response))
            self._notify()

    def _adopt_features(self, features: BrokerFeatures) -> None:
        """Keep the cluster's features from the answer with the highest finalized-features epoch
        (the Java client's ApiVersions rule): a broker that has not caught up with a feature
        change must not roll the transaction version back (caller holds ``_cond``)."""
        current = self._features
        if current is None or features.features_epoch >= current.features_epoch:
            self._features = features

    def _connection_closed(self, conn: DirectConnection) -> None:
        if not self._closed and not _is_bootstrap(conn.node_id):
            self.request_metadata_update()  # the broker may have moved or gone

    def bootstrap_unreachable(self) -> tuple[float, int] | None:
        """Before the first Metadata answer: (seconds, attempts) for which no bootstrap server has taken
        a TCP connection (each refused it, could not be reached or did not resolve, every time), or None.
        For one-shot callers (the admin tools) that should say so early rather than wait out their
        timeout; a producer keeps trying for ``max_block_ms``, as the Java client does."""
        if self.cluster.bootstrapped:
            return None
        return self._diagnosis.unreachable([b.node_id for b in self.cluster.bootstrap_brokers()])

    @property
    def auth_error(self) -> errors.AuthenticationError | None:
        """The first authentication failure (TLS or SASL), if any: fatal for the client."""
        return self._auth_error

    def why_unreachable(self) -> str:
        last = self._diagnosis.last_errors()
        if last is not None:
            return f" (last connection errors: {last})"
        if self._refresh.last_error is not None:
            return f" (last error: {self._refresh.last_error})"
        return ""

    def _notify(self) -> None:
        """Wake every waiter, blocked or not (caller holds ``_cond``)."""
        self._cond.notify_all()
        self.changed.notify()

    # -- any thread ----------------------------------------------------------------------------

    def wakeup(self) -> None:
        """Interrupt the network poll (cheap; safe from any thread).

        A wake-up written since the poll last returned is not written again: a one-record
        transaction wakes the Sender twice (its first record, then the commit) before it runs
        on a busy CPU, and each write is a system call. Safe because the flag is cleared only
        after the poll returns, which is after the wake-up socket was drained and before the
        network thread looks at what there is to do: a caller that skips the write made its change
        before that look."""
        if not self._wake_pending:
            self._wake_pending = True
            self._direct.wakeup()

    def looks_by(self) -> float:
        """When (``time.monotonic()``) the network thread looks at its work again at the latest without
        a wake-up: the end of its current wait; infinite when it is not waiting (it may have looked
        already, and would then wait without looking again). Read by the accumulator for a new
        lingering batch (any thread). Safe without a lock: the end is set after the network thread's
        last look and before its wait, and made infinite when the wait returns (its next look follows)."""
        return self._wait_ends

    @property
    def features(self) -> BrokerFeatures | None:
        return self._features

    def wait_until_ready(self, timeout_s: float) -> BrokerFeatures:
        """Wait until a broker answered and the cluster's features are known."""
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
            f"{int(timeout_s * 1000)} ms (max_block_ms or the call's timeout){self.why_unreachable()}")

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
        """Ask the network thread to fetch metadata for ``topic`` (it owns the topic set); returns the
        count of metadata answers so far, for :meth:`topic_partitions`."""
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
            f"(max_block_ms){self.why_unreachable()}")

    def _on_metadata(self, cluster: ClusterMetadata) -> None:
        with self._cond:
            # cleared, never replaced: the compiled send path holds this dict (each reader makes
            # one lookup, atomic under the GIL)
            self.partition_cache.clear()
            self._unauthorized = cluster.unauthorized_topics
            self._metadata_answers += 1
            self._notify()

    # -- network thread --------------------------------------------------------------------------

    def maintain(self) -> None:
        """Apply the topics application threads asked for; close bootstrap connections once the
        cluster's own brokers are known (each is a second connection to one of them)."""
        if self._topics_to_add:
            with self._cond:
                topics, self._topics_to_add = self._topics_to_add, set()
            for topic in topics:
                if not self.cluster.add_topic(topic):  # known: asked again (an ACL granted meanwhile)
                    self.cluster.request_update()
        if self._bootstrap_connections and self.cluster.bootstrapped:
            left = False
            for node in self._direct.nodes():
                if _is_bootstrap(node):
                    if self._direct.in_flight_count(node):
                        left = True  # closed once its requests are answered
                    else:
                        self._direct.close(node)
            self._bootstrap_connections = left

    @property
    def bootstrapped(self) -> bool:
        """A Metadata answer came: the cluster's brokers are known."""
        return self.cluster.bootstrapped

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The topic's id from Metadata v10+, None when unknown (then Produce uses names)."""
        return self.cluster.topic_id(topic)

    def leader_for(self, tp: TopicPartition) -> int | None:
        leader = self.cluster.leader_for_partition(tp)
        return None if leader is None or leader < 0 else leader

    def leader_lookup(self) -> Callable[[TopicPartition], int | None]:
        """``leader_for`` as one dict lookup, valid until the next metadata answer: what the Sender's
        drain asks for every partition with data (two Python calls per partition fewer)."""
        return self.cluster.leader_ids().get

    def is_ready(self, node: Any) -> bool:
        """True when a request to ``node`` would go out now (connected, under the in-flight limit,
        not throttled)."""
        return self._direct.is_ready(node)

    def ensure_connecting(self, node: Any) -> None:
        """Start a connection to ``node`` if none exists (no-op while in reconnect backoff; a node
        unknown to the metadata asks for a refresh)."""
        if self._direct.connection(node) is None and self.cluster.broker_metadata(node) is None:
            self.request_metadata_update()

    def connection_delay(self, node: Any) -> float:
        """Seconds until a reconnect to ``node`` may be attempted."""
        return self._direct.connection_delay(node)

    def shortest_connection_delay(self) -> float:
        candidates = self.candidates()
        return min((self._direct.connection_delay(n) for n in candidates), default=0.0)

    def has_connection(self, node: Any) -> bool:
        return node in self._direct

    def ensure_broker(self, node: int, host: str, port: int) -> None:
        """Make ``node`` connectable even if Metadata has not listed it yet (a coordinator
        answered by FindCoordinator before our next metadata refresh, a KIP-951 leader endpoint)."""
        self.cluster.name_broker(node, host, port)

    def follow_leader_hint(self, tp: TopicPartition, leader_id: int, leader_epoch: int) -> bool:
        """Apply a KIP-951 current-leader hint to the cached metadata (only if its leader epoch is
        newer than what we know); a metadata refresh is still requested to confirm it."""
        changed = self.cluster.update_partition_leader(tp, leader_id, leader_epoch)
        self.request_metadata_update()
        return changed

    def abandon(self, node: Any, reason: str) -> None:
        """Close our connection to ``node``: every request waiting on it fails now (retriable), as
        if ``request_timeout_ms`` had passed. For a broker the cluster has moved away from while it
        does not answer (a grey failure); its requests are then sent again where they now belong."""
        self._direct.close(node, kerrors.KafkaConnectionError(reason))
        self._log.info("txn.broker_abandoned", node=node, reason=reason)

    def abandon_request(self, node: Any, future: Future, error: BaseException) -> bool:
        """Stop waiting for one request's answer from ``node`` (it fails now with ``error``; the
        connection and its other requests stay): for a request to resend elsewhere while the broker
        it went to does not answer. False when it is not waiting there."""
        return self._direct.abandon(node, future, error)

    def silent(self, node: Any) -> bool:
        """True while ``node`` has not answered a request abandoned there (``abandon_request``) - a broker
        that stopped answering - and for a few seconds after it answered them (``grey_failures.py``)."""
        return self._direct.silent(node, SILENT_AFTER_S)

    def heard_from(self, node: Any, within_s: float) -> bool:
        """True when ``node`` has nothing in flight or answered within ``within_s`` seconds: a request
        sent there now is not stuck behind one the broker holds."""
        return self._direct.heard_from(node, within_s)

    def ask_who_coordinates(self, key_type: int, key: str, avoid: Any,
                            on_found: Callable[[Coordinator], None]) -> bool:
        """Ask a broker not in ``avoid`` (and not silent) who coordinates ``key`` (FindCoordinator key
        type ``key_type``: 0 a group, 1 a transactional id); ``on_found(coordinator)`` when it names one.
        False when no such broker is ready to be asked now."""
        return self._grey.ask_who_coordinates(key_type, key, avoid, on_found)

    def refresh_metadata_avoiding(self, suspects: set[Any]) -> tuple[Any, Future] | None:
        """Ask a broker other than ``suspects`` for metadata now and apply the answer (the least
        loaded one may be the broker that stopped answering). Returns the broker asked and the
        request's future; None when no other broker is known."""
        candidates = [b.node_id for b in self.cluster.brokers()
                      if b.node_id not in suspects and not self._direct.silent(b.node_id, SILENT_AFTER_S)]
        if not candidates:
            return None
        ready = [n for n in candidates if self.is_ready(n)]
        node = random.choice(ready or candidates)
        return node, self._refresh.send_metadata(node)

    def candidates(self) -> list[Any]:
        """The brokers a request any broker can answer may go to: the cluster's (the bootstrap servers
        before the first Metadata answer)."""
        brokers = [b.node_id for b in self.cluster.brokers()]
        return brokers or [b.node_id for b in self.cluster.bootstrap_brokers()]

    def least_loaded_node(self, avoid: set[Any] | frozenset[Any] = frozenset()) -> Any:
        """A broker for a request any broker can answer (the Java client's ``leastLoadedNode``): of
        the cluster's brokers (the bootstrap servers before the first Metadata answer) not in
        ``avoid``, a ready one with the fewest requests in flight, else one connecting, else one not
        in reconnect backoff; None when none is. Starting at a random one spreads the load. A silent
        broker (``silent``) is chosen only when no other is left."""
        nodes = [n for n in self.candidates() if n not in avoid]
        if not nodes:
            return None
        direct = self._direct
        heard = [n for n in nodes if not direct.silent(n, SILENT_AFTER_S)]
        nodes = heard or nodes
        offset = random.randrange(len(nodes))
        best, best_load = None, None
        connecting = idle = None
        for node in nodes[offset:] + nodes[:offset]:
            if direct.is_ready(node):
                load = direct.in_flight_count(node)
                if load == 0:
                    return node
                if best_load is None or load < best_load:
                    best, best_load = node, load
            elif node in direct:
                connecting = connecting if connecting is not None else node
            elif idle is None and direct.connection_delay(node) <= 0:
                idle = node
        if best is not None:
            return best
        return connecting if connecting is not None else idle

    def send(self, node: Any, request: Any, *, timeout_s: float | None = None) -> Future:
        """Send ``request`` to ``node``; the returned future completes in :meth:`poll`. ``timeout_s``
        is the request's own bound on its answer, for a request the broker holds on purpose (a
        group's JoinGroup); None: ``request_timeout_ms``."""
        return self._direct.send(node, request, timeout_s)

    def send_to_coordinator(self, node: Any, request: Any, key_type: int, key: str, *,
                            timeout_s: float | None = None, now: float | None = None) -> Future:
        """:meth:`send` to ``node`` as the coordinator of ``key`` (FindCoordinator key type
        ``key_type``): unanswered for a second, other brokers are asked who coordinates ``key``, and
        once one names another broker the request fails with
        :class:`~.connection_errors.CoordinatorMoved`, naming it (``grey_failures.py``)."""
        future = self._direct.send(node, request, timeout_s)
        if not future.is_done:
            self._grey.coordinator_request(node, future, key_type, key,
                                           time.monotonic() if now is None else now)
        return future

    def send_anywhere(self, node: Any, request: Any) -> Future:
        """:meth:`send` a request any broker can answer (FindCoordinator, Metadata): unanswered for a
        second while another broker is known, it fails with :class:`~.connection_errors.BrokerSilent`
        (ask another broker; ``grey_failures.py``)."""
        future = self._direct.send(node, request, None)
        if not future.is_done:
            self._grey.lookup(node, future, time.monotonic())
        return future

    def _api_versions_request(self, version: int) -> Any:
        return ApiVersionsRequest(version=version, client_software_name="txnproducer",
                                  client_software_version=self._software_version)

    def max_version(self, node: Any, api_key: int) -> int | None:
        """The highest version of ``api_key`` broker ``node`` speaks, from the ApiVersions
        exchange of our connection to it (None: not connected yet, or it did not say).

        Each request is built for its destination, as in the Java client: during a rolling
        upgrade brokers of two versions serve the same cluster, and a version only the newer
        ones know would make the older one close the connection."""
        versions = self._direct.api_versions(node)
        entry = versions.get(api_key) if versions else None
        return None if entry is None else int(entry[1])

    def in_flight_count(self, node: Any = None) -> int:
        return self._direct.in_flight_count(node)

    def poll(self, timeout_s: float) -> None:
        """Send the metadata requests that are due, then wait for network events and handle them:
        blocks at most ``timeout_s`` unless woken or IO happens (or until the next metadata refresh,
        timeout or throttle end)."""
        if not self._closed:
            now = time.monotonic()
            timeout_s = min(timeout_s, self._refresh.run(now))
            if self._grey.watching:
                timeout_s = min(timeout_s, self._grey.run(now))
        # set after the caller's last look at its work (the Sender's ready()), before the wait: an
        # application thread that reads it knows the Sender looks again by then (looks_by())
        self._wait_ends = time.monotonic() + max(0.0, timeout_s)
        try:
            self._direct.poll(timeout_s)
        finally:
            self._wait_ends = math.inf
            self._wake_pending = False  # after the drain, before the caller's next look (wakeup())

    def request_metadata_update(self) -> None:
        """Ask for a metadata refresh (sent by the next poll)."""
        self.cluster.request_update()

    def metadata_ttl_s(self) -> float:
        return self.cluster.ttl()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._notify()
        self._direct.close_all(errors.ClosedError("client closed before the broker answered"))
        if self._token_cache is not None:
            self._token_cache.close()


def _is_bootstrap(node: Any) -> bool:
    return isinstance(node, str) and node.startswith("bootstrap-")


def _cause(exc: BaseException) -> str:
    """A connection error as a user reads it: ``KafkaConnectionError: 111 ECONNREFUSED``."""
    text = str(exc) or str(exc.__cause__ or "") or "no details"
    name = type(exc).__name__
    return text if text.startswith(name) else f"{name}: {text}"
