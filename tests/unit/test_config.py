"""ProducerConfig: the rules a user relies on when configuring a transactional producer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import kafka.codec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.net.manager import KafkaConnectionManager

from txnproducer.config import ProducerConfig
from txnproducer.errors import ConfigError

DOCS = Path(__file__).resolve().parents[2] / "docs"


def make(**kw: Any) -> ProducerConfig:
    return ProducerConfig(transactional_id="tx-1", **kw)


# --- defaults --------------------------------------------------------------------------------------


def test_defaults_are_the_java_clients() -> None:
    c = make()
    assert c.bootstrap_servers == ["localhost:9092"]
    assert (c.acks, c.enable_idempotence, c.max_in_flight_requests_per_connection) == ("all", True, 5)
    assert (c.retries, c.transaction_timeout_ms, c.delivery_timeout_ms) == (2147483647, 60000, 120000)
    assert (c.request_timeout_ms, c.max_block_ms, c.linger_ms, c.batch_size) == (30000, 60000, 5, 262144)
    assert (c.buffer_memory, c.max_request_size, c.compression_type) == (33554432, 1048576, "none")
    assert (c.retry_backoff_ms, c.retry_backoff_max_ms, c.transaction_retry_backoff_ms) == (100, 1000, 20)
    assert (c.metadata_max_age_ms, c.reconnect_backoff_ms, c.reconnect_backoff_max_ms) == (300000, 50, 1000)
    assert c.socket_connection_setup_timeout_ms == 10000
    assert (c.security_protocol, c.ssl_check_hostname) == ("PLAINTEXT", True)
    assert c.key_serializer is None and c.value_serializer is None and c.partitioner is None


def test_describe_reports_the_real_defaults() -> None:
    actual = make()
    for name, _java, default, doc in ProducerConfig.describe():
        assert doc, name
        if name == "transactional_id":
            assert default == "(required)"
        elif name == "bootstrap_servers":
            assert [default] == actual.bootstrap_servers
        else:
            assert getattr(actual, name) == default, name


def test_config_is_immutable() -> None:
    c = make()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        c.linger_ms = 10  # type: ignore[misc]


# --- names -----------------------------------------------------------------------------------------


def test_java_and_python_names_build_the_same_config() -> None:
    java = ProducerConfig.from_mapping(
        {"transactional.id": "x", "linger.ms": 7, "max.in.flight.requests.per.connection": 3,
         "bootstrap.servers": "a:1,b:2", "partitioner.class": None}
    )  # fmt: skip
    python = ProducerConfig.from_mapping(
        {"transactional_id": "x", "linger_ms": 7, "max_in_flight_requests_per_connection": 3,
         "bootstrap_servers": ["a:1", "b:2"]}
    )  # fmt: skip
    assert java == python
    assert java == ProducerConfig(
        transactional_id="x",
        linger_ms=7,
        max_in_flight_requests_per_connection=3,
        bootstrap_servers="a:1,b:2",
    )


def test_properties_file_text_is_converted() -> None:
    # A Java .properties file yields text; from_mapping reads it as the Java client would.
    c = ProducerConfig.from_mapping(
        {"transactional.id": "x", "linger.ms": "7", "enable.idempotence": "true", "acks": "-1",
         "delivery.timeout.ms": "200000", "ssl.check.hostname": "False"}
    )  # fmt: skip
    assert (c.linger_ms, c.enable_idempotence, c.acks) == (7, True, "all")
    assert (c.delivery_timeout_ms, c.ssl_check_hostname) == (200000, False)


def test_properties_text_that_is_not_a_number_is_still_rejected() -> None:
    with pytest.raises(ConfigError, match="linger_ms must be an int >= 0, got 'soon'"):
        ProducerConfig.from_mapping({"transactional.id": "x", "linger.ms": "soon"})


def test_constructor_does_not_convert_text() -> None:
    with pytest.raises(ConfigError, match="linger_ms must be an int >= 0, got '5'"):
        make(linger_ms="5")


def test_unknown_key_names_close_matches() -> None:
    with pytest.raises(ConfigError) as err:
        ProducerConfig.from_mapping({"transactional.id": "x", "linger.msx": 5})
    message = str(err.value)
    assert "'linger.msx'" in message and "'linger.ms'" in message


def test_unknown_key_without_close_match_still_named() -> None:
    with pytest.raises(ConfigError, match="unknown configuration key 'zzz'"):
        ProducerConfig.from_mapping({"transactional.id": "x", "zzz": 1})


def test_same_key_in_both_spellings_is_rejected() -> None:
    with pytest.raises(ConfigError, match="given twice"):
        ProducerConfig.from_mapping({"transactional.id": "x", "linger.ms": 5, "linger_ms": 6})


# --- what a confluent-kafka user writes ----------------------------------------------------------------


def test_a_mapping_given_positionally_is_read_as_from_mapping_would() -> None:
    mapping = {"bootstrap.servers": "h:9092", "transactional.id": "tx-1", "linger.ms": 7, "acks": "all"}
    assert ProducerConfig.from_arguments(mapping, {}) == ProducerConfig.from_mapping(mapping)
    assert ProducerConfig.from_arguments(mapping, {"batch_size": 10}).batch_size == 10
    bare = ProducerConfig.from_arguments(None, {"transactional_id": "t"})
    assert bare == ProducerConfig(transactional_id="t")
    config = make()
    assert ProducerConfig.from_arguments(config, {}) is config
    assert ProducerConfig.from_arguments(config, {"linger_ms": 9}).linger_ms == 9


def test_a_key_in_the_mapping_and_as_a_keyword_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"'linger\.ms' given twice"):
        ProducerConfig.from_arguments({"transactional.id": "t", "linger.ms": 1}, {"linger.ms": 2})
    with pytest.raises(ConfigError, match="given twice"):
        ProducerConfig.from_arguments({"transactional.id": "t", "linger.ms": 1}, {"linger_ms": 2})


def test_something_else_than_a_config_or_a_mapping_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"must be a ProducerConfig or a mapping of settings.*got list"):
        ProducerConfig.from_arguments([("transactional.id", "t")], {})  # type: ignore[arg-type]


def test_librdkafka_spellings_are_named_with_their_replacement_all_at_once() -> None:
    mapping = {"transactional.id": "t", "metadata.broker.list": "h:1", "queue.buffering.max.kbytes": 1024,
               "compression.codec": "gzip", "on_delivery": print, "batch.num.messages": 10}
    with pytest.raises(ConfigError) as err:
        ProducerConfig.from_mapping(mapping)
    message = str(err.value)
    assert message.startswith("5 settings in confluent-kafka's (librdkafka's) spelling")
    for expected in ("'metadata.broker.list' -> 'bootstrap.servers' (bootstrap_servers)",
                     "'queue.buffering.max.kbytes' -> 'buffer.memory' (buffer_memory), in bytes here",
                     "'compression.codec' -> 'compression.type'",
                     "'on_delivery' has no equivalent here: per record",
                     "fn(metadata, exception)",
                     "'batch.num.messages' has no equivalent here: batches are bounded in bytes"):
        assert expected in message


def test_keys_both_clients_spell_alike_are_accepted_with_librdkafka_values() -> None:
    config = ProducerConfig.from_mapping({
        "bootstrap.servers": "h:9092", "transactional.id": "t", "client.id": "c", "linger.ms": "2",
        "batch.size": 1000, "acks": -1, "enable.idempotence": "true", "transaction.timeout.ms": 30000,
        "security.protocol": "plaintext", "retries": 5, "ssl.endpoint.identification.algorithm": "none"})
    assert (config.linger_ms, config.batch_size, config.acks, config.security_protocol) == \
        (2, 1000, "all", "PLAINTEXT")
    assert config.ssl_check_hostname is False  # librdkafka's 'none' means off, as Java's ''


def test_a_librdkafka_partitioner_name_says_what_partitions_here() -> None:
    with pytest.raises(ConfigError, match=r"'murmur2_random' is a librdkafka partitioner name.*murmur2"):
        ProducerConfig.from_mapping({"transactional.id": "t", "partitioner": "murmur2_random"})
    with pytest.raises(ConfigError, match="must be a callable"):
        ProducerConfig.from_mapping({"transactional.id": "t", "partitioner.class": "com.x.MyPartitioner"})


def test_from_mapping_requires_transactional_id() -> None:
    with pytest.raises(ConfigError, match="transactional_id"):
        ProducerConfig.from_mapping({"linger.ms": 5})


@pytest.mark.parametrize("value", ["", None, 5])
def test_transactional_id_must_be_non_empty_string(value: Any) -> None:
    with pytest.raises(ConfigError, match="transactional_id must be a non-empty string"):
        ProducerConfig(transactional_id=value)


def test_java_name_mapping() -> None:
    assert ProducerConfig.java_name("linger_ms") == "linger.ms"
    assert ProducerConfig.java_name("partitioner") == "partitioner.class"


# --- single-key validation ---------------------------------------------------------------------------


def test_message_names_key_value_and_range() -> None:
    with pytest.raises(ConfigError) as err:
        make(linger_ms=-1)
    assert str(err.value) == "linger_ms must be an int >= 0, got -1"


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("linger_ms", "5", "an int >= 0"),
        ("linger_ms", True, "an int >= 0"),
        ("linger_ms", 1.5, "an int >= 0"),
        ("batch_size", -1, "an int >= 0"),
        ("request_timeout_ms", -5, "an int >= 0"),
        ("max_block_ms", -1, "an int >= 0"),
        ("transaction_timeout_ms", 0, "an int >= 1"),
        ("retries", 0, "an int >= 1"),
        ("max_in_flight_requests_per_connection", 0, "an int between 1 and 5"),
        ("max_in_flight_requests_per_connection", 6, "an int between 1 and 5"),
        ("transaction_retry_backoff_ms", -1, "an int >= 0"),
        ("metadata_max_age_ms", -1, "an int >= 0"),
        ("socket_connection_setup_timeout_ms", -1, "an int >= 0"),
        ("enable_idempotence", "yes", "True or False"),
        ("ssl_check_hostname", 1, "True or False"),
        ("client_id", 42, "a string or None"),
        ("value_serializer", "json", "a callable or None"),
        ("partitioner", 3, "a callable or None"),
        ("security_protocol", "TLS", "one of 'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'"),
        ("compression_type", "brotli", "one of 'none', 'gzip', 'snappy', 'lz4', 'zstd'"),
    ],
)
def test_invalid_values_are_rejected_with_the_allowed_values(key: str, value: Any, allowed: str) -> None:
    with pytest.raises(ConfigError) as err:
        make(**{key: value})
    assert str(err.value) == f"{key} must be {allowed}, got {value!r}"


@pytest.mark.parametrize("value", ["all", "-1", -1])
def test_acks_all_spellings_are_accepted(value: Any) -> None:
    assert make(acks=value).acks == "all"


@pytest.mark.parametrize("value", [0, 1, "1", "leader"])
def test_acks_other_than_all_are_rejected(value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"acks must be 'all' \(or -1\).*got {re.escape(repr(value))}"):
        make(acks=value)


def test_idempotence_cannot_be_disabled() -> None:
    with pytest.raises(ConfigError, match="enable_idempotence must be True"):
        make(enable_idempotence=False)


def test_bootstrap_servers_accepts_string_and_list() -> None:
    assert make(bootstrap_servers="h1:9092, h2:9093").bootstrap_servers == ["h1:9092", "h2:9093"]
    assert make(bootstrap_servers=["h1:9092"]).bootstrap_servers == ["h1:9092"]
    assert make(bootstrap_servers="[::1]:9092").bootstrap_servers == ["[::1]:9092"]


@pytest.mark.parametrize("value", ["localhost", "h:port", "", ["ok:1", 5], 9092])
def test_bootstrap_servers_rejects_entries_without_port(value: Any) -> None:
    with pytest.raises(ConfigError, match="bootstrap_servers must be"):
        make(bootstrap_servers=value)


# --- cross-field rules -------------------------------------------------------------------------------


def test_delivery_timeout_must_cover_linger_and_request_timeout() -> None:
    with pytest.raises(ConfigError) as err:
        make(delivery_timeout_ms=30000, linger_ms=10, request_timeout_ms=30000)
    assert str(err.value) == (
        "delivery_timeout_ms must be >= linger_ms + request_timeout_ms (10 + 30000 = 30010), got 30000"
    )


def test_default_delivery_timeout_grows_with_request_timeout() -> None:
    # Java raises the default delivery timeout instead of failing when it was not set explicitly.
    assert make(request_timeout_ms=200_000, linger_ms=5).delivery_timeout_ms == 200_005


@given(linger=st.integers(0, 10**6), request=st.integers(0, 10**6))
def test_defaults_never_contradict_explicit_timeouts(linger: int, request: int) -> None:
    c = make(linger_ms=linger, request_timeout_ms=request)
    assert c.delivery_timeout_ms >= linger + request


def test_backoff_max_below_backoff_is_rejected() -> None:
    with pytest.raises(ConfigError, match="retry_backoff_max_ms must be >= retry_backoff_ms"):
        make(retry_backoff_ms=500, retry_backoff_max_ms=100)
    with pytest.raises(ConfigError, match="reconnect_backoff_max_ms must be >= reconnect_backoff_ms"):
        make(reconnect_backoff_ms=500, reconnect_backoff_max_ms=100)
    assert make(retry_backoff_ms=5000).retry_backoff_max_ms == 5000


def test_compression_needs_its_codec_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka.codec, "has_zstd", lambda: False)
    with pytest.raises(ConfigError, match="'zstd' needs the Python package 'zstandard'"):
        make(compression_type="zstd")
    monkeypatch.setattr(kafka.codec, "has_zstd", lambda: True)
    assert make(compression_type="ZSTD").compression_type == "zstd"


def test_gzip_needs_nothing_extra() -> None:
    assert make(compression_type="gzip").compression_type == "gzip"


def test_sasl_needs_a_sasl_protocol_and_credentials() -> None:
    with pytest.raises(ConfigError, match="sasl_mechanism is set"):
        make(sasl_mechanism="PLAIN")
    with pytest.raises(ConfigError, match="sasl_mechanism must be one of"):
        make(security_protocol="SASL_SSL")
    with pytest.raises(ConfigError, match="sasl_plain_username and sasl_plain_password"):
        make(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512")
    c = make(
        security_protocol="sasl_ssl", sasl_mechanism="plain", sasl_plain_username="u", sasl_plain_password="p"
    )
    assert (c.security_protocol, c.sasl_mechanism) == ("SASL_SSL", "PLAIN")


def test_password_is_not_in_repr() -> None:
    c = make(
        security_protocol="SASL_SSL",
        sasl_mechanism="PLAIN",
        sasl_plain_username="u",
        sasl_plain_password="s3cret",
    )
    assert "s3cret" not in repr(c)


# --- with_overrides ----------------------------------------------------------------------------------


def test_with_overrides_changes_only_the_given_keys() -> None:
    base = make(linger_ms=1, batch_size=100)
    changed = base.with_overrides(linger_ms=20, **{"batch.size": 200})
    assert (changed.linger_ms, changed.batch_size, changed.transactional_id) == (20, 200, "tx-1")
    assert base.linger_ms == 1  # the original is untouched


def test_with_overrides_validates() -> None:
    with pytest.raises(ConfigError, match="linger_ms must be an int >= 0, got -3"):
        make().with_overrides(linger_ms=-3)
    with pytest.raises(ConfigError, match="unknown configuration key"):
        make().with_overrides(lingerms=3)


def test_with_overrides_recomputes_derived_defaults_but_keeps_explicit_ones() -> None:
    assert make().with_overrides(request_timeout_ms=200_000).delivery_timeout_ms == 200_005
    explicit = make(delivery_timeout_ms=150_000)
    assert explicit.with_overrides(linger_ms=10).delivery_timeout_ms == 150_000


# --- kafka-python view -------------------------------------------------------------------------------


def test_kafka_client_kwargs_are_understood_by_kafka_python() -> None:
    kwargs = make(
        bootstrap_servers="h:1", request_timeout_ms=1234, ssl_cafile="/ca.pem", security_protocol="SSL"
    ).kafka_client_kwargs()
    # kafka-python silently ignores keys it does not know; every key we pass must be one it uses.
    assert set(kwargs) <= set(KafkaConnectionManager.DEFAULT_CONFIG)
    assert kwargs["bootstrap_servers"] == ["h:1"]
    assert kwargs["request_timeout_ms"] == 1234
    assert kwargs["ssl_cafile"] == "/ca.pem"
    assert kwargs["client_id"] == "producer-tx-1"  # the Java client's default
    assert "sasl_plain_password" not in kwargs


def test_explicit_client_id_is_used() -> None:
    assert make(client_id="billing").kafka_client_kwargs()["client_id"] == "billing"


# --- documentation -------------------------------------------------------------------------------------


def test_every_key_is_in_the_class_docstring() -> None:
    doc = ProducerConfig.__doc__ or ""
    missing = [k for k in ProducerConfig.key_names() if f"``{k}``" not in doc]
    assert not missing


def test_every_key_is_in_the_configuration_guide() -> None:
    section = (DOCS / "guide" / "configuration.md").read_text()
    missing = [k for k in ProducerConfig.key_names() if f"`{k}`" not in section]
    assert not missing


def test_every_error_class_is_exported_and_in_the_errors_guide_table() -> None:
    import txnproducer
    import txnproducer.errors

    section = (DOCS / "guide" / "errors.md").read_text()
    for name in txnproducer.errors.__all__:
        assert getattr(txnproducer, name) is getattr(txnproducer.errors, name)
        assert f"`{name}`" in section, name


def test_gzip_level_takes_java_names_and_rejects_levels_zlib_has_not() -> None:
    config = ProducerConfig.from_mapping({"transactional.id": "t", "bootstrap.servers": "h:9092",
                                          "compression.type": "gzip", "compression.gzip.level": "9"})
    assert config.compression_gzip_level == 9
    assert ProducerConfig(transactional_id="t").compression_gzip_level == -1  # zlib's default
    for bad in (0, 10, -2, True, "6"):
        with pytest.raises(ConfigError, match="compression_gzip_level must be an int from 1 to 9"):
            ProducerConfig(transactional_id="t", compression_gzip_level=bad)



def test_the_client_software_version_is_read_from_package_metadata_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every new connection and producer sends it (ApiVersions, KIP-511); reading the installed
    package's metadata parses a file each time (about 7 ms, on the Sender thread or the thread that
    creates the producer - an event loop, for txnproducer.aio)."""
    import importlib.metadata

    from txnproducer._internal import config_checks

    calls: list[str] = []
    monkeypatch.setattr(importlib.metadata, "version", lambda name: calls.append(name) or "9.9.9")
    forget = getattr(config_checks.software_version, "cache_clear", lambda: None)
    forget()
    try:
        config = ProducerConfig(transactional_id="t")
        versions = {config.kafka_client_kwargs()["client_software_version"] for _ in range(5)}
        assert versions == {"9.9.9"} and calls == ["txnproducer"]
    finally:
        forget()
