"""The ``kafka.*`` options of the ``txnkafka`` data source: what its two directions share.

Spark hands a data source its options as strings, in a case-insensitive map (PySpark lowercases the
keys). Spark's own Kafka source and sink take every option starting with ``kafka.`` as a client
setting in Java spelling (``kafka.bootstrap.servers``, ``kafka.security.protocol``,
``kafka.sasl.plain.password`` ...) and the rest as the data source's own; so do we, so that a
query switches from ``format("kafka")`` by changing the format name. Splitting the two is all the
directions share: the sink gives the client settings to a :class:`~txnproducer.ProducerConfig`,
the source to a :class:`~txnproducer.ConsumerConfig`, each validating them on the driver, before a
task runs, so that a typo fails the query at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ..config import ProducerConfig
from ..errors import ConfigError

__all__ = ["SplitOptions", "split_options"]

_PREFIX = "kafka."
_BOOTSTRAP = ("bootstrap.servers", "bootstrap_servers")


def _redacted(settings: dict[str, str]) -> str:
    return repr(ProducerConfig.redacted(settings))


@attrs.frozen
class SplitOptions:
    """``kafka``: the client settings, ``kafka.`` removed (they hold passwords: never in the repr);
    ``own``: the data source's options, keys lowercased."""

    kafka: dict[str, str] = attrs.field(repr=_redacted)
    own: dict[str, str]

    def require_bootstrap(self) -> None:
        """ConfigError unless ``kafka.bootstrap.servers`` is given (both directions need it)."""
        if not any(k in self.kafka for k in _BOOTSTRAP):
            raise ConfigError("txnkafka needs the option kafka.bootstrap.servers")


def split_options(options: Mapping[str, Any]) -> SplitOptions:
    """Split Spark's options into client settings and the data source's own (module docstring)."""
    kafka: dict[str, str] = {}
    own: dict[str, str] = {}
    for raw_key, value in dict(options).items():
        key = str(raw_key)
        if key.lower().startswith(_PREFIX):
            kafka[key[len(_PREFIX):]] = str(value)
        else:
            own[key.lower()] = str(value)
    return SplitOptions(kafka, own)
