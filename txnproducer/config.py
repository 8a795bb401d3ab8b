"""Producer settings: one immutable, validated value object.

Why a class rather than a ``**kwargs`` dict passed around: every setting is checked once, when the
configuration is built, with a message that names the key, the bad value and what is allowed. The
rest of the library can then trust the values (no re-validation deep inside the Sender thread,
where an error would surface far from its cause).

Names follow the Java client. Python code uses ``snake_case`` (``linger_ms``); mappings may also use
the Java spelling (``"linger.ms"``), so a properties file written for the Java client works as is::

    ProducerConfig(transactional_id="payments-1", linger_ms=5)
    ProducerConfig.from_mapping({"transactional.id": "payments-1", "linger.ms": 5})

Transactions constrain several settings (acks, idempotence, in-flight limit, retries); the checks
and their messages follow the Java ``ProducerConfig`` so that a user moving between the two clients
meets the same rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from txnproducer._internal.config_checks import (
    CODEC_PACKAGES,
    COMPRESSION_TYPES,
    DEFAULT_DELIVERY_TIMEOUT_MS,
    DEFAULT_RECONNECT_BACKOFF_MAX_MS,
    DEFAULT_RETRY_BACKOFF_MAX_MS,
    INT32_MAX,
    boolean,
    check_sasl,
    check_security,
    check_transactional_id,
    cipher_string,
    codec_available,
    connection_kwargs,
    derived_delivery_timeout,
    derived_reconnect_backoff_max,
    derived_retry_backoff_max,
    doc,
    gzip_level,
    int_range,
    one_of,
    optional_callable,
    optional_one_of,
    optional_ssl_context,
    optional_str,
    secret_str,
    text,
    to_acks,
    to_compression,
    to_server_list,
    to_upper,
    token_provider,
)
from txnproducer._internal.config_names import coerce_text, config_from_arguments, normalize_keys, redacted
from txnproducer.errors import ConfigError

__all__ = ["COMPRESSION_TYPES", "SASL_MECHANISMS", "SECURITY_PROTOCOLS", "ProducerConfig"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")

Serializer = Callable[[Any], bytes]
Partitioner = Callable[[str, "bytes | None", "list[int]", "list[int]"], int]


@attrs.frozen(slots=True, kw_only=True)
class ProducerConfig:
    """Validated settings of a :class:`~txnproducer.TransactionalProducer`.

    Durations are milliseconds (``*_ms``), sizes bytes. Every key below may be given in Python
    spelling (``linger_ms``) or, through :meth:`from_mapping`, in Java spelling (``linger.ms``).
    Invalid values raise :class:`~txnproducer.errors.ConfigError` naming the key, the value and
    what is allowed.

    =========================================  ==================  ==========================================
    key                                        default             meaning
    =========================================  ==================  ==========================================
    ``bootstrap_servers``                      ``localhost:9092``  brokers to learn the cluster from
    ``transactional_id``                       (required)          identity that survives restarts; fences
                                                                   older producers with the same id
    ``client_id``                              ``None``            name in broker logs/quotas; ``None`` means
                                                                   ``producer-<transactional_id>``
    ``acks``                                   ``all``             only ``all``/``-1``: transactions need it
    ``enable_idempotence``                     ``True``            must stay ``True`` for transactions
    ``max_in_flight_requests_per_connection``  ``5``               1..5 (ordering guarantee limit)
    ``retries``                                ``2147483647``      >= 1; bounded by ``delivery_timeout_ms``
    ``transaction_timeout_ms``                 ``60000``           broker aborts a transaction open longer
    ``delivery_timeout_ms``                    ``120000``          upper bound on reporting a send's outcome;
                                                                   >= ``linger_ms + request_timeout_ms``
    ``request_timeout_ms``                     ``30000``           wait for one broker answer
    ``max_block_ms``                           ``60000``           bound on blocking calls (``send`` when the
                                                                   buffer is full, init/commit/abort)
    ``linger_ms``                              ``5``               wait this long to fill a batch
    ``batch_size``                             ``262144``          bytes per partition batch (0 = no batching)
    ``buffer_memory``                          ``33554432``        bytes of records waiting to be sent
    ``max_request_size``                       ``1048576``         largest produce request / record
    ``compression_type``                       ``none``            none, gzip, snappy, lz4, zstd
    ``compression_gzip_level``                 ``-1``              1..9, -1: zlib's default (6)
    ``retry_backoff_ms``                       ``100``             first wait before retrying a request
    ``retry_backoff_max_ms``                   ``1000``            cap of the exponential retry backoff
    ``transaction_retry_backoff_ms``           ``20``              retry wait after CONCURRENT_TRANSACTIONS
    ``metadata_max_age_ms``                    ``300000``          refresh metadata at least this often
    ``reconnect_backoff_ms``                   ``50``              first wait before reconnecting
    ``reconnect_backoff_max_ms``               ``1000``            cap of the reconnect backoff
    ``socket_connection_setup_timeout_ms``     ``10000``           bound on establishing a connection
    ``connections_max_idle_ms``                ``540000``          close connections idle this long
    ``client_dns_lookup``                      use_all_dns_ips     or resolve_canonical_bootstrap_servers_only
    ``key_serializer``                         ``None``            ``Callable[[Any], bytes]``; ``None``:
                                                                   bytes, ``str`` encoded as UTF-8
    ``value_serializer``                       ``None``            ``Callable[[Any], bytes]``; ``None``:
                                                                   bytes, ``str`` encoded as UTF-8
    ``partitioner``                            ``None``            ``(topic, key, all, available) -> int``;
                                                                   ``None``: murmur2 of key / sticky
    ``security_protocol``                      ``PLAINTEXT``       PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
    ``sasl_mechanism``                         ``None``            PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
                                                                   GSSAPI, OAUTHBEARER
    ``sasl_plain_username``                    ``None``            user for PLAIN / SCRAM
    ``sasl_plain_password``                    ``None``            password for PLAIN / SCRAM (secret)
    ``sasl_oauth_token_provider``              ``None``            OAUTHBEARER tokens (``txnproducer.oauth``)
    ``sasl_kerberos_service_name``             ``kafka``           GSSAPI: the brokers' Kerberos service
    ``sasl_kerberos_domain_name``              ``None``            GSSAPI: host part of the broker principal
    ``ssl_cafile``                             ``None``            CA bundle to verify brokers
    ``ssl_certfile``                           ``None``            client certificate (mutual TLS)
    ``ssl_keyfile``                            ``None``            client private key (mutual TLS)
    ``ssl_password``                           ``None``            password of an encrypted ``ssl_keyfile``
    ``ssl_crlfile``                            ``None``            certificate revocation list (PEM)
    ``ssl_ciphers``                            ``None``            OpenSSL cipher string (TLS 1.2)
    ``ssl_context``                            ``None``            a ready ``ssl.SSLContext``
    ``ssl_check_hostname``                     ``True``            verify the broker's host name
    ``enable_2pc``                             ``False``           KIP-939 two-phase commit (InitProducer v6)
    =========================================  ==================  ==========================================

    ``delivery_timeout_ms``, ``retry_backoff_max_ms`` and ``reconnect_backoff_max_ms`` default to
    their Java defaults raised where needed so that the defaults never contradict an explicit
    setting (Java does the same for ``delivery.timeout.ms``); an explicit contradicting value is an error.
    """

    # --- identity and cluster ----------------------------------------------------------------
    transactional_id: str = attrs.field(
        validator=check_transactional_id,
        metadata=doc(
            "Identity of the producer across restarts; a new producer with the same id "
            "fences the old one and aborts its open transaction. Required."
        ),
    )
    bootstrap_servers: list[str] = attrs.field(
        default="localhost:9092",
        converter=to_server_list,
        metadata=doc('Brokers to bootstrap from: "host:port", comma-separated string or list.'),
    )
    client_id: str | None = attrs.field(
        default=None,
        validator=optional_str,
        metadata=doc("Client name sent to brokers (logs, quotas). None: producer-<transactional_id>."),
    )

    # --- delivery guarantees (fixed by transactions) -------------------------------------------
    acks: str = attrs.field(
        default="all",
        converter=to_acks,
        metadata=doc(
            'Only "all" (or -1) is accepted: a transaction must not commit records a '
            "leader failover could lose."
        ),
    )
    enable_idempotence: bool = attrs.field(
        default=True,
        validator=boolean,
        metadata=doc("Must stay True: transactions are built on the idempotent producer."),
    )
    max_in_flight_requests_per_connection: int = attrs.field(
        default=5,
        validator=int_range(1, 5),
        metadata=doc(
            "Produce requests in flight per broker, 1..5; the broker keeps the last 5 "
            "batches per producer to detect duplicates, so more would break ordering."
        ),
    )
    retries: int = attrs.field(
        default=INT32_MAX,
        validator=int_range(1),
        metadata=doc("Retries of a failed batch (>= 1); in practice delivery_timeout_ms bounds them."),
    )

    # --- timeouts ---------------------------------------------------------------------------------
    transaction_timeout_ms: int = attrs.field(
        default=60_000,
        validator=int_range(1),
        metadata=doc(
            "The coordinator aborts a transaction open longer than this; must not exceed "
            "the broker's transaction.max.timeout.ms (default 900000)."
        ),
    )
    linger_ms: int = attrs.field(
        default=5,
        validator=int_range(0),
        metadata=doc("How long a partially filled batch waits for more records before it is sent."),
    )
    request_timeout_ms: int = attrs.field(
        default=30_000,
        validator=int_range(0),
        metadata=doc("How long to wait for one broker answer before retrying."),
    )
    delivery_timeout_ms: int = attrs.field(
        default=attrs.Factory(lambda self: derived_delivery_timeout(self), takes_self=True),
        validator=int_range(0),
        metadata=doc(
            "Upper bound on the time to report the outcome of send(); past it the batch "
            "fails and the transaction must abort. Must be >= linger_ms + request_timeout_ms."
        ),
    )
    max_block_ms: int = attrs.field(
        default=60_000,
        validator=int_range(0),
        metadata=doc(
            "Bound on blocking calls: send() waiting for buffer memory or metadata, "
            "init_transactions(), commit_transaction(), abort_transaction()."
        ),
    )

    # --- batching ---------------------------------------------------------------------------------
    batch_size: int = attrs.field(
        default=262_144,
        validator=int_range(0),
        metadata=doc("Largest bytes of a per-partition batch (0 disables batching: one record each). "
                     "The Java client's default is 16384; ours is larger because a batch reserves "
                     "buffer_memory as it grows, not all of batch_size when it starts."),
    )
    buffer_memory: int = attrs.field(
        default=33_554_432,
        validator=int_range(0, 2**63 - 1),
        metadata=doc("Bytes of records waiting to be sent; send() blocks (max_block_ms) when full."),
    )
    max_request_size: int = attrs.field(
        default=1_048_576,
        validator=int_range(0),
        metadata=doc("Largest produce request, and so the largest record, in bytes."),
    )
    compression_type: str = attrs.field(
        default="none",
        converter=to_compression,
        metadata=doc(
            "Batch compression: none, gzip, snappy, lz4 or zstd (the codec's Python "
            "package must be installed)."
        ),
    )
    compression_gzip_level: int = attrs.field(
        default=-1,
        validator=gzip_level,
        metadata=doc(
            "gzip level 1-9, or -1 for zlib's default (6), as the Java client (KIP-390); "
            "9 compresses a little better for about half as much CPU again."
        ),
    )

    # --- retries and backoff ------------------------------------------------------------------------
    retry_backoff_ms: int = attrs.field(
        default=100,
        validator=int_range(0),
        metadata=doc("First wait before retrying a failed request; grows exponentially."),
    )
    retry_backoff_max_ms: int = attrs.field(
        default=attrs.Factory(lambda self: derived_retry_backoff_max(self), takes_self=True),
        validator=int_range(0),
        metadata=doc("Cap of the exponential retry backoff (>= retry_backoff_ms)."),
    )
    transaction_retry_backoff_ms: int = attrs.field(
        default=20,
        validator=int_range(0),
        metadata=doc(
            "Wait before retrying a transactional request answered CONCURRENT_TRANSACTIONS "
            "(the previous transaction's markers are still being written)."
        ),
    )
    metadata_max_age_ms: int = attrs.field(
        default=300_000,
        validator=int_range(0),
        metadata=doc("Refresh cluster metadata at least this often even without errors."),
    )
    reconnect_backoff_ms: int = attrs.field(
        default=50,
        validator=int_range(0),
        metadata=doc("First wait before reconnecting to a broker; grows exponentially."),
    )
    reconnect_backoff_max_ms: int = attrs.field(
        default=attrs.Factory(lambda self: derived_reconnect_backoff_max(self), takes_self=True),
        validator=int_range(0),
        metadata=doc("Cap of the reconnect backoff (>= reconnect_backoff_ms)."),
    )
    socket_connection_setup_timeout_ms: int = attrs.field(
        default=10_000,
        validator=int_range(0),
        metadata=doc("Bound on establishing one TCP (and TLS/SASL) connection."),
    )
    connections_max_idle_ms: int = attrs.field(
        default=540_000,
        validator=int_range(1),
        metadata=doc("Close a connection with nothing in flight and no traffic for this long (brokers close "
                     "theirs at connections.max.idle.ms, 10 minutes by default)."),
    )
    client_dns_lookup: str = attrs.field(
        default="use_all_dns_ips",
        validator=one_of(("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")),
        metadata=doc("use_all_dns_ips: a connection tries every address a broker's name resolves to; "
                     "resolve_canonical_bootstrap_servers_only: each bootstrap server's name is also "
                     "resolved to its canonical names, each a bootstrap server of its own (Kerberos "
                     "behind a DNS alias)."),
    )

    # --- record handling ------------------------------------------------------------------------------
    key_serializer: Serializer | None = attrs.field(
        default=None,
        validator=optional_callable,
        metadata=doc("Turns a key into bytes; None: bytes pass through as they are, a str is encoded as "
                     "UTF-8, anything else is a SerializationError."),
    )
    value_serializer: Serializer | None = attrs.field(
        default=None,
        validator=optional_callable,
        metadata=doc("Turns a value into bytes; None: bytes pass through as they are, a str is encoded as "
                     "UTF-8, anything else is a SerializationError."),
    )
    partitioner: Partitioner | None = attrs.field(
        default=None,
        validator=optional_callable,
        metadata=doc(
            "(topic, key bytes, all partitions, available partitions) -> partition; "
            "None: murmur2 of the key as Java does; null keys stick to one partition until "
            "batch_size bytes went to it and its last batch is full (at most twice batch_size), "
            "then move to a random partition with a leader (the built-in partitioner of KIP-794).",
            java="partitioner.class",
        ),
    )

    # --- security -----------------------------------------------------------------------------------
    security_protocol: str = attrs.field(
        default="PLAINTEXT",
        converter=to_upper,
        validator=one_of(SECURITY_PROTOCOLS),
        metadata=doc("PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."),
    )
    sasl_mechanism: str | None = attrs.field(
        default=None,
        converter=to_upper,
        validator=optional_one_of(SASL_MECHANISMS),
        metadata=doc(
            "SASL mechanism for SASL_* protocols: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI or OAUTHBEARER."
        ),
    )
    sasl_plain_username: str | None = attrs.field(
        default=None, validator=optional_str,
        metadata=doc("User name for PLAIN and SCRAM (Java: the username in sasl.jaas.config).")
    )
    sasl_plain_password: str | None = attrs.field(
        default=None, validator=secret_str, repr=False,
        metadata=doc("Password for PLAIN and SCRAM (Java: the password in sasl.jaas.config). Never "
                     "logged or shown.")
    )
    sasl_oauth_token_provider: Any = attrs.field(
        default=None, validator=token_provider, repr=False, eq=False,
        metadata=doc(
            "OAUTHBEARER: a callable returning a txnproducer.oauth.OAuthBearerToken (or a token string), "
            "e.g. txnproducer.oauth.ClientCredentialsTokenProvider, or an object with token() (and "
            "optionally extensions()). Fetched when the producer starts and again at 80 % of each "
            "token's lifetime, off the network thread. No Java equivalent (Java: a login callback "
            "handler class).",
        ),
    )
    sasl_kerberos_service_name: str = attrs.field(
        default="kafka", validator=text,
        metadata=doc("GSSAPI: the Kerberos service name the brokers run as.",
                     java="sasl.kerberos.service.name"),
    )
    sasl_kerberos_domain_name: str | None = attrs.field(
        default=None, validator=optional_str,
        metadata=doc("GSSAPI: the host part of the brokers' principal; None: the host connected to."),
    )
    ssl_cafile: str | None = attrs.field(
        default=None, validator=optional_str,
        metadata=doc("PEM file of the CA certificates that verify the brokers; None: the system's CAs.")
    )
    ssl_certfile: str | None = attrs.field(
        default=None, validator=optional_str,
        metadata=doc("Client certificate (PEM, may include the key) for mutual TLS.")
    )
    ssl_keyfile: str | None = attrs.field(
        default=None, validator=optional_str, metadata=doc("Client private key (PEM) for mutual TLS.")
    )
    ssl_password: str | None = attrs.field(
        default=None, validator=secret_str, repr=False,
        metadata=doc("Password of an encrypted ssl_keyfile. Never logged or shown.", java="ssl.key.password"),
    )
    ssl_crlfile: str | None = attrs.field(
        default=None, validator=optional_str,
        metadata=doc("PEM certificate revocation list: a revoked broker certificate is refused."),
    )
    ssl_ciphers: str | None = attrs.field(
        default=None, validator=cipher_string,
        metadata=doc("OpenSSL cipher string limiting the TLS 1.2 ciphers offered; None: Python's defaults.",
                     java="ssl.cipher.suites"),
    )
    ssl_context: Any = attrs.field(
        default=None, validator=optional_ssl_context, eq=False,
        metadata=doc("A ready ssl.SSLContext for the brokers, used as given (its check_hostname and "
                     "verify_mode decide); the other ssl_* settings must then be unset."),
    )
    ssl_check_hostname: bool = attrs.field(
        default=True, validator=boolean,
        metadata=doc("Check that the broker certificate matches its host.",
                     java_aliases=("ssl.endpoint.identification.algorithm",)),
    )
    # --- two-phase commit (KIP-939) -----------------------------------------------------------------
    enable_2pc: bool = attrs.field(
        default=False,
        validator=boolean,
        metadata=doc(
            "Two-phase commit (KIP-939): register with InitProducerId v6 so the coordinator applies no "
            "transaction timeout and init_transactions(keep_prepared_txn=True) can keep a prepared "
            "transaction. Needs brokers with transaction.two.phase.commit.enable=true.",
            java="transaction.two.phase.commit.enable",
        ),
    )

    def __attrs_post_init__(self) -> None:
        """Cross-field rules, as the Java client's ProducerConfig/KafkaProducer checks them."""
        if not self.enable_idempotence:
            raise ConfigError(
                "enable_idempotence must be True for a transactional producer, got False "
                "(Java: 'Cannot set a transactional.id without also enabling idempotence')"
            )
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ConfigError(
                f"delivery_timeout_ms must be >= linger_ms + request_timeout_ms "
                f"({self.linger_ms} + {self.request_timeout_ms} = "
                f"{self.linger_ms + self.request_timeout_ms}), got {self.delivery_timeout_ms}"
            )
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigError(
                f"retry_backoff_max_ms must be >= retry_backoff_ms ({self.retry_backoff_ms}), "
                f"got {self.retry_backoff_max_ms}"
            )
        if self.reconnect_backoff_max_ms < self.reconnect_backoff_ms:
            raise ConfigError(
                f"reconnect_backoff_max_ms must be >= reconnect_backoff_ms ({self.reconnect_backoff_ms}), "
                f"got {self.reconnect_backoff_max_ms}"
            )
        if not codec_available(self.compression_type):
            package = CODEC_PACKAGES[self.compression_type][1]
            raise ConfigError(
                f"compression_type {self.compression_type!r} needs the Python package {package!r}, "
                f"which is not installed (pip install {package}); or choose one of 'none', 'gzip'"
            )
        check_sasl(self, SASL_MECHANISMS)
        check_security(self)

    # --- construction from other spellings -----------------------------------------------------------

    @classmethod
    def key_names(cls) -> tuple[str, ...]:
        """All setting names in Python spelling, in declaration order."""
        return tuple(a.name for a in attrs.fields(cls))

    @classmethod
    def java_name(cls, key: str) -> str:
        """The Java client's name of a setting (``linger_ms`` -> ``linger.ms``)."""
        attr = attrs.fields_dict(cls)[key]
        java: str = attr.metadata.get("java") or key.replace("_", ".")
        return java

    @classmethod
    def redacted(cls, mapping: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of a settings mapping (either spelling) with every secret's value replaced by
        ``<redacted>``: for reprs and log lines of objects that carry raw settings."""
        return redacted(cls, mapping)

    @classmethod
    def describe(cls) -> list[tuple[str, str, object, str]]:
        """``(python name, java name, default, meaning)`` for every key; used to document them."""
        rows: list[tuple[str, str, object, str]] = []
        for attr in attrs.fields(cls):
            default = attr.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = {
                    "delivery_timeout_ms": DEFAULT_DELIVERY_TIMEOUT_MS,
                    "retry_backoff_max_ms": DEFAULT_RETRY_BACKOFF_MAX_MS,
                    "reconnect_backoff_max_ms": DEFAULT_RECONNECT_BACKOFF_MAX_MS,
                }[attr.name]
            elif default is attrs.NOTHING:
                default = "(required)"
            rows.append((attr.name, cls.java_name(attr.name), default, attr.metadata["doc"]))
        return rows

    @classmethod
    def normalize_keys(cls, mapping: Mapping[str, Any]) -> dict[str, Any]:
        """Map Java or Python names to Python names; reject unknown or repeated keys (and say what
        to use instead of a Java-only setting such as ``ssl.truststore.location``)."""
        return normalize_keys(cls, mapping)

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> ProducerConfig:
        """Build from a dict using Python (``linger_ms``) and/or Java (``linger.ms``) names.

        Values may also be text, as read from a Java ``.properties`` file: ``"5"`` for an int
        setting and ``"true"``/``"false"`` for a boolean one are converted first.
        """
        values = {key: coerce_text(cls, key, value) for key, value in cls.normalize_keys(mapping).items()}
        if "transactional_id" not in values:
            raise ConfigError("transactional_id (transactional.id) is required, got no value")
        return cls(**values)

    @classmethod
    def from_arguments(cls, config: ProducerConfig | Mapping[str, Any] | None,
                       settings: Mapping[str, Any]) -> ProducerConfig:
        """The settings a producer's constructor was given: a ProducerConfig, a mapping (either
        spelling, as confluent-kafka's ``Producer({...})`` takes it) or nothing, plus keyword
        settings, which override a ProducerConfig's and may not repeat a mapping's keys.

        ``TransactionalProducer({"bootstrap.servers": "...", "transactional.id": "tx-1"})`` works as
        ``TransactionalProducer(bootstrap_servers="...", transactional_id="tx-1")`` does. Raises
        ConfigError (unknown keys, librdkafka spellings with the setting to use instead, a key given
        twice, anything else passed as ``config``).
        """
        result: ProducerConfig = config_from_arguments(
            cls, config, settings, "{'bootstrap.servers': ..., 'transactional.id': ...}")
        return result

    def with_overrides(self, **overrides: Any) -> ProducerConfig:
        """A copy with some settings changed (either spelling), validated like a new config.

        Derived defaults (``delivery_timeout_ms`` and the two ``*_backoff_max_ms``) that were not
        set explicitly are recomputed, so raising ``request_timeout_ms`` alone stays valid.
        """
        changes = self.normalize_keys(overrides)
        values: dict[str, Any] = {a.name: getattr(self, a.name) for a in attrs.fields(type(self))}
        for key, derived in self._derived_defaults().items():
            if key not in changes and values[key] == derived:
                del values[key]
        values.update(changes)
        return type(self)(**values)

    def _derived_defaults(self) -> dict[str, int]:
        return {
            "delivery_timeout_ms": derived_delivery_timeout(self),
            "retry_backoff_max_ms": derived_retry_backoff_max(self),
            "reconnect_backoff_max_ms": derived_reconnect_backoff_max(self),
        }

    # --- views for the layers below ----------------------------------------------------------------

    @property
    def effective_client_id(self) -> str:
        """The client id sent to brokers; the Java client's default is ``producer-<transactional.id>``."""
        return self.client_id if self.client_id is not None else f"producer-{self.transactional_id}"

    def kafka_client_kwargs(self) -> dict[str, Any]:
        """The connection-level settings as keyword arguments in kafka-python's names (for an
        application's own kafka-python clients beside ours; ours read ``client_software_version``).

        Only connection-level settings go here; batching and transaction settings stay with the
        producer's own components.
        """
        return connection_kwargs(self)
