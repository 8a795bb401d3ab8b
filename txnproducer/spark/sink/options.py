"""The ``txnkafka`` sink's options, parsed and validated once on the driver.

Spark hands data source options over as strings. Sink options use plain names; every option
starting with ``kafka.`` is a producer setting in Java spelling (as in Spark's own Kafka sink:
``kafka.bootstrap.servers``, ``kafka.transaction.timeout.ms``, ``kafka.linger.ms`` ...) and goes
to :class:`~txnproducer.ProducerConfig` unchanged, so a typo fails here, on the driver, before any
task runs.

Why the prefix defaults differ: a streaming query must find its own state again after a restart,
so its prefix is derived from the one thing a restart keeps, the ``checkpointLocation`` option. A
batch job has no such identity: each job gets a fresh prefix (``txnkafka-batch-<random>``), so two
jobs never share transactional ids; a job that must be able to finish what a crashed run decided
names its prefix (``transactional.id.prefix``) and keeps it.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from ...config import ProducerConfig
from ...errors import ConfigError
from ..kafka_options import split_options
from .tracing import check_providers_option

__all__ = ["DEFAULT_SLOTS", "DEFAULT_STATE_TOPIC", "PRODUCER_DEFAULTS", "SinkOptions", "default_prefix"]

DEFAULT_STATE_TOPIC = "txnkafka-state"
# A task sends all of its rows in one transaction as fast as it can: 256 KiB batches cost the
# producer a quarter less CPU per record than 16 KiB ones (benchmarks/README.md). The producer's
# own default is the same now; the sink keeps it explicit so its tasks do not depend on that.
PRODUCER_DEFAULTS = {"batch.size": "262144"}
DEFAULT_SLOTS = 4

_KNOWN = {"topic", "transactional.id.prefix", "transactional.id.slots", "state.topic",
          "state.topic.replication.factor", "commit.log", "commit.parallelism", "commit.timeout.ms",
          "otel.providers"}
# Kafka's topic name rule (org.apache.kafka.common.internals.Topic)
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def default_prefix(checkpoint_location: str) -> str:
    """The transactional id prefix of a streaming query that names none: ``txnkafka-`` and a hash
    of its ``checkpointLocation`` option, exactly as given."""
    return "txnkafka-" + hashlib.sha256(checkpoint_location.encode()).hexdigest()[:12]


def _int_option(own: dict[str, str], name: str, default: int, minimum: int) -> int:
    text = own.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"txnkafka option {name} must be an integer, got {text!r}") from None
    if value < minimum:
        raise ConfigError(f"txnkafka option {name} must be >= {minimum}, got {value}")
    return value


@attrs.frozen
class SinkOptions:
    """``producer_settings``: the ``kafka.*`` options. ``topic``: default topic for rows without a
    ``topic`` column. ``transactional_id_prefix``: task attempts use ``<prefix>-<partition>-<slot>``.
    ``prefix_is_ephemeral``: the prefix was made up for this batch job. ``slots``: transactional
    ids per partition (the pool holds at most ``partitions x slots``). ``state_topic``: the
    compacted topic holding the sink's decisions (created if missing, with
    ``state_replication_factor``, -1 meaning the broker's default). ``commit_log``: the directory
    of an older version's commit log, finished once and then unused. ``commit_parallelism``:
    prepared transactions completed concurrently by the driver. ``commit_timeout_s``: bound on
    completing one of them, and on each read or write of the state topic. ``otel_providers``:
    ``module:function`` returning the OpenTelemetry providers of each Python worker
    (:mod:`txnproducer.spark.sink.tracing`)."""

    # the settings hold passwords (kafka.sasl.plain.password, ...): never in the repr
    producer_settings: dict[str, str] = attrs.field(repr=lambda s: repr(ProducerConfig.redacted(s)))
    topic: str | None = None
    transactional_id_prefix: str = "txnkafka"
    prefix_is_ephemeral: bool = False
    slots: int = DEFAULT_SLOTS
    state_topic: str = DEFAULT_STATE_TOPIC
    state_replication_factor: int = -1
    commit_log: str | None = None
    commit_parallelism: int = 8
    commit_timeout_s: float = 60.0
    otel_providers: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, Any], *, streaming: bool) -> SinkOptions:
        split = split_options(options)
        producer = dict(split.kafka)
        own: dict[str, str] = {}
        checkpoint: str | None = None
        for key, value in split.own.items():
            if key in _KNOWN:
                own[key] = value
            elif key == "checkpointlocation":
                checkpoint = value
            elif key == "path":
                continue  # Spark's own
            else:
                raise ConfigError(
                    f"unknown txnkafka option {key!r}: use {sorted(_KNOWN)} or kafka.<producer setting>"
                )
        split.require_bootstrap()
        if any(k in producer for k in ("transactional.id", "transactional_id")):
            raise ConfigError(
                "do not set kafka.transactional.id: the sink derives its ids from"
                " transactional.id.prefix"
            )
        for name, value in PRODUCER_DEFAULTS.items():
            if name not in producer and name.replace(".", "_") not in producer:
                producer[name] = value
        # validate the producer settings now, on the driver
        ProducerConfig.from_mapping({**producer, "transactional.id": "validation"})
        prefix = own.get("transactional.id.prefix")
        ephemeral = False
        if prefix is None and streaming:
            if not checkpoint:
                raise ConfigError(
                    "txnkafka streaming writes need the option checkpointLocation (the sink derives"
                    " its transactional id prefix from it, so that a restarted query finds its"
                    " transactions again) or an explicit transactional.id.prefix unique to the query"
                )
            prefix = default_prefix(checkpoint)
        elif prefix is None:
            prefix, ephemeral = "txnkafka-batch-" + uuid.uuid4().hex[:12], True
        if not prefix:
            raise ConfigError("txnkafka option transactional.id.prefix must not be empty")
        state_topic = own.get("state.topic", DEFAULT_STATE_TOPIC)
        if not _TOPIC_NAME.fullmatch(state_topic) or state_topic in (".", ".."):
            raise ConfigError(f"txnkafka option state.topic is not a valid topic name: {state_topic!r}")
        timeout_ms = _int_option(own, "commit.timeout.ms", 60_000, 1)
        replication = _int_option(own, "state.topic.replication.factor", -1, -1)
        if replication == 0:
            raise ConfigError("txnkafka option state.topic.replication.factor must be -1 (the broker's"
                              " default) or >= 1, got 0")
        return cls(
            producer_settings=producer,
            topic=own.get("topic"),
            transactional_id_prefix=prefix,
            prefix_is_ephemeral=ephemeral,
            slots=_int_option(own, "transactional.id.slots", DEFAULT_SLOTS, 1),
            state_topic=state_topic,
            state_replication_factor=replication,
            commit_log=own.get("commit.log"),
            commit_parallelism=_int_option(own, "commit.parallelism", 8, 1),
            commit_timeout_s=timeout_ms / 1000,
            otel_providers=(check_providers_option(own["otel.providers"]) if "otel.providers" in own
                            else None),
        )
