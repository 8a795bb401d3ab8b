"""MockCluster: in-process Kafka brokers on 127.0.0.1 with transactions, groups and fault injection.

Each broker is a real TCP listener speaking the Kafka protocol (kafka-python's schemas), so any client
- this project's producer, kafka-python, confluent-kafka - can talk to it. All brokers share one
:class:`ClusterState`; partition leaders and coordinators are spread over the brokers, so clients
must route requests as they would against a real cluster.

Typical use::

    with MockCluster(num_brokers=3, transaction_version=2) as cluster:
        cluster.create_topic("out", partitions=3)
        producer = TransactionalProducer(bootstrap_servers=cluster.bootstrap_servers, ...)
        cluster.inject_error("EndTxn", errors.COORDINATOR_LOAD_IN_PROGRESS, count=2)
        ...
        cluster.wait_for_request(lambda e: e.api == "EndTxn" and not e.error_codes)

Security (``security/``), all off by default: ``tls=True`` makes every broker listen with TLS (certificates
from a throw-away CA: trust ``cluster.ca_file``); ``sasl_mechanisms`` makes clients authenticate
(SASL_PLAINTEXT, or SASL_SSL with TLS); ``acls`` turns on an authorizer that every request is checked
against, as Kafka's brokers check them. ``cluster.security_protocol`` is what a client sets as
``security.protocol``::

    with MockCluster(tls=True, sasl_mechanisms=["SCRAM-SHA-512"], users={"alice": "alice-secret"},
                     acls=[Acl("User:alice", "topic", "orders", "Write")]) as cluster:
        ...
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol.response_classes import complete_registered_versions

from . import api_messages, handlers
from .broker_faults import BrokerFaults, key_type_code
from .cluster_state import DEFAULT_MAX_MESSAGE_BYTES, ClusterState, TopicState
from .faults import DELAY, DROP_AFTER, DROP_BEFORE, ERROR, FaultPlan
from .group_coordinator import GroupCoordinator
from .partition_faults import PartitionFaults
from .request_log import RequestLog, RequestLogEntry
from .security.acl import Acl, Authorizer
from .security.listener import ListenerSecurity
from .security.sasl import OAuthToken, SaslSettings
from .security.tls import DEFAULT_HOSTNAMES, TlsMaterial
from .server import BrokerServer
from .txn_coordinator import TransactionCoordinator
from .txn_metadata import COMPLETE_STATES, MAX_EPOCH, NO_PRODUCER_EPOCH

_log = get_logger("txnproducer.testing.cluster")

__all__ = ["MockCluster", "RequestLogEntry"]


class MockCluster(BrokerFaults, PartitionFaults):
    """A cluster of ``num_brokers`` mock Kafka brokers (see the module docstring).

    ``port=0`` gives every broker an ephemeral port; ``port=N`` binds brokers to N, N+1, ... .
    ``transaction_version`` is the finalized ``transaction.version`` feature (0, 1 or 2): below 2 the
    brokers advertise only the pre-KIP-890 versions of Produce/AddPartitionsToTxn/EndTxn/TxnOffsetCommit.
    ``validate_crc`` checks every produced batch's CRC-32C (cheap with the ``crc32c`` package).
    ``enable_2pc`` turns on KIP-939 two-phase commit (Kafka's ``transaction.two.phase.commit.enable``):
    InitProducerId v6 is advertised and ``enable_2pc``/``keep_prepared_txn`` are honoured; off (the
    default, like Kafka 4.1) v6 is not advertised and ``enable_2pc`` is refused.
    ``group_*`` override the group coordinator's settings (Kafka's ``group.initial.rebalance.delay.ms``,
    ``group.min/max.session.timeout.ms``; the mock defaults are 0, 1 and 1800000 for fast tests).
    ``consumer_group_config`` sets the KIP-848 consumer group coordinator's, by Kafka's property names
    (``group.consumer.heartbeat.interval.ms`` - 500 in the mock, 5000 in Kafka -, ``...session.timeout.ms``,
    ``...max.size``, ``...assignors``, ``...migration.policy``, ``group.classic.max.size``).
    ``kafka_20090_fixed``: at the end of the epoch range (TV2, epoch 32766), the coordinator's own abort
    of a timed-out or fenced transaction rotates the producer id, as Kafka does after KAFKA-20090. Off
    (the default) the brokers answer as Kafka 4.0/4.1 do: that abort leaves the id at epoch 32767, a
    transaction begun there can never end (EndTxn answers UNKNOWN_SERVER_ERROR, it stays Ongoing, a new
    instance's ``init_transactions()`` fails the same way, and the coordinator's timeout pass stops at
    it) - so that a test can show a client never gets there.

    Security (everything off by default: a PLAINTEXT listener that allows every request):

    - ``tls``: every broker listens with TLS 1.2+; its certificate, from a CA generated for this cluster
      (``ca_file``), is valid for ``tls_hostnames`` (default 127.0.0.1 and localhost: name another host to
      reproduce a hostname mismatch). ``tls_client_auth`` is Kafka's ``ssl.client.auth`` ("none",
      "requested", "required"); ``client_certificate(name)`` issues a client certificate whose principal is
      ``User:<name>``. Needs the ``trustme`` package (``pip install 'txnproducer[testing]'``).
    - ``sasl_mechanisms``: any of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; clients must
      authenticate before any request but ApiVersions. ``users`` maps user names to passwords (PLAIN and
      SCRAM); ``oauth_tokens`` maps OAUTHBEARER tokens to an :class:`OAuthToken` (or just the principal's
      name). ``sasl_session_lifetime_ms`` is Kafka's ``connections.max.reauth.ms`` (KIP-368: clients must
      re-authenticate within it; 0, the default: sessions do not expire). ``failed_authentication_delay_ms``
      is Kafka's ``connection.failed.authentication.delay.ms`` (default 100, as Kafka's): a failed
      authentication is answered, and its connection closed, that much later.
    - ``acls``: a list of :class:`Acl` (or tuples of its fields) turns the authorizer on: from then on a
      request is allowed only as an ACL allows it (``add_acl`` / ``remove_acl`` change them at run time).
      ``super_users`` may do everything; ``allow_everyone_if_no_acl_found`` is Kafka's option of that name.
      A connection that did not authenticate is ``User:ANONYMOUS``.
    """

    def __init__(
        self,
        num_brokers: int = 3,
        transaction_version: int = 2,
        host: str = "127.0.0.1",
        port: int = 0,
        auto_create_topics: bool = True,
        default_partitions: int = 3,
        transaction_max_timeout_ms: int = 900000,
        group_initial_rebalance_delay_ms: int | None = None,
        group_min_session_timeout_ms: int | None = None,
        group_max_session_timeout_ms: int | None = None,
        validate_crc: bool = True,
        tick_interval_ms: int = 50,
        cluster_id: str | None = None,
        enable_2pc: bool = False,
        *,
        tls: bool = False,
        tls_client_auth: str = "none",
        tls_hostnames: Sequence[str] = DEFAULT_HOSTNAMES,
        sasl_mechanisms: Sequence[str] = (),
        users: Mapping[str, str] | None = None,
        oauth_tokens: Mapping[str, OAuthToken | str] | None = None,
        sasl_session_lifetime_ms: int = 0,
        failed_authentication_delay_ms: int = 100,
        acls: Iterable[Acl | tuple[str, ...]] | None = None,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
        kafka_20090_fixed: bool = False,
        consumer_group_config: Mapping[str, object] | None = None,
    ) -> None:
        if num_brokers < 1:
            raise ValueError("num_brokers must be >= 1")
        if transaction_version not in (0, 1, 2):
            raise ValueError("transaction_version must be 0, 1 or 2")
        if acls is None and (super_users or allow_everyone_if_no_acl_found):
            raise ValueError(
                "super_users and allow_everyone_if_no_acl_found need acls=[...] (the authorizer)")
        if not tls and (tls_client_auth != "none" or tuple(tls_hostnames) != DEFAULT_HOSTNAMES):
            raise ValueError("tls_client_auth and tls_hostnames need tls=True")
        if not sasl_mechanisms and (users or oauth_tokens or sasl_session_lifetime_ms):
            raise ValueError("users, oauth_tokens and sasl_session_lifetime_ms need sasl_mechanisms")
        sasl = None
        if sasl_mechanisms:
            sasl = SaslSettings(sasl_mechanisms, users, oauth_tokens, sasl_session_lifetime_ms)
        self.listener = ListenerSecurity(
            tls=TlsMaterial(tls_hostnames, tls_client_auth) if tls else None, sasl=sasl,
            failed_authentication_delay_ms=failed_authentication_delay_ms)
        self.authorizer: Authorizer | None = None
        if acls is not None:
            self.authorizer = Authorizer(
                [_as_acl(a) for a in acls], super_users, allow_everyone_if_no_acl_found)
        self.host = host
        broker_ids = list(range(1, num_brokers + 1))
        self.state = ClusterState(
            broker_ids,
            host,
            transaction_version,
            auto_create_topics,
            default_partitions,
            transaction_max_timeout_ms,
            cluster_id,
        )
        self.state.settings["validate_crc"] = validate_crc
        # KIP-939 two-phase commit (Kafka's transaction.two.phase.commit.enable): InitProducerId v6
        self.state.settings["enable_2pc"] = enable_2pc
        # SaslHandshake/SaslAuthenticate are advertised (and answered) only on a SASL listener
        self.state.settings["sasl"] = self.listener.sasl is not None
        group_settings = {
            "group_initial_rebalance_delay_ms": group_initial_rebalance_delay_ms,
            "group_min_session_timeout_ms": group_min_session_timeout_ms,
            "group_max_session_timeout_ms": group_max_session_timeout_ms,
        }
        self.state.settings.update({k: v for k, v in group_settings.items() if v is not None})
        self.state.settings["consumer_group_config"] = dict(consumer_group_config or {})
        self.faults = FaultPlan()
        self.requests = RequestLog()
        self._connection_ids = itertools.count(1)
        self._servers: dict[int, BrokerServer] = {
            b: BrokerServer(self, b, host, 0 if port == 0 else port + i) for i, b in enumerate(broker_ids)
        }
        self._fence_timers: dict[int, threading.Timer] = {}  # freeze_broker(fence_after_s=...)
        self._tick_interval = tick_interval_ms / 1000.0
        self._closed = threading.Event()
        self._ticker: threading.Thread | None = None
        self._started = False
        self.state.txn = TransactionCoordinator(self.state, kafka_20090_fixed=kafka_20090_fixed)
        self.state.groups = GroupCoordinator(self.state)

    # ------------------------------------------------------------- lifecycle
    def __enter__(self) -> MockCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> MockCluster:
        """Bind every broker and start serving (idempotent)."""
        if self._started:
            return self
        # every version of every response class made now, in one thread: the connections' threads (and
        # the kafka-python clients of this process) then only look them up (response_classes.py)
        complete_registered_versions()
        try:
            for broker_id, server in self._servers.items():
                server.start()
                self.state.brokers[broker_id].port = server.port
        except OSError:
            for server in self._servers.values():
                server.stop()
            raise
        self._started = True
        self._ticker = threading.Thread(target=self._tick_loop, name="mock-cluster-ticker", daemon=True)
        self._ticker.start()
        return self

    def close(self) -> None:
        """Stop every broker, close every connection, stop the timer thread; bounded."""
        self._closed.set()
        for timer in self._fence_timers.values():
            timer.cancel()
        with self.state.lock:
            self.state.closed = True
        for server in self._servers.values():
            server.stop()
        self.state.notify_all()  # wake handlers waiting on the condition (long-poll fetches)
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join(timeout=5)
        self.listener.close()

    def _tick_loop(self) -> None:
        while not self._closed.wait(self._tick_interval):
            try:
                with self.state.lock:
                    now = self.state.now_ms()
                    self.state.txn.tick(now)
                    self.state.groups.tick(now)
            except Exception:  # pragma: no cover - a coordinator bug must not stop the clock
                _log.exception("mock.tick_failed")

    # ------------------------------------------------------ ServerHost hooks
    def next_connection_id(self) -> int:
        return next(self._connection_ids)

    def api_versions(self) -> list[tuple[int, int, int]]:
        return handlers.advertised_versions(
            self.state.transaction_version, bool(self.state.settings.get("enable_2pc", False)),
            self.listener.sasl is not None,
        )

    # -------------------------------------------------------------- security
    @property
    def security_protocol(self) -> str:
        """What clients set as ``security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."""
        return self.listener.security_protocol

    @property
    def ca_file(self) -> str:
        """Path of the PEM file of the CA that issued the brokers' certificate (trust it: ``ssl_cafile``)."""
        return self._tls("ca_file").ca_file

    def client_certificate(self, name: str) -> tuple[str, str]:
        """(certfile, keyfile) PEM paths of a client certificate with CN ``name`` from the cluster's CA.

        With ``tls_client_auth`` "requested" or "required" a client presenting it is ``User:<name>``. The
        files are created on first use and removed when the cluster closes.
        """
        return self._tls("client_certificate").client_certificate(name)

    def _tls(self, what: str) -> TlsMaterial:
        if self.listener.tls is None:
            raise ValueError(f"{what} needs a TLS cluster: MockCluster(tls=True)")
        return self.listener.tls

    @property
    def acls(self) -> list[Acl]:
        """The ACLs in force, in the order they were added (empty without an authorizer)."""
        return [] if self.authorizer is None else list(self.authorizer.acls)

    def add_acl(self, principal: str, resource_type: str, name: str, operation: str,
                pattern: str = "literal", permission: str = "allow") -> Acl:
        """Allow (or with ``permission="deny"``, deny) ``principal`` ``operation`` on a resource, from the
        next request on: ``add_acl("User:alice", "topic", "orders", "Write")``.

        Resource types: topic, group, transactional_id, cluster (named "kafka-cluster"); patterns: literal
        (``"*"`` is every name) or prefixed. Raises ValueError on a cluster created without ``acls``, as
        Kafka refuses ACL changes without an authorizer.
        """
        acl = Acl(principal, resource_type, name, operation, pattern, permission)
        self._authorizer("add_acl").add(acl)
        return acl

    def remove_acl(self, principal: str, resource_type: str, name: str, operation: str,
                   pattern: str = "literal", permission: str = "allow") -> bool:
        """Remove the ACL with exactly these fields (see :meth:`add_acl`); False if there was none."""
        acl = Acl(principal, resource_type, name, operation, pattern, permission)
        return self._authorizer("remove_acl").remove(acl)

    def _authorizer(self, what: str) -> Authorizer:
        if self.authorizer is None:
            raise ValueError(f"{what} needs an authorizer: create the MockCluster with acls=[...]")
        return self.authorizer

    # ---------------------------------------------------------------- access
    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of every broker, comma-separated (all of them, also stopped ones)."""
        return ",".join(
            f"{self.host}:{b.port}" for b in sorted(self.state.brokers.values(), key=lambda b: b.node_id)
        )

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.state.brokers)

    def broker_address(self, broker_id: int) -> tuple[str, int]:
        info = self.state.brokers[broker_id]
        return info.host, info.port

    @property
    def request_log(self) -> list[RequestLogEntry]:
        """A snapshot of every request handled so far, in order."""
        return self.requests.entries()

    def wait_for_request(
        self, predicate: Callable[[RequestLogEntry], bool], timeout: float = 5.0, since: int = 0
    ) -> RequestLogEntry:
        """The first logged request (seq >= ``since``) matching ``predicate``, waiting up to ``timeout`` s.

        Raises ``TimeoutError`` if none arrives in time. Use ``since=cluster.requests.next_seq()``
        taken before an action to wait only for requests caused by it.
        """
        return self.requests.wait_for(predicate, timeout, since)

    def create_topic(self, name: str, partitions: int = 3,
                     max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> TopicState:
        """Create a topic now (no-op if it exists); leaders are spread over the alive brokers.

        ``max_message_bytes`` is the topic's ``max.message.bytes``: a larger record batch is
        answered with MESSAGE_TOO_LARGE, as Kafka does."""
        with self.state.lock:
            return self.state.create_topic(name, partitions, max_message_bytes)

    def add_partitions(self, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions now, as Kafka's CreatePartitions does: clients see
        the new ones in their next Metadata answer (a consumer group's leader then rebalances)."""
        with self.state.lock:
            self.state.add_partitions(topic, total)

    def delete_topic(self, topic: str) -> None:
        """Delete ``topic`` now, as Kafka's DeleteTopics does: clients see it gone
        (UNKNOWN_TOPIC_OR_PARTITION) in their next Metadata answer; its records are gone."""
        with self.state.lock:
            self.state.delete_topic(topic)

    def leader_of(self, topic: str, partition: int) -> int:
        with self.state.lock:
            return self.state.leader_of(topic, partition)

    def coordinator_for(self, key: str, key_type: str = "transaction") -> int:
        with self.state.lock:
            return self.state.coordinator_for(key_type_code(key_type), key)

    def describe_transaction(self, transactional_id: str) -> dict[str, object] | None:
        """The transaction coordinator's view of ``transactional_id`` (state, producer id, epoch, ...)."""
        with self.state.lock:
            return self.state.txn.describe(transactional_id)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        with self.state.lock:
            return self.state.groups.committed(group_id)

    def partition_records(self, topic: str, partition: int, read_committed: bool = False) -> list[Any]:
        """The data records of a partition (kafka-python records); without aborted data if read_committed."""
        from .wire_client import decode_batches

        with self.state.lock:
            log = self.state.partition_log(topic, partition)
            if log is None:
                raise KeyError(f"{topic}-{partition}")
            limit = log.last_stable_offset if read_committed else log.high_watermark
            data, end = log.read(0, 2**62, limit, min_one=True)
            aborted = log.aborted_transactions(0, end) if read_committed else []
        out: list[Any] = []
        for batch in decode_batches(data):
            if batch.is_control_batch:
                continue
            if batch.is_transactional and any(
                a.producer_id == batch.producer_id and a.first_offset <= batch.base_offset <= a.last_offset
                for a in aborted
            ):
                continue
            out.extend(batch)
        return out

    # ---------------------------------------------------------- fault injection
    def inject_error(
        self,
        api: int | str,
        error_code: int | Sequence[int],
        count: int | None = None,
        broker_id: int | None = None,
        log_start_offset: int | None = None,
    ) -> None:
        """Answer the next ``count`` requests of ``api`` with ``error_code`` instead of handling them.

        ``api`` is a key (26) or name ("EndTxn"). The request is not executed; the response mirrors its
        items (topics/partitions, coordinator keys, ...) with every error code set, plus the top-level
        code where the schema has one. A list of codes answers successive requests with successive
        codes (``count`` defaults to its length; otherwise to 1). ``broker_id`` limits it to one broker.
        ``log_start_offset`` sets that field of a Produce answer's partitions (default -1, what Kafka
        answers for errors found before the log is reached; a value tells a client, with
        UNKNOWN_PRODUCER_ID, that retention removed its producer state).
        """
        codes = [error_code] if isinstance(error_code, int) else list(error_code)
        if not codes:
            raise ValueError("at least one error code is needed")
        n = count if count is not None else len(codes)
        payloads: list[Any] = codes if log_start_offset is None else [(c, log_start_offset) for c in codes]
        self.faults.add(ERROR, api_messages.api_key_of(api), broker_id, n, payloads)

    def delay_responses(
        self, api: int | str, delay_ms: int | Sequence[int], count: int | None = None,
        broker_id: int | None = None,
    ) -> None:
        """Hold the responses of the next ``count`` requests of ``api`` for ``delay_ms`` (handled at once,
        answered late: later requests on the same connection queue behind, as on a slow broker). A list
        of delays holds successive requests for successive times - ``[0, 3000]``: the next answered at
        once, the one after it 3 s late (``count`` defaults to its length; otherwise to 1)."""
        delays = [delay_ms] if isinstance(delay_ms, int) else list(delay_ms)
        if not delays:
            raise ValueError("at least one delay is needed")
        n = count if count is not None else len(delays)
        self.faults.add(DELAY, api_messages.api_key_of(api), broker_id, n, delays)

    def set_broker_api_versions(self, broker_id: int,
                                versions: Mapping[int | str, tuple[int, int]] | None) -> None:
        """Make a broker speak less, as an older broker of a rolling upgrade does: ``versions``
        maps an API (key or name) to the (min, max) it advertises in ApiVersions; a request of a
        version outside that range makes it close the connection (Kafka cannot parse it). None
        gives the broker back every version."""
        caps = {api_messages.api_key_of(k): (int(lo), int(hi)) for k, (lo, hi) in (versions or {}).items()}
        with self.state.lock:
            if caps:
                self.state.broker_api_caps[broker_id] = caps
            else:
                self.state.broker_api_caps.pop(broker_id, None)

    def drop_connections(self, broker_id: int | None = None) -> None:
        """Close every client connection now (of one broker, or of all); clients must reconnect."""
        for bid, server in self._servers.items():
            if broker_id is None or bid == broker_id:
                server.drop_connections()

    def drop_connection_after(
        self, api: int | str, count: int = 1, when: str = "before", broker_id: int | None = None
    ) -> None:
        """Close the connection on the next ``count`` requests of ``api`` instead of answering.

        ``when="before"``: the request is not handled (as if it never arrived). ``when="after"``: it is
        handled (state changes happen) but the response is lost - the case that makes clients retry
        something the broker already did.
        """
        if when not in ("before", "after"):
            raise ValueError('when must be "before" or "after"')
        kind = DROP_BEFORE if when == "before" else DROP_AFTER
        self.faults.add(kind, api_messages.api_key_of(api), broker_id, count, [None])

    def expire_transaction(self, transactional_id: str) -> None:
        """Time out ``transactional_id``'s ongoing transaction now (the coordinator aborts it, epoch + 1)."""
        with self.state.lock:
            self.state.txn.expire_transaction(transactional_id)
            self.state.notify_all()

    def hold_markers(self, transactional_id: str | None = None) -> None:
        """Keep EndTxn from completing (state stays PrepareCommit/PrepareAbort) until release_markers()."""
        with self.state.lock:
            self.state.txn.hold_markers(transactional_id)

    def release_markers(self) -> None:
        """Write the held markers and complete those transactions."""
        with self.state.lock:
            self.state.txn.release_markers()
            self.state.notify_all()

    def set_producer_epoch(self, transactional_id: str, epoch: int) -> None:
        """Fast-forward the coordinator's epoch of an idle ``transactional_id`` to ``epoch``.

        Reaching epoch exhaustion (Short.MAX_VALUE - 1) for real takes ~32k transactions; this jumps
        there so tests can see the TV2 rotation to a new producer id. Partition logs accept the
        higher epoch from the same producer id, as they accept any epoch bump. Raises ValueError if
        the id is unknown, its transaction is not complete, or ``epoch`` is not in
        [current epoch, 32766].
        """
        with self.state.lock:
            md = self.state.txn.metadata(transactional_id)
            if md is None:
                raise ValueError(f"transactional id {transactional_id!r} was never initialised")
            if md.state not in COMPLETE_STATES:
                raise ValueError(f"{transactional_id!r} is in state {md.state.value}; it must be idle")
            if not md.producer_epoch <= epoch < MAX_EPOCH:
                raise ValueError(f"epoch must be in [{md.producer_epoch}, {MAX_EPOCH - 1}], got {epoch}")
            md.producer_epoch = epoch
            md.last_producer_epoch = NO_PRODUCER_EPOCH  # no retry of an earlier bump is recognised
            self.state.notify_all()

    # ------------------------------------------------------------ consumer groups
    def force_rebalance(self, group_id: str) -> None:
        """Start a rebalance of ``group_id`` now, as a topic metadata change would.

        Members learn of it from their next Heartbeat (REBALANCE_IN_PROGRESS) and rejoin; a group that
        does not exist, has no members or is already rebalancing is left alone.
        """
        with self.state.lock:
            self.state.groups.force_rebalance(group_id)

    def remove_group_member(self, group_id: str, member_id: str) -> bool:
        """Remove ``member_id`` from ``group_id`` as if its session had timed out.

        The group rebalances without it; the removed member's next request gets UNKNOWN_MEMBER_ID and
        it must rejoin with a new member id. Returns False if it was not a member.
        """
        with self.state.lock:
            return self.state.groups.remove_member(group_id, member_id)


def _as_acl(acl: Acl | tuple[str, ...]) -> Acl:
    """An :class:`Acl`, from itself or from a tuple of its fields (principal, type, name, operation, ...)."""
    return acl if isinstance(acl, Acl) else Acl(*acl)
