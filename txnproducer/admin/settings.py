"""The admin tools' settings: the producer's connection and security settings, nothing else.

Why the producer's: an operator inspecting a pipeline's transactions reaches the cluster exactly as the
pipeline does - same bootstrap servers, TLS files, SASL mechanism and credentials, OAUTHBEARER token
provider - and the producer already validates all of them (``ProducerConfig``: Java or Python
spelling, Java-only keys refused with advice, secrets never shown). A Java ``--command-config``
properties file written for ``kafka-transactions.sh`` works unchanged as long as it holds connection
settings.

Why nothing else: a producer setting (``linger.ms``, ``acks``, ...) would be silently ignored by the
admin tools, and settings that would be ignored are errors in this library. The one admin-only key is
Java's ``default.api.timeout.ms``: the bound on each admin call (default 60000, as Java's Admin).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from txnproducer._internal.properties_file import load_properties
from txnproducer.config import ProducerConfig
from txnproducer.errors import ConfigError

__all__ = ["AdminSettings", "load_command_config"]

#: The producer settings that shape a connection (Python spelling); everything else is refused.
CONNECTION_KEYS = frozenset(
    {
        "bootstrap_servers",
        "client_id",
        "request_timeout_ms",
        "retry_backoff_ms",
        "retry_backoff_max_ms",
        "metadata_max_age_ms",
        "reconnect_backoff_ms",
        "reconnect_backoff_max_ms",
        "socket_connection_setup_timeout_ms",
        "connections_max_idle_ms",
        "client_dns_lookup",
        "security_protocol",
        "sasl_mechanism",
        "sasl_plain_username",
        "sasl_plain_password",
        "sasl_oauth_token_provider",
        "sasl_kerberos_service_name",
        "sasl_kerberos_domain_name",
        "ssl_cafile",
        "ssl_certfile",
        "ssl_keyfile",
        "ssl_password",
        "ssl_crlfile",
        "ssl_ciphers",
        "ssl_context",
        "ssl_check_hostname",
    }
)
_TIMEOUT_KEYS = ("default.api.timeout.ms", "default_api_timeout_ms")
DEFAULT_TIMEOUT_MS = 60_000
#: the transactional id the network layer's config carries; the admin tools never use it
_PLACEHOLDER_ID = "txnproducer-admin"


@attrs.frozen
class AdminSettings:
    """Validated connection settings (``config``, a producer config whose transactional id is never
    used), ``timeout_ms``, the bound on each admin call, and ``unreachable_after_ms``. ``raw``: the
    settings as given (Java spelling kept), for the kafka-python clients of the Spark view; never shown
    (secrets)."""

    config: ProducerConfig
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)
    #: give up before ``timeout_ms`` once no bootstrap server has taken a connection (refused, not
    #: reachable, not resolvable) for this long: the command line's 5000, so that a wrong address is
    #: reported in seconds; None (the default for library callers, as the Java AdminClient) waits for a
    #: broker that is still starting until ``timeout_ms``
    unreachable_after_ms: int | None = None

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> AdminSettings:
        """Build from producer settings in either spelling plus ``default.api.timeout.ms``; raises
        ConfigError for anything that is not a connection setting (naming it)."""
        values = dict(settings)
        timeout = DEFAULT_TIMEOUT_MS
        for key in _TIMEOUT_KEYS:
            if key in values:
                timeout = _positive_int(key, values.pop(key))
        normalized = ProducerConfig.normalize_keys(values)
        ignored = sorted(set(normalized) - CONNECTION_KEYS)
        if ignored:
            names = ", ".join(ProducerConfig.java_name(k) for k in ignored)
            raise ConfigError(
                f"{names}: not a connection setting, and the admin tools would ignore it; give them only"
                " bootstrap, security (security.protocol, ssl.*, sasl.*) and network settings"
            )
        normalized.setdefault("client_id", _PLACEHOLDER_ID)
        config = ProducerConfig.from_mapping({**normalized, "transactional_id": _PLACEHOLDER_ID})
        raw = {ProducerConfig.java_name(k): v for k, v in normalized.items()}
        return cls(config, timeout, raw)


def _positive_int(key: str, value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be an int > 0, got {value!r}") from None
    if number <= 0:
        raise ConfigError(f"{key} must be an int > 0, got {number}")
    return number


def load_command_config(path: str) -> dict[str, str]:
    """The settings of a Java ``.properties`` file (``--command-config``); ConfigError when it cannot
    be read."""
    try:
        return load_properties(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read --command-config {path}: {exc}") from None
