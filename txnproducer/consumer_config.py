"""Consumer settings: one immutable, validated value object, as :class:`~txnproducer.ProducerConfig`.

Why refuse settings rather than ignore them: :class:`~txnproducer.TransactionalConsumer` exists for
exactly-once pipelines, which need committed reads and offsets committed inside the producer's
transaction. ``isolation_level="read_uncommitted"`` would hand out records of transactions that
later abort; ``enable_auto_commit=True`` would commit offsets outside the transaction. Either is a
:class:`~txnproducer.ConfigError` naming the key, not a silent override.

The connection and security settings are the producer's own fields (same validation, same messages,
same defaults), taken from :class:`~txnproducer.ProducerConfig` so the two cannot drift apart. Keys
may be given in Python spelling (``fetch_max_wait_ms``) or, through :meth:`ConsumerConfig.from_mapping`,
in the Java/confluent spelling (``fetch.max.wait.ms``)::

    ConsumerConfig(bootstrap_servers="b:9092", group_id="upper", auto_offset_reset="earliest")
    ConsumerConfig.from_mapping({"bootstrap.servers": "b:9092", "max.poll.records": "1000"})

The group settings (``group_protocol``, ``group_instance_id``, ``session_timeout_ms``,
``heartbeat_interval_ms``, ``max_poll_interval_ms``, ``partition_assignment_strategy``,
``group_remote_assignor``, ``client_rack``) are the Java consumer's, with its defaults and its rules (a
heartbeat interval below the session timeout; under ``group_protocol="consumer"`` the settings the
group coordinator owns - session timeout, heartbeat interval, client-side assignors - may not be set,
and ``group_remote_assignor`` may not be set under "classic": a ConfigError naming them, as the Java
client and librdkafka refuse them); the consumer hands them to its group member (``_internal/group``)
when it subscribes. librdkafka's spellings of the same
settings are accepted where they differ from Java's (``fetch.wait.max.ms``,
``fetch.message.max.bytes``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from txnproducer._internal.config_checks import (
    check_sasl,
    check_security,
    connection_kwargs,
    doc,
    int_range,
    optional_callable,
    optional_str,
)
from txnproducer._internal.config_names import coerce_text, config_from_arguments, normalize_keys, redacted
from txnproducer._internal.group.settings import (
    ASSIGNOR_NAMES,
    assignor_names,
    check_assignors,
    check_group_instance_id,
)
from txnproducer.config import SASL_MECHANISMS, ProducerConfig
from txnproducer.errors import ConfigError

__all__ = ["AUTO_OFFSET_RESET", "GROUP_PROTOCOLS", "ConsumerConfig", "Deserializer"]

AUTO_OFFSET_RESET = ("earliest", "latest", "none")
#: ``group_protocol``: the classic protocol (JoinGroup/SyncGroup, eager) or KIP-848's consumer protocol
GROUP_PROTOCOLS = ("classic", "consumer")
Deserializer = Callable[[bytes], Any]
_SESSION_TIMEOUT_MS = 45_000
_HEARTBEAT_INTERVAL_MS = 3_000


def _producers(name: str) -> dict[str, Any]:
    """The producer's field ``name`` (validator, converter, default, docs), for a consumer field."""
    a = attrs.fields_dict(ProducerConfig)[name]
    return dict(
        default=a.default,
        validator=a.validator,
        converter=a.converter,
        repr=a.repr,
        eq=a.eq,
        metadata=a.metadata,
    )


def _isolation_level(value: Any) -> str:
    lowered = value.lower() if isinstance(value, str) else value
    if lowered != "read_committed":
        raise ConfigError(
            f"isolation_level must be 'read_committed', got {value!r}: an exactly-once pipeline must not "
            "read records of transactions that may still abort"
        )
    return "read_committed"


def _auto_commit(_inst: Any, _attr: attrs.Attribute[bool], value: bool) -> None:
    if value is not False:
        raise ConfigError(
            f"enable_auto_commit must be False, got {value!r}: the consumed offsets are committed inside the "
            "transaction (TransactionalProducer.send_offsets_to_transaction), never by the consumer"
        )


def _group_protocol(value: Any) -> str:
    lowered = value.lower() if isinstance(value, str) else value
    if lowered not in GROUP_PROTOCOLS:
        raise ConfigError(
            f"group_protocol (group.protocol) must be 'classic' or 'consumer' (KIP-848), got {value!r}")
    return str(lowered)


def _non_empty(_inst: Any, attr: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(f"{attr.name} must be None or a non-empty string, got {value!r}")


def _reset(value: Any) -> str:
    lowered = value.lower() if isinstance(value, str) else value
    if lowered not in AUTO_OFFSET_RESET:
        raise ConfigError(f"auto_offset_reset must be one of 'earliest', 'latest', 'none', got {value!r}")
    return str(lowered)


@attrs.frozen(slots=True, kw_only=True)
class ConsumerConfig:
    """Validated settings of a :class:`~txnproducer.TransactionalConsumer`.

    =========================================  ==================  ==========================================
    key                                        default             meaning
    =========================================  ==================  ==========================================
    ``bootstrap_servers``                      ``localhost:9092``  brokers to learn the cluster from
    ``client_id``                              ``None``            name in broker logs (consumer-<group>)
    ``group_id``                               ``None``            the consumer group (committed offsets)
    ``group_protocol``                         ``classic``         classic, or consumer (KIP-848)
    ``group_instance_id``                      ``None``            static membership (KIP-345)
    ``session_timeout_ms``                     ``45000``           a silent member is dropped (classic)
    ``heartbeat_interval_ms``                  ``3000``            below the session timeout (classic)
    ``max_poll_interval_ms``                   ``300000``          longest gap between two ``poll()``
    ``partition_assignment_strategy``          range, roundrobin   the assignors offered (classic)
    ``group_remote_assignor``                  ``None``            uniform or range (consumer)
    ``client_rack``                            ``None``            this member's rack (consumer)
    ``isolation_level``                        ``read_committed``  only ``read_committed``
    ``enable_auto_commit``                     ``False``           only ``False``
    ``auto_offset_reset``                      ``latest``          earliest, latest or none (raise)
    ``fetch_min_bytes``                        ``1``               bytes a fetch waits for
    ``fetch_max_bytes``                        ``52428800``        bytes per fetch answer
    ``fetch_max_wait_ms``                      ``500``             longest a broker holds a fetch
    ``max_partition_fetch_bytes``              ``1048576``         bytes per partition per fetch
    ``max_poll_records``                       ``500``             records ``poll()`` returns at most
    ``request_timeout_ms``                     ``30000``           wait for one broker answer
    ``default_api_timeout_ms``                 ``60000``           bound of calls without a timeout
    ``retry_backoff_ms`` / ``_max_ms``         ``100`` / ``1000``  retry waits
    ``key_deserializer`` / ``value_...``       ``None``            ``Callable[[bytes], Any]``; None: bytes
    security, reconnect, metadata settings     as the producer's   see ``ProducerConfig``
    =========================================  ==================  ==========================================
    """

    bootstrap_servers: list[str] = attrs.field(**_producers("bootstrap_servers"))
    client_id: str | None = attrs.field(
        default=None,
        validator=optional_str,
        metadata=doc("Client name sent to brokers (logs, quotas). None: consumer-<group_id>."),
    )
    group_id: str | None = attrs.field(
        default=None,
        validator=optional_str,
        metadata=doc(
            "The consumer group whose committed offsets positions start from (and, with a group "
            "member, whose membership the consumer takes part in)."
        ),
    )
    group_protocol: str = attrs.field(
        default="classic",
        converter=_group_protocol,
        metadata=doc(
            "The consumer group protocol: 'classic' (JoinGroup/SyncGroup, the default, as in the Java "
            "client and librdkafka) or 'consumer' (KIP-848, Kafka 4.0+: the broker assigns, partitions "
            "move one at a time while the others keep flowing)."
        ),
    )
    group_remote_assignor: str | None = attrs.field(
        default=None,
        validator=_non_empty,
        metadata=doc(
            "group_protocol='consumer' only: the server-side assignor to ask the coordinator for "
            "('uniform' or 'range' in Kafka; None: the broker's default, uniform)."
        ),
    )
    client_rack: str | None = attrs.field(
        default=None,
        validator=_non_empty,
        metadata=doc(
            "group_protocol='consumer': this member's rack, sent to the group coordinator for a "
            "rack-aware assignor (None: no rack)."
        ),
    )
    group_instance_id: str | None = attrs.field(
        default=None,
        validator=check_group_instance_id,
        metadata=doc(
            "Makes the group member static (KIP-345): a restart with the same id takes its place and "
            "partitions back at once, without a rebalance; close() does not leave the group (the "
            "coordinator waits session_timeout_ms for it). Stable per instance, distinct between "
            "instances. None: a dynamic member."
        ),
    )
    session_timeout_ms: int = attrs.field(
        default=_SESSION_TIMEOUT_MS,
        validator=int_range(1),
        metadata=doc(
            "group_protocol='classic' only: how long the group coordinator keeps a member that sends no "
            "heartbeat (a dead dynamic member's partitions wait this long before they move); under "
            "'consumer' the broker's group.consumer.session.timeout.ms decides."
        ),
    )
    heartbeat_interval_ms: int = attrs.field(
        default=_HEARTBEAT_INTERVAL_MS,
        validator=int_range(1),
        metadata=doc(
            "group_protocol='classic' only: time between heartbeats, lower than session_timeout_ms (a "
            "third is usual); under 'consumer' the coordinator gives it."
        ),
    )
    max_poll_interval_ms: int = attrs.field(
        default=300_000,
        validator=int_range(1),
        metadata=doc(
            "Longest time between two poll() calls before the member leaves its group (its partitions "
            "are then lost); also the rebalance timeout sent in JoinGroup (or ConsumerGroupHeartbeat): "
            "how long the group waits for this member to give partitions up."
        ),
    )
    partition_assignment_strategy: tuple[str, ...] = attrs.field(
        default=ASSIGNOR_NAMES,
        converter=assignor_names,
        validator=check_assignors,
        metadata=doc(
            "group_protocol='classic' only: the assignors this member offers, most preferred first: "
            "'range', 'roundrobin' (eager); a comma-separated string, Java's class names or "
            "kafka-python's assignor classes work too.",
            java_aliases=("assignors",),
        ),
    )
    isolation_level: str = attrs.field(
        default="read_committed",
        converter=_isolation_level,
        metadata=doc("Only read_committed: records of aborted transactions are never returned."),
    )
    enable_auto_commit: bool = attrs.field(
        default=False,
        validator=_auto_commit,
        metadata=doc("Only False: offsets are committed in the producer's transaction."),
    )
    auto_offset_reset: str = attrs.field(
        default="latest",
        converter=_reset,
        metadata=doc(
            "Where a partition without a valid position starts: earliest, latest, or none (poll "
            "raises OffsetOutOfRangeError)."
        ),
    )
    fetch_min_bytes: int = attrs.field(
        default=1,
        validator=int_range(0),
        metadata=doc("Bytes a broker waits to gather before answering a fetch (up to fetch_max_wait_ms)."),
    )
    fetch_max_bytes: int = attrs.field(
        default=52_428_800,
        validator=int_range(1),
        metadata=doc("Bytes a fetch answer may hold (the first batch always comes whole, KIP-74)."),
    )
    fetch_max_wait_ms: int = attrs.field(
        default=500,
        validator=int_range(0),
        metadata=doc(
            "Longest a broker holds a fetch waiting for fetch_min_bytes.",
            java_aliases=("fetch.wait.max.ms",),  # librdkafka's (confluent-kafka's) name
        ),
    )
    max_partition_fetch_bytes: int = attrs.field(
        default=1_048_576,
        validator=int_range(1),
        metadata=doc(
            "Bytes per partition per fetch (the first batch always comes whole).",
            java_aliases=("fetch.message.max.bytes",),  # librdkafka's (confluent-kafka's) name
        ),
    )
    max_poll_records: int = attrs.field(
        default=500,
        validator=int_range(1),
        metadata=doc("Records poll() returns at most (poll_batch's default too)."),
    )
    request_timeout_ms: int = attrs.field(**_producers("request_timeout_ms"))
    default_api_timeout_ms: int = attrs.field(
        default=60_000,
        validator=int_range(0),
        metadata=doc("Bound of the calls that take no timeout (position, seek_to_committed, close)."),
    )
    retry_backoff_ms: int = attrs.field(**_producers("retry_backoff_ms"))
    retry_backoff_max_ms: int = attrs.field(**_producers("retry_backoff_max_ms"))
    metadata_max_age_ms: int = attrs.field(**_producers("metadata_max_age_ms"))
    reconnect_backoff_ms: int = attrs.field(**_producers("reconnect_backoff_ms"))
    reconnect_backoff_max_ms: int = attrs.field(**_producers("reconnect_backoff_max_ms"))
    socket_connection_setup_timeout_ms: int = attrs.field(**_producers("socket_connection_setup_timeout_ms"))
    key_deserializer: Deserializer | None = attrs.field(
        default=None,
        validator=optional_callable,
        metadata=doc("Turns key bytes into a value (per record: the slow path); None: bytes."),
    )
    value_deserializer: Deserializer | None = attrs.field(
        default=None,
        validator=optional_callable,
        metadata=doc("Turns value bytes into a value (per record: the slow path); None: bytes."),
    )
    security_protocol: str = attrs.field(**_producers("security_protocol"))
    sasl_mechanism: str | None = attrs.field(**_producers("sasl_mechanism"))
    sasl_plain_username: str | None = attrs.field(**_producers("sasl_plain_username"))
    sasl_plain_password: str | None = attrs.field(**_producers("sasl_plain_password"))
    sasl_oauth_token_provider: Any = attrs.field(**_producers("sasl_oauth_token_provider"))
    sasl_kerberos_service_name: str = attrs.field(**_producers("sasl_kerberos_service_name"))
    sasl_kerberos_domain_name: str | None = attrs.field(**_producers("sasl_kerberos_domain_name"))
    ssl_cafile: str | None = attrs.field(**_producers("ssl_cafile"))
    ssl_certfile: str | None = attrs.field(**_producers("ssl_certfile"))
    ssl_keyfile: str | None = attrs.field(**_producers("ssl_keyfile"))
    ssl_password: str | None = attrs.field(**_producers("ssl_password"))
    ssl_crlfile: str | None = attrs.field(**_producers("ssl_crlfile"))
    ssl_ciphers: str | None = attrs.field(**_producers("ssl_ciphers"))
    ssl_context: Any = attrs.field(**_producers("ssl_context"))
    ssl_check_hostname: bool = attrs.field(**_producers("ssl_check_hostname"))

    def __attrs_post_init__(self) -> None:
        self._check_group_protocol()
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigError(
                f"retry_backoff_max_ms must be >= retry_backoff_ms ({self.retry_backoff_ms}), "
                f"got {self.retry_backoff_max_ms}"
            )
        if self.reconnect_backoff_max_ms < self.reconnect_backoff_ms:
            raise ConfigError(
                f"reconnect_backoff_max_ms must be >= reconnect_backoff_ms "
                f"({self.reconnect_backoff_ms}), got {self.reconnect_backoff_max_ms}"
            )
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                f"heartbeat_interval_ms (heartbeat.interval.ms) must be lower than session_timeout_ms "
                f"(session.timeout.ms, {self.session_timeout_ms}), got {self.heartbeat_interval_ms}"
            )
        check_sasl(self, SASL_MECHANISMS)
        check_security(self)

    def _check_group_protocol(self) -> None:
        """The Java client's ``checkGroupRemoteAssignor`` and KIP-848's unsupported settings: a
        setting the chosen protocol does not have is refused, never ignored (changed from its default:
        an attrs value object cannot tell a default given explicitly from none)."""
        if self.group_protocol == "classic":
            if self.group_remote_assignor is not None:
                raise ConfigError(
                    "group_remote_assignor (group.remote.assignor) cannot be set when group_protocol="
                    "'classic': server-side assignors belong to the consumer protocol; set "
                    "group_protocol='consumer', or choose partition_assignment_strategy instead")
            return
        classic_only = [
            name for name, changed in (
                ("partition_assignment_strategy", self.partition_assignment_strategy != ASSIGNOR_NAMES),
                ("session_timeout_ms", self.session_timeout_ms != _SESSION_TIMEOUT_MS),
                ("heartbeat_interval_ms", self.heartbeat_interval_ms != _HEARTBEAT_INTERVAL_MS),
            ) if changed
        ]
        if classic_only:
            java = ", ".join(f"{n} ({n.replace('_', '.')})" for n in classic_only)
            raise ConfigError(
                f"{java} cannot be set when group_protocol='consumer': under KIP-848 the group "
                "coordinator decides the session timeout and heartbeat interval "
                "(group.consumer.session.timeout.ms, group.consumer.heartbeat.interval.ms on the broker) "
                "and assigns the partitions itself (group_remote_assignor chooses its assignor); "
                "remove them")

    # --- names, as ProducerConfig ---------------------------------------------------------------

    @classmethod
    def key_names(cls) -> tuple[str, ...]:
        return tuple(a.name for a in attrs.fields(cls))

    @classmethod
    def java_name(cls, key: str) -> str:
        java: str = attrs.fields_dict(cls)[key].metadata.get("java") or key.replace("_", ".")
        return java

    @classmethod
    def normalize_keys(cls, mapping: Mapping[str, Any]) -> dict[str, Any]:
        return normalize_keys(cls, mapping)

    @classmethod
    def redacted(cls, mapping: Mapping[str, Any]) -> dict[str, Any]:
        return redacted(cls, mapping)

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> ConsumerConfig:
        """Build from a dict of Python (``max_poll_records``) and/or Java (``max.poll.records``) names;
        text values (a ``.properties`` file) are converted as the producer's are."""
        return cls(
            **{key: coerce_text(cls, key, value) for key, value in cls.normalize_keys(mapping).items()}
        )

    @classmethod
    def from_arguments(cls, config: ConsumerConfig | Mapping[str, Any] | None,
                       settings: Mapping[str, Any]) -> ConsumerConfig:
        """The settings a consumer's constructor was given: a ConsumerConfig, a mapping (either
        spelling, as confluent-kafka's ``Consumer({...})`` takes it) or nothing, plus keyword
        settings, which override a ConsumerConfig's and may not repeat a mapping's keys.

        ``TransactionalConsumer({"bootstrap.servers": "...", "group.id": "g"})`` works as
        ``TransactionalConsumer(bootstrap_servers="...", group_id="g")`` does. Raises ConfigError
        (unknown keys, librdkafka spellings with the setting to use instead, a key given twice,
        anything else passed as ``config``).
        """
        result: ConsumerConfig = config_from_arguments(cls, config, settings,
                                                       "{'bootstrap.servers': ..., 'group.id': ...}")
        return result

    def with_overrides(self, **overrides: Any) -> ConsumerConfig:
        """A copy with some settings changed (either spelling), validated like a new config."""
        values = {key: coerce_text(type(self), key, value)
                  for key, value in type(self).normalize_keys(overrides).items()}
        return attrs.evolve(self, **values)

    # --- views for the layers below -----------------------------------------------------------------

    @property
    def effective_client_id(self) -> str:
        if self.client_id is not None:
            return self.client_id
        return f"consumer-{self.group_id}" if self.group_id else "consumer"

    @property
    def max_in_flight_requests_per_connection(self) -> int:
        """The network layer's per-connection limit: a fetch per broker, plus offset lookups."""
        return 5

    def kafka_client_kwargs(self) -> dict[str, Any]:
        return connection_kwargs(self)
