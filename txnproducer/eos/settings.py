"""Settings checks for the consume-transform-produce loop (``txnproducer.eos``).

Why a module of its own: exactly-once only holds if the consumer never sees uncommitted data
(``isolation_level="read_committed"``) and never commits offsets outside the transaction
(``enable_auto_commit=False``). A user asking for anything else would silently get at-least-once,
so these settings are forced here and a contradicting value is rejected with a ``ConfigError``
instead of being overridden quietly.

The consumer settings arrive as the mapping the processor always took (kafka-python's
``KafkaConsumer`` keyword names, or Java's dotted names) and become a
:class:`~txnproducer.ConsumerConfig`: every key it knows means what it meant; a few kafka-python
keys that mean nothing to its read path (socket buffers, metrics, ``api_version``) are dropped with a
warning naming them; any other key is a ``ConfigError`` naming it.

The processor's group instance id (static membership, KIP-345) is chosen here too: see
:func:`choose_group_instance_id`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from txnproducer._internal.log import get_logger
from txnproducer.config import ProducerConfig
from txnproducer.consumer import SubscriptionPattern
from txnproducer.consumer_config import ConsumerConfig
from txnproducer.errors import ConfigError

__all__ = [
    "ProcessorSettings",
    "bootstrap_of",
    "build_consumer_config",
    "choose_group_instance_id",
    "consumer_settings",
    "processor_settings",
    "producer_settings",
]

_log = get_logger("txnproducer.eos")

#: kafka-python ``KafkaConsumer`` settings without a meaning for TransactionalConsumer (its sockets,
#: metrics and version probing are its own; CRCs are always checked): dropped, with a warning.
KAFKA_PYTHON_ONLY = frozenset({
    "api_version", "api_version_auto_timeout_ms", "connections_max_idle_ms", "receive_buffer_bytes",
    "send_buffer_bytes", "socket_options", "sock_chunk_bytes", "sock_chunk_buffer_count",
    "consumer_timeout_ms", "metric_group_prefix", "metrics_enabled", "metrics_num_samples",
    "metrics_sample_window_ms", "metric_reporters", "selector", "check_crcs", "exclude_internal_topics",
    "enable_incremental_fetch_sessions", "auto_commit_interval_ms", "default_offset_commit_callback",
})
# group.instance.id: what Kafka accepts (JoinGroupRequest.validateGroupInstanceId)
_INSTANCE_ID = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def bootstrap_of(settings: Mapping[str, Any]) -> Any:
    """The bootstrap servers of a settings mapping in either spelling (None: not a mapping)."""
    if not isinstance(settings, Mapping):
        return None
    return settings.get("bootstrap_servers", settings.get("bootstrap.servers"))


def consumer_settings(settings: Mapping[str, Any], bootstrap_servers: Any = None) -> dict[str, Any]:
    """The consumer's settings in Python names, with the exactly-once settings forced (validated when
    the :class:`ConsumerConfig` is made, by :func:`consumer_config`).

    ``group_id`` is required (offsets are committed to the group inside each transaction).
    ``auto_offset_reset`` defaults to ``"earliest"`` so that a new pipeline processes what is
    already in its input topics rather than only what arrives later.
    """
    if not isinstance(settings, Mapping):
        raise ConfigError(f"consumer_config must be a mapping of consumer settings, got {settings!r}")
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in settings.items():
        if not isinstance(key, str):
            raise ConfigError(f"consumer setting names must be str, got {key!r}")
        if key.replace(".", "_") in KAFKA_PYTHON_ONLY:
            dropped.append(key)
        else:
            kept[key] = value
    if dropped:
        _log.warning("eos.consumer_settings_ignored", keys=sorted(dropped),
                     why="kafka-python KafkaConsumer settings without a meaning for TransactionalConsumer")
    out = ConsumerConfig.normalize_keys(kept)
    group_id = out.get("group_id")
    if not isinstance(group_id, str) or not group_id:
        raise ConfigError(
            f"consumer setting group_id must be a non-empty string, got {group_id!r}: the processor "
            "commits the input offsets to this consumer group inside each transaction")
    # isolation_level and enable_auto_commit: ConsumerConfig takes only read_committed and False, and
    # says why naming the key
    out.setdefault("auto_offset_reset", "earliest")
    if "bootstrap_servers" not in out:
        if bootstrap_servers is None:
            raise ConfigError("consumer setting bootstrap_servers is missing (and no producer setting "
                              "bootstrap_servers to copy it from)")
        out["bootstrap_servers"] = bootstrap_servers
    return out


def build_consumer_config(settings: dict[str, Any]) -> ConsumerConfig:
    """``settings`` (from :func:`consumer_settings`, in Python names) as a validated ConsumerConfig."""
    return ConsumerConfig.from_mapping(settings)


def choose_group_instance_id(explicit: str | bool | None, configured: str | None,
                             transactional_id: str) -> str | None:
    """The processor's ``group.instance.id``: static membership (KIP-345) unless turned off.

    ``explicit``: the processor's ``group_instance_id`` argument - a string, False (a dynamic
    member) or None (choose). ``configured``: one in ``consumer_config``. Chosen by default: the
    transactional id, which is already what a group instance id must be - stable across restarts of
    an instance, distinct between instances - so that a restarted instance takes its partitions back
    at once instead of waiting ``session_timeout_ms`` for its dead predecessor. A transactional id
    with characters Kafka does not take in an instance id leaves the member dynamic (logged).
    """
    if explicit is False:
        return None
    if explicit is True:
        raise ConfigError("group_instance_id must be a string, False (a dynamic member) or None "
                          "(derived from the transactional id), got True")
    if explicit is not None:
        if configured is not None and configured != explicit:
            raise ConfigError(f"group_instance_id {explicit!r} differs from the consumer setting "
                              f"group_instance_id {configured!r}: give one")
        return explicit
    if configured is not None:
        return configured
    if _INSTANCE_ID.fullmatch(transactional_id):
        return transactional_id
    _log.warning("eos.dynamic_membership", transactional_id=transactional_id,
                 why="the transactional id is not a valid group.instance.id ([a-zA-Z0-9._-], at most 249): "
                     "pass group_instance_id= for static membership; a restarted instance waits "
                     "session_timeout_ms for its predecessor")
    return None


def producer_settings(
    settings: ProducerConfig | Mapping[str, Any],
    group_id: str,
    instance_name: str | None,
    transactional_id: str | None,
    consumer_bootstrap: Any,
) -> ProducerConfig:
    """The producer's config with its transactional id chosen.

    The transactional id must be stable across restarts of the same instance (so a restarted
    instance fences its crashed predecessor and the coordinator aborts what it left open) and
    different between instances (or they fence each other). Precedence: the explicit
    ``transactional_id`` argument, then ``f"{group_id}-{instance_name}"`` when ``instance_name`` is
    given (so instances can share one settings object), then the one in ``settings``.
    """
    chosen = transactional_id
    if chosen is None and instance_name:
        chosen = f"{group_id}-{instance_name}"
    if isinstance(settings, ProducerConfig):
        if chosen is not None and chosen != settings.transactional_id:
            return settings.with_overrides(transactional_id=chosen)
        return settings
    if not isinstance(settings, Mapping):
        raise ConfigError(f"producer settings must be a ProducerConfig or a mapping, got {settings!r}")
    values = dict(settings)
    configured = values.pop("transactional_id", None)
    configured = values.pop("transactional.id", configured)
    chosen = chosen or configured
    if not chosen:
        raise ConfigError(
            "give each processor instance a stable identity: instance_name (the transactional id "
            f"becomes '{group_id}-<instance_name>') or transactional_id")
    values["transactional_id"] = chosen
    if "bootstrap_servers" not in values and "bootstrap.servers" not in values and consumer_bootstrap:
        values["bootstrap_servers"] = consumer_bootstrap
    return ProducerConfig.from_mapping(values)


@attrs.frozen
class ProcessorSettings:
    """A processor's settings, checked: its topics, the consumer's and the producer's config."""

    topics: list[str] | SubscriptionPattern
    consumer: ConsumerConfig
    producer: ProducerConfig


def processor_settings(input_topics: str | Sequence[str] | SubscriptionPattern,
                       consumer_config: Mapping[str, Any],
                       producer_config: ProducerConfig | Mapping[str, Any], *, instance_name: str | None,
                       transactional_id: str | None,
                       group_instance_id: str | bool | None,
                       **limits: int) -> ProcessorSettings:
    """``TransactionalProcessor``'s arguments checked (ConfigError naming the one that is wrong) and
    turned into the consumer's and the producer's configs. ``limits``: its int settings by name
    (``max_records_per_txn``, ``poll_timeout_ms``, ...; ``poll_timeout_ms`` and
    ``close_timeout_ms`` may be 0)."""
    topics: list[str] | SubscriptionPattern
    if isinstance(input_topics, SubscriptionPattern):
        topics = input_topics
    else:
        topics = [input_topics] if isinstance(input_topics, str) else list(input_topics)
        if not topics or not all(isinstance(t, str) and t for t in topics):
            raise ConfigError(f"input_topics must be a topic name or names (or a SubscriptionPattern), "
                              f"got {input_topics!r}")
    for name, value in limits.items():
        low = 0 if name in ("poll_timeout_ms", "close_timeout_ms") else 1
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"{name} must be an int >= {low}, got {value!r}")
    producer_bootstrap = (producer_config.bootstrap_servers if isinstance(producer_config, ProducerConfig)
                          else bootstrap_of(producer_config))
    consumer = consumer_settings(consumer_config, producer_bootstrap)
    producer = producer_settings(producer_config, consumer["group_id"], instance_name, transactional_id,
                                 consumer["bootstrap_servers"])
    consumer["group_instance_id"] = choose_group_instance_id(
        group_instance_id, consumer.get("group_instance_id"), producer.transactional_id)
    return ProcessorSettings(topics, build_consumer_config(consumer), producer)
