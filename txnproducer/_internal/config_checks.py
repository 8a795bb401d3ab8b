"""Validators, converters and derived defaults behind :class:`txnproducer.config.ProducerConfig`.

Why apart: the config class reads as the list of settings (name, default, Java name, meaning);
the rules that check each value - and their messages, which always name the key, the bad value
and what is allowed (``linger_ms must be an int >= 0, got -1``) - are small reusable functions
that would otherwise interleave with that list. attrs calls them with (instance, attribute,
value); each raises :class:`~txnproducer.errors.ConfigError`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from collections.abc import Callable
from typing import Any

import attrs

from txnproducer.errors import ConfigError

COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")
INT32_MAX = 2**31 - 1

# Defaults that other defaults derive from (see the ``attrs.Factory`` fields of ProducerConfig).
DEFAULT_DELIVERY_TIMEOUT_MS = 120_000
DEFAULT_RETRY_BACKOFF_MAX_MS = 1_000
DEFAULT_RECONNECT_BACKOFF_MAX_MS = 1_000

# --- validators --------------------------------------------------------------------------------
# attrs validators receive (instance, attribute, value); each raises ConfigError with the message
# format used throughout: "<key> must be <what is allowed>, got <value>".

def fail(name: str, allowed: str, value: object) -> ConfigError:
    return ConfigError(f"{name} must be {allowed}, got {value!r}")


def int_range(lo: int, hi: int = INT32_MAX) -> Callable[[Any, attrs.Attribute[int], int], None]:
    def check(_inst: Any, attr: attrs.Attribute[int], value: int) -> None:
        # bool is an int subclass; "linger_ms=True" is always a mistake.
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(attr.name, _describe_range(lo, hi), value)
        if not lo <= value <= hi:
            raise fail(attr.name, _describe_range(lo, hi), value)

    return check


def _describe_range(lo: int, hi: int) -> str:
    if hi == INT32_MAX:
        return f"an int >= {lo}"
    return f"an int between {lo} and {hi}"


def optional_str(_inst: Any, attr: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and not isinstance(value, str):
        raise fail(attr.name, "a string or None", value)


def text(_inst: Any, attr: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise fail(attr.name, "a non-empty string", value)


def boolean(_inst: Any, attr: attrs.Attribute[bool], value: bool) -> None:
    if not isinstance(value, bool):
        raise fail(attr.name, "True or False", value)


def optional_callable(_inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise fail(attr.name, "a callable or None", value)


def one_of(choices: tuple[str, ...]) -> Callable[[Any, attrs.Attribute[str], str], None]:
    def check(_inst: Any, attr: attrs.Attribute[str], value: str) -> None:
        if value not in choices:
            raise fail(attr.name, "one of " + ", ".join(repr(c) for c in choices), value)

    return check


def optional_one_of(choices: tuple[str, ...]) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    def check(_inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is not None and value not in choices:
            raise fail(attr.name, "None or one of " + ", ".join(repr(c) for c in choices), value)

    return check


_HOST_PORT = re.compile(r"^(?:[A-Za-z_]+://)?(?:\[[0-9A-Fa-f:.]+\]|[^\s:,\[\]]+):\d{1,5}$")


def to_server_list(value: Any) -> list[str]:
    """Accept "h1:9092,h2:9092" or ["h1:9092", "h2:9092"], as the Java client does."""
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = [part.strip() if isinstance(part, str) else part for part in value]
    else:
        raise fail("bootstrap_servers", 'a "host:port" string or a list of them', value)
    for item in items:
        if not isinstance(item, str) or not _HOST_PORT.match(item):
            raise ConfigError(
                f'bootstrap_servers must be a "host:port" string or a list of them, got {value!r} '
                f"(bad entry {item!r})"
            )
    if not items:
        raise fail("bootstrap_servers", "a non-empty list of host:port", value)
    return items


def to_acks(value: Any) -> str:
    """Normalise the spellings of "all" (-1, "-1") so the rest of the library sees one value."""
    if value in ("all", "-1") or (value == -1 and not isinstance(value, bool)):
        return "all"
    raise ConfigError(
        f"acks must be 'all' (or -1) for a transactional producer, got {value!r}: "
        "transactions need every in-sync replica to acknowledge (Java: 'Must set acks to all in order "
        "to use the idempotent producer')"
    )


def to_compression(value: Any) -> str:
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in COMPRESSION_TYPES:
            return lowered
    if value is None:
        return "none"
    raise fail("compression_type", "one of " + ", ".join(repr(c) for c in COMPRESSION_TYPES), value)


def gzip_level(_inst: Any, attr: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not (value == -1 or 1 <= value <= 9):
        raise fail(attr.name, "an int from 1 to 9, or -1 for the codec's default (6)", value)


def to_upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


def check_transactional_id(_inst: Any, attr: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise fail(attr.name, "a non-empty string (transactions need an id)", value)


# --- the compression codec check ----------------------------------------------------------------

# codec -> (kafka.codec probe, the PyPI package that provides it)
CODEC_PACKAGES: dict[str, tuple[str, str]] = {
    "snappy": ("has_snappy", "python-snappy"),
    "lz4": ("has_lz4", "lz4"),
    "zstd": ("has_zstd", "zstandard"),
}


def codec_available(codec: str) -> bool:
    if codec not in CODEC_PACKAGES:
        return True  # none and gzip (stdlib)
    import kafka.codec

    probe: Callable[[], bool] = getattr(kafka.codec, CODEC_PACKAGES[codec][0])
    return bool(probe())


@functools.cache
def software_version() -> str:
    """txnproducer's version for ApiVersions (KIP-511). Cached: reading the installed package's
    metadata parses a file (about 7 ms), and every new connection and producer asks."""
    try:
        return importlib.metadata.version("txnproducer")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


# Defaults derived from other fields. They run before the validators, so they must tolerate a
# wrongly typed input (the validator of that input then reports it).


def _int_or(value: object, fallback: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else fallback


def derived_delivery_timeout(cfg: Any) -> int:
    linger = _int_or(cfg.linger_ms, 0)
    request = _int_or(cfg.request_timeout_ms, 0)
    return max(DEFAULT_DELIVERY_TIMEOUT_MS, linger + request)


def derived_retry_backoff_max(cfg: Any) -> int:
    return max(DEFAULT_RETRY_BACKOFF_MAX_MS, _int_or(cfg.retry_backoff_ms, 0))


def derived_reconnect_backoff_max(cfg: Any) -> int:
    return max(DEFAULT_RECONNECT_BACKOFF_MAX_MS, _int_or(cfg.reconnect_backoff_ms, 0))


def doc(text: str, java: str | None = None, java_aliases: tuple[str, ...] = ()) -> dict[str, Any]:
    """A setting's metadata: its meaning, its Java name, and other Java names that mean it."""
    return {"doc": text, "java": java or "", "java_aliases": java_aliases}


def secret_str(_inst: Any, attr: attrs.Attribute[str | None], value: str | None) -> None:
    """Like :func:`optional_str`, but a wrong value is described, never shown: it is a secret."""
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{attr.name} must be a string or None, got a {type(value).__name__} "
                          "(value not shown: it is a secret)")


def token_provider(_inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value) and not callable(getattr(value, "token", None)):
        raise ConfigError(
            f"{attr.name} must be a callable returning a txnproducer.oauth.OAuthBearerToken (or a "
            f"token string), or an object with a token() method; got a {type(value).__name__}")


def optional_ssl_context(_inst: Any, attr: attrs.Attribute[Any], value: Any) -> None:
    import ssl

    if value is not None and not isinstance(value, ssl.SSLContext):
        raise fail(attr.name, "an ssl.SSLContext or None", value)


def cipher_string(_inst: Any, attr: attrs.Attribute[str | None], value: str | None) -> None:
    """OpenSSL must select at least one cipher from ``value`` (checked on a throw-away context)."""
    import ssl

    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise fail(attr.name, "an OpenSSL cipher string or None", value)
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).set_ciphers(value)
    except ssl.SSLError:
        raise ConfigError(
            f"{attr.name} {value!r} selects no cipher OpenSSL knows. Use OpenSSL names "
            "(e.g. 'ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES256-GCM-SHA384'), not Java's IANA "
            "names (TLS_ECDHE_RSA_WITH_...); TLS 1.3 suites are not affected by this setting") from None




_TLS_FILES = ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password", "ssl_crlfile", "ssl_ciphers")


def check_security(cfg: Any) -> None:
    """Cross-field rules of the security settings: a setting that would be silently ignored is an
    error (a CA file given with PLAINTEXT is a forgotten ``security_protocol``, not a wish)."""
    import importlib.util

    tls = cfg.security_protocol in ("SSL", "SASL_SSL")
    given = [name for name in _TLS_FILES if getattr(cfg, name) is not None]
    if not tls and (given or cfg.ssl_context is not None):
        names = ", ".join(given + (["ssl_context"] if cfg.ssl_context is not None else []))
        raise ConfigError(f"{names} set but security_protocol is {cfg.security_protocol!r}, which does "
                          "not use TLS; use 'SSL' or 'SASL_SSL'")
    if cfg.ssl_context is not None and given:
        raise ConfigError(f"ssl_context is set, so {', '.join(given)} would be ignored: load them into "
                          "the context instead (load_verify_locations, load_cert_chain, set_ciphers)")
    if cfg.ssl_keyfile is not None and cfg.ssl_certfile is None:
        raise ConfigError("ssl_keyfile is set without ssl_certfile: mutual TLS needs the certificate too")
    if cfg.ssl_password is not None and cfg.ssl_certfile is None:
        raise ConfigError("ssl_password is set without ssl_certfile/ssl_keyfile: it is the password of "
                          "an encrypted client key")
    mechanism = cfg.sasl_mechanism
    if mechanism == "OAUTHBEARER" and cfg.sasl_oauth_token_provider is None:
        raise ConfigError("sasl_mechanism OAUTHBEARER needs sasl_oauth_token_provider: a callable returning "
                          "a txnproducer.oauth.OAuthBearerToken (see ClientCredentialsTokenProvider)")
    if cfg.sasl_oauth_token_provider is not None and mechanism != "OAUTHBEARER":
        raise ConfigError(f"sasl_oauth_token_provider is set but sasl_mechanism is {mechanism!r}; "
                          "use 'OAUTHBEARER'")
    if mechanism == "GSSAPI" and importlib.util.find_spec("gssapi") is None:
        raise ConfigError("sasl_mechanism GSSAPI needs the Python package 'gssapi' (pip install gssapi; "
                          "building it needs the Kerberos development files, e.g. libkrb5-dev) and a "
                          "Kerberos ticket (kinit) or client keytab (KRB5_CLIENT_KTNAME)")


def check_sasl(cfg: Any, mechanisms: tuple[str, ...]) -> None:
    """SASL settings that contradict ``security_protocol`` or miss a credential (producer and consumer)."""
    if cfg.sasl_mechanism is not None and not cfg.security_protocol.startswith("SASL_"):
        raise ConfigError(
            f"sasl_mechanism is set ({cfg.sasl_mechanism!r}) but security_protocol is "
            f"{cfg.security_protocol!r}; use 'SASL_PLAINTEXT' or 'SASL_SSL'"
        )
    if cfg.security_protocol.startswith("SASL_"):
        if cfg.sasl_mechanism is None:
            raise ConfigError(
                f"sasl_mechanism must be one of {', '.join(mechanisms)} when security_protocol "
                f"is {cfg.security_protocol!r}, got None"
            )
        if cfg.sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and (
            not cfg.sasl_plain_username or cfg.sasl_plain_password is None
        ):
            raise ConfigError(
                f"sasl_plain_username and sasl_plain_password must be set for sasl_mechanism "
                f"{cfg.sasl_mechanism!r}"
            )


def connection_kwargs(cfg: Any) -> dict[str, Any]:
    """Keyword arguments for kafka-python's ``KafkaNetClient`` / ``KafkaConnectionManager`` from a
    producer's or consumer's settings: only connection-level settings."""
    kwargs: dict[str, Any] = {
        "bootstrap_servers": list(cfg.bootstrap_servers),
        "client_id": cfg.effective_client_id,
        "client_software_name": "txnproducer",
        "client_software_version": software_version(),
        "request_timeout_ms": cfg.request_timeout_ms,
        "reconnect_backoff_ms": cfg.reconnect_backoff_ms,
        "reconnect_backoff_max_ms": cfg.reconnect_backoff_max_ms,
        "socket_connection_setup_timeout_ms": cfg.socket_connection_setup_timeout_ms,
        "max_in_flight_requests_per_connection": cfg.max_in_flight_requests_per_connection,
        "metadata_max_age_ms": cfg.metadata_max_age_ms,
        "security_protocol": cfg.security_protocol,
        "ssl_check_hostname": cfg.ssl_check_hostname,
    }
    optional = {
        "sasl_mechanism": cfg.sasl_mechanism,
        "sasl_plain_username": cfg.sasl_plain_username,
        "sasl_plain_password": cfg.sasl_plain_password,
        "sasl_kerberos_service_name": cfg.sasl_kerberos_service_name,
        "sasl_kerberos_domain_name": cfg.sasl_kerberos_domain_name,
        "ssl_cafile": cfg.ssl_cafile,
        "ssl_certfile": cfg.ssl_certfile,
        "ssl_keyfile": cfg.ssl_keyfile,
        "ssl_password": cfg.ssl_password,
        "ssl_crlfile": cfg.ssl_crlfile,
        "ssl_context": cfg.ssl_context,
    }
    kwargs.update({k: v for k, v in optional.items() if v is not None})
    return kwargs
