"""The ``txnkafka`` sink's options, parsed and validated once on the driver.

Spark hands data source options over as strings. Sink options use plain names; every option
starting with ``kafka.`` is a producer setting in Java spelling (as in Spark's own Kafka sink:
``kafka.bootstrap.servers``, ``kafka.transaction.timeout.ms``, ``kafka.linger.ms`` ...) and goes
to :class:`~txnproducer.ProducerConfig` unchanged, so a typo fails here, on the driver, before any
task runs.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from typing import Any

import attrs

from ..config import ProducerConfig
from ..errors import ConfigError

__all__ = ["SinkOptions"]

_KNOWN = {"topic", "transactional.id.prefix", "commit.log", "commit.parallelism", "commit.timeout.ms"}


@attrs.frozen
class SinkOptions:
    """``topic``: default topic for rows without a ``topic`` column. ``transactional_id_prefix``:
    every task attempt uses ``<prefix>-<run>-<stage>-<partition>-<attempt>``. ``commit_log``:
    directory of the durable commit log (required for streaming). ``producer_settings``: the
    ``kafka.*`` options. ``commit_parallelism``: prepared transactions completed concurrently by
    the driver. ``commit_timeout_s``: bound on completing one of them."""

    # the settings hold passwords (kafka.sasl.plain.password, ...): never in the repr
    producer_settings: dict[str, str] = attrs.field(repr=lambda s: repr(ProducerConfig.redacted(s)))
    topic: str | None = None
    transactional_id_prefix: str = "txnkafka"
    commit_log: str | None = None
    commit_parallelism: int = 8
    commit_timeout_s: float = 60.0

    @classmethod
    def parse(cls, options: Mapping[str, Any], *, streaming: bool) -> SinkOptions:
        producer: dict[str, str] = {}
        own: dict[str, str] = {}
        for raw_key, value in dict(options).items():
            key = str(raw_key)
            if key.lower().startswith("kafka."):
                producer[key[len("kafka."):]] = str(value)
            elif key.lower() in _KNOWN:
                own[key.lower()] = str(value)
            elif key.lower() in ("path", "checkpointlocation"):
                continue  # Spark's own
            else:
                raise ConfigError(
                    f"unknown txnkafka option {key!r}: use {sorted(_KNOWN)} or kafka.<producer setting>"
                )
        if not any(k in producer for k in ("bootstrap.servers", "bootstrap_servers")):
            raise ConfigError("txnkafka needs the option kafka.bootstrap.servers")
        if any(k in producer for k in ("transactional.id", "transactional_id")):
            raise ConfigError(
                "do not set kafka.transactional.id: the sink derives one per task attempt from"
                " transactional.id.prefix"
            )
        # validate the producer settings now, on the driver
        ProducerConfig.from_mapping({**producer, "transactional.id": "validation"})
        commit_log = own.get("commit.log")
        if commit_log is None and streaming:
            raise ConfigError(
                "txnkafka streaming writes need the option commit.log: a directory that survives the"
                " driver and is shared with the executors (e.g. next to the checkpoint)"
            )
        prefix = own.get("transactional.id.prefix")
        if prefix is None:
            # stable across restarts of the same query: derived from where its log lives
            seed = os.path.abspath(commit_log) if commit_log else tempfile.gettempdir()
            prefix = "txnkafka-" + hashlib.sha256(seed.encode()).hexdigest()[:10]
        try:
            parallelism = int(own.get("commit.parallelism", "8"))
            timeout_s = int(own.get("commit.timeout.ms", "60000")) / 1000
        except ValueError as exc:
            raise ConfigError(
                f"txnkafka: commit.parallelism / commit.timeout.ms must be integers: {exc}"
            ) from None
        if parallelism < 1 or timeout_s <= 0:
            raise ConfigError("txnkafka: commit.parallelism must be >= 1 and commit.timeout.ms > 0")
        return cls(
            producer_settings=producer,
            topic=own.get("topic"),
            transactional_id_prefix=prefix,
            commit_log=commit_log,
            commit_parallelism=parallelism,
            commit_timeout_s=timeout_s,
        )
