"""Settings checks for the consume-transform-produce loop (``txnproducer.eos``).

Why a module of its own: exactly-once only holds if the consumer never sees uncommitted data
(``isolation_level="read_committed"``) and never commits offsets outside the transaction
(``enable_auto_commit=False``). A user asking for anything else would silently get at-least-once,
so these settings are forced here and a contradicting value is rejected with a ``ConfigError``
instead of being overridden quietly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from txnproducer.config import ProducerConfig
from txnproducer.errors import ConfigError

__all__ = ["bootstrap_of", "consumer_settings", "producer_settings"]


def bootstrap_of(settings: Mapping[str, Any]) -> Any:
    """The bootstrap servers of a settings mapping in either spelling (None: not a mapping)."""
    if not isinstance(settings, Mapping):
        return None
    return settings.get("bootstrap_servers", settings.get("bootstrap.servers"))


def _normalize(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python keyword names; Java-style dotted names ("group.id") are accepted too."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise ConfigError(f"consumer setting names must be str, got {key!r}")
        out[key.replace(".", "_")] = value
    return out


def consumer_settings(settings: Mapping[str, Any], bootstrap_servers: Any = None) -> dict[str, Any]:
    """kafka-python ``KafkaConsumer`` kwargs with the exactly-once settings forced.

    ``group_id`` is required (offsets are committed to the group inside each transaction).
    ``auto_offset_reset`` defaults to ``"earliest"`` so that a new pipeline processes what is
    already in its input topics rather than only what arrives later.
    """
    out = _normalize(settings)
    group_id = out.get("group_id")
    if not isinstance(group_id, str) or not group_id:
        raise ConfigError(
            f"consumer setting group_id must be a non-empty string, got {group_id!r}: the processor "
            "commits the input offsets to this consumer group inside each transaction")
    isolation = out.get("isolation_level", "read_committed")
    if isolation != "read_committed":
        raise ConfigError(
            f"consumer setting isolation_level={isolation!r} is not allowed: an exactly-once pipeline "
            "must read with isolation_level='read_committed' (leave it unset)")
    auto_commit = out.get("enable_auto_commit", False)
    if auto_commit is not False:
        raise ConfigError(
            f"consumer setting enable_auto_commit={auto_commit!r} is not allowed: offsets are committed "
            "inside each transaction, so auto commit must be False (leave it unset)")
    out["isolation_level"] = "read_committed"
    out["enable_auto_commit"] = False
    out.setdefault("auto_offset_reset", "earliest")
    if "bootstrap_servers" not in out:
        if bootstrap_servers is None:
            raise ConfigError("consumer setting bootstrap_servers is missing (and no producer setting "
                              "bootstrap_servers to copy it from)")
        out["bootstrap_servers"] = bootstrap_servers
    return out


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
