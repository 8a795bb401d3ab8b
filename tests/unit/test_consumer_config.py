"""ConsumerConfig as a confluent-kafka user writes it: a mapping in either spelling, keywords on top,
and librdkafka-only keys refused naming what to write instead (as the producer's settings are)."""

from __future__ import annotations

import pytest

from txnproducer import ConfigError, ConsumerConfig


def test_a_mapping_in_either_spelling_and_keywords_on_top() -> None:
    config = ConsumerConfig.from_arguments(
        {"bootstrap.servers": "127.0.0.1:9092", "group.id": "orders", "max_poll_records": "50"},
        {"client_id": "worker-1"})
    assert (config.bootstrap_servers, config.group_id, config.max_poll_records, config.client_id) == (
        ["127.0.0.1:9092"], "orders", 50, "worker-1")
    assert config.effective_client_id == "worker-1"


def test_keywords_override_a_config_and_are_validated() -> None:
    base = ConsumerConfig(bootstrap_servers="b:9092", group_id="g")
    assert ConsumerConfig.from_arguments(base, {}) is base
    assert ConsumerConfig.from_arguments(base, {"fetch.max.wait.ms": 10}).fetch_max_wait_ms == 10
    with pytest.raises(ConfigError, match="isolation_level"):
        ConsumerConfig.from_arguments(base, {"isolation_level": "read_uncommitted"})


def test_a_key_in_the_mapping_and_as_a_keyword_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"'group\.id' given twice"):
        ConsumerConfig.from_arguments({"bootstrap.servers": "b", "group.id": "g"}, {"group.id": "h"})


def test_something_else_than_a_config_or_a_mapping_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"ConsumerConfig or a mapping.*'group\.id'.*got list"):
        ConsumerConfig.from_arguments([("group.id", "g")], {})  # type: ignore[arg-type]


def test_librdkafka_consumer_keys_are_named_with_what_to_write_instead_all_at_once() -> None:
    with pytest.raises(ConfigError) as raised:
        ConsumerConfig.from_mapping({"bootstrap.servers": "b", "group.id": "g", "enable.partition.eof": True,
                                     "fetch.error.backoff.ms": 100, "rebalance_cb": print,
                                     "queued.min.messages": 1000})
    message = str(raised.value)
    assert message.startswith("4 settings in confluent-kafka's (librdkafka's) spelling")
    assert "'fetch.error.backoff.ms' -> 'retry.backoff.ms' (retry_backoff_ms)" in message
    assert "'rebalance_cb' has no equivalent here: pass a rebalance listener to subscribe" in message
    assert "'enable.partition.eof'" in message and "'queued.min.messages'" in message


def test_java_consumer_settings_we_do_not_have_say_why() -> None:
    with pytest.raises(ConfigError, match=r"'auto\.commit\.interval\.ms' is not supported.*committed with "
                                          r"the transaction"):
        ConsumerConfig.from_mapping({"bootstrap.servers": "b", "auto.commit.interval.ms": 1000})
