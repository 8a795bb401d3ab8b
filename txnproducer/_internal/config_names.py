"""Setting names: Python and Java spellings, the Java names we do not take and what to use instead.

Why a table of refused Java names: a properties file written for the Java client is the usual
starting point, and its security section is the part least likely to carry over (JKS stores, a
JAAS line). "unknown configuration key" would leave the user guessing; each entry here says which
setting does the job in Python. The value is never echoed: these keys hold passwords.

librdkafka's (confluent-kafka's) own spellings are refused the same way, all of a mapping's at once
(:mod:`.librdkafka_names`).

May import: errors, _internal.librdkafka_names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

import attrs

from txnproducer._internal.librdkafka_names import LIBRDKAFKA_PARTITIONERS, librdkafka_advice
from txnproducer.errors import ConfigError

__all__ = ["SECRET_KEYS", "coerce_text", "java_value", "normalize_keys", "redacted", "refused_java_key"]

#: Settings whose value is a secret: never echoed in a message, repr or log.
SECRET_KEYS = frozenset({"sasl_plain_password", "ssl_password", "sasl_oauth_token_provider"})

_PEM_TRUST = ("use ssl_cafile: a PEM file of the CA certificates that signed the brokers' certificates "
              "(from a JKS/PKCS12 trust store: keytool -exportcert -rfc -alias <ca> -keystore <store>), "
              "or ssl_context")
_PEM_KEY = ("use ssl_certfile and ssl_keyfile: the client certificate and its private key as PEM files "
            "(from a keystore: openssl pkcs12 -in <store>.p12 -nokeys / -nocerts), with ssl_password "
            "for an encrypted key, or ssl_context")
_REFUSED_JAVA_KEYS: dict[str, str] = {
    "ssl.truststore.location": _PEM_TRUST,
    "ssl.truststore.password": _PEM_TRUST,
    "ssl.truststore.type": _PEM_TRUST,
    "ssl.truststore.certificates": _PEM_TRUST,
    "ssl.keystore.location": _PEM_KEY,
    "ssl.keystore.password": _PEM_KEY,
    "ssl.keystore.type": _PEM_KEY,
    "ssl.keystore.key": _PEM_KEY,
    "ssl.keystore.certificate.chain": _PEM_KEY,
    "sasl.jaas.config": (
        "the JAAS line's settings are separate here: sasl_plain_username and sasl_plain_password for "
        "PLAIN and SCRAM, sasl_oauth_token_provider for OAUTHBEARER (e.g. "
        "txnproducer.oauth.ClientCredentialsTokenProvider), a Kerberos ticket (kinit) and "
        "sasl_kerberos_service_name for GSSAPI"),
    "sasl.login.callback.handler.class": (
        "use sasl_oauth_token_provider: a callable returning a txnproducer.oauth.OAuthBearerToken"),
    "sasl.client.callback.handler.class": (
        "use sasl_oauth_token_provider: a callable returning a txnproducer.oauth.OAuthBearerToken"),
    "sasl.oauthbearer.token.endpoint.url": (
        "use sasl_oauth_token_provider=txnproducer.oauth.ClientCredentialsTokenProvider("
        "token_endpoint_url=..., client_id=..., client_secret=...)"),
    "ssl.protocol": "use ssl_context (an ssl.SSLContext with the TLS versions you need; TLS 1.2+ by default)",
    "ssl.enabled.protocols": "use ssl_context (an ssl.SSLContext with minimum_version/maximum_version set)",
    "ssl.keymanager.algorithm": "use ssl_context",
    "ssl.trustmanager.algorithm": "use ssl_context",
    "ssl.engine.factory.class": "use ssl_context",
    "ssl.secure.random.implementation": "use ssl_context",
    # the consumer's
    "auto.commit.interval.ms": "offsets are committed with the transaction "
                               "(producer.send_offsets_to_transaction), never automatically",
    "check.crcs": "record batches' CRC-32C is always checked",
}


def refused_java_key(key: str) -> str | None:
    """What to use instead of the Java-only setting ``key`` (None: not one of those)."""
    advice = _REFUSED_JAVA_KEYS.get(key)
    if advice is None:
        return None
    return f"the Java setting {key!r} is not supported by this Python client: {advice}"


def java_value(key: str, raw_key: str, value: Any) -> Any:
    """Translate a Java-only value convention to the Python setting's (only where they differ)."""
    if raw_key == "ssl.endpoint.identification.algorithm":
        # '' is Java's "off", 'none' librdkafka's
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
            return False
        if isinstance(value, str) and value.strip().lower() == "https":
            return True
        raise ConfigError(
            f"ssl.endpoint.identification.algorithm must be 'https' or '' (off), got {value!r}")
    if key == "partitioner" and isinstance(value, str):
        if value in LIBRDKAFKA_PARTITIONERS:
            raise ConfigError(
                f"partitioner {value!r} is a librdkafka partitioner name; here keyed records are hashed "
                "with murmur2 as the Java client does (librdkafka's 'murmur2_random') and keyless ones "
                "stick to a partition (KIP-794): leave partitioner unset, or pass a callable "
                "(topic, key bytes, all partitions, available partitions) -> partition")
        raise ConfigError(f"partitioner must be a callable, got the string {value!r} (Java class names "
                          "are not loaded: pass a Python callable)")
    return value


def normalize_keys(cls: Any, mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Map Java or Python names to Python names; reject unknown or repeated keys.

    Unknown keys are an error rather than ignored: a misspelt ``"linger.ms"`` silently falling
    back to the default is the kind of bug that only shows up under load.
    """
    aliases = _aliases(cls)
    renamed = [advice for key in mapping if isinstance(key, str) and key not in aliases
               and (advice := librdkafka_advice(key, aliases)) is not None]
    if renamed:  # a configuration written for confluent-kafka: every key to change, in one message
        count = "1 setting" if len(renamed) == 1 else f"{len(renamed)} settings"
        raise ConfigError(f"{count} in confluent-kafka's (librdkafka's) spelling; this client takes the Java "
                          "client's names (docs/migration-from-confluent-kafka.md): " + "; ".join(renamed))
    out: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for raw_key, value in mapping.items():
        if not isinstance(raw_key, str):
            raise ConfigError(f"configuration keys must be strings, got {raw_key!r}")
        key = aliases.get(raw_key)
        if key is None:
            refused = refused_java_key(raw_key)
            if refused is not None:
                raise ConfigError(refused)
            matches = difflib.get_close_matches(raw_key, list(aliases), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""
            raise ConfigError(f"unknown configuration key {raw_key!r}{hint}")
        if key in out:
            raise ConfigError(
                f"configuration key {key!r} given twice (as {given_as[key]!r} and {raw_key!r})"
            )
        out[key] = java_value(key, raw_key, value)
        given_as[key] = raw_key
    return out


def config_from_arguments(cls: Any, config: Any, settings: Mapping[str, Any], example: str) -> Any:
    """A settings class (ProducerConfig, ConsumerConfig) from what a constructor was given: an
    instance, a mapping in either spelling (as confluent-kafka's ``Producer({...})`` and
    ``Consumer({...})`` take it) or nothing, plus keyword settings, which override an instance's
    and may not repeat a mapping's keys. ConfigError otherwise."""
    if config is None:
        return cls.from_mapping(settings)
    if isinstance(config, cls):
        return config.with_overrides(**settings) if settings else config
    if isinstance(config, Mapping):
        twice = sorted(set(config) & set(settings))
        if twice:
            raise ConfigError(f"configuration key {twice[0]!r} given twice (in the mapping and as a "
                              "keyword argument)")
        return cls.from_mapping({**config, **settings})
    raise ConfigError(f"config must be a {cls.__name__} or a mapping of settings (such as {example}), got "
                      f"{type(config).__name__}")


_INT_TEXT = re.compile(r"^\s*-?\d+\s*$")


def coerce_text(cls: Any, key: str, value: Any) -> Any:
    """Convert properties-file text to the setting's type; anything else is left to the validators."""
    if not isinstance(value, str):
        return value
    default = attrs.fields_dict(cls)[key].default
    if isinstance(default, bool):
        lowered = value.strip().lower()
        return {"true": True, "false": False}.get(lowered, value)
    if isinstance(default, (int, attrs.Factory)) and _INT_TEXT.match(value):  # type: ignore[arg-type]
        return int(value)
    return value


REDACTED = "<redacted>"
#: Java-only keys that hold secrets (refused by ProducerConfig, but a user may still pass them around)
_SECRET_JAVA_KEYS = frozenset({"sasl.jaas.config", "ssl.truststore.password", "ssl.keystore.password",
                               "ssl.keystore.key", "ssl.keystore.certificate.chain"})


def redacted(cls: Any, mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a settings mapping, in its own spelling, with every secret's value replaced: fit for a
    repr or a log line. Unknown keys are kept (a caller may hold more than producer settings)."""
    aliases = _aliases(cls)
    return {key: REDACTED if aliases.get(str(key)) in SECRET_KEYS or str(key) in _SECRET_JAVA_KEYS
            else value for key, value in mapping.items()}


def _aliases(cls: Any) -> dict[str, str]:
    """Every accepted spelling -> Python name."""
    table: dict[str, str] = {}
    for key in cls.key_names():
        table[key] = key
        table[key.replace("_", ".")] = key
        table[cls.java_name(key)] = key
        for extra in attrs.fields_dict(cls)[key].metadata.get("java_aliases", ()):
            table[extra] = key
    return table
