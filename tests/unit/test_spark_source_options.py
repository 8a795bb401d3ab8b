"""The txnkafka source's options (txnproducer/spark/source/options.py) and offsets JSON (offsets.py):
Spark's Kafka source's names and meanings, every bad input a ConfigError naming the option before
any task runs, and no secret in a repr. No PySpark needed: the driver parses these in its planner."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.structs import TopicPartition

from txnproducer.errors import ConfigError
from txnproducer.spark.source.offsets import from_checkpoint, parse_assign, to_checkpoint
from txnproducer.spark.source.options import SourceOptions, parse_time_ms

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def parse(streaming: bool = False, **options: str) -> SourceOptions:
    # PySpark hands options over with lowercased keys; the parser must take either
    return SourceOptions.parse({**BOOT, **options}, streaming=streaming)


def refused(message: str, streaming: bool = False, **options: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(streaming, **options)
    assert message in str(caught.value), str(caught.value)


def test_defaults_are_sparks_but_read_committed() -> None:
    batch = parse(subscribe="a, b")
    assert batch.subscription.kind == "subscribe" and batch.subscription.topics == {"a", "b"}
    assert batch.read_committed and batch.fail_on_data_loss and not batch.include_headers
    assert (batch.starting.kind, batch.ending.kind) == ("earliest", "latest")
    assert parse(True, subscribe="a").starting.kind == "latest", "a new stream starts at latest"
    assert batch.poll_timeout_ms == 120_000
    assert batch.consumer_config().auto_offset_reset == "none", "a lost offset is the reader's to report"
    assert batch.consumer_config().group_id is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "exactly one of the options subscribe, subscribePattern, assign; got none"),
        ({"subscribe": "a", "assign": '{"a":[0]}'}, "got subscribe and assign"),
        ({"subscribe": " , "}, "subscribe names no topic"),
        ({"subscribePattern": "a(["}, "subscribePattern is not a regular expression"),
        ({"assign": '{"a":[0,'}, "assign is not JSON"),
        ({"assign": '{"a":0}'}, 'expected e.g. {"topicA":[0,1],"topicB":[2,4]}'),
        ({"subscribe": "a", "startingOffsets": '{"a":{"0":5'}, "startingOffsets is not JSON"),
        ({"subscribe": "a", "startingOffsets": '{"a":{"x":5}}'}, 'expected e.g. {"topicA":{"0":23,"1":-1}'),
        ({"subscribe": "a", "startingOffsets": '{"a":{"0":-3}}'}, "offset -3 of a-0 is not an offset"),
        ({"subscribe": "a", "startingOffsets": "latest"}, "a batch read cannot start at latest"),
        ({"subscribe": "a", "startingOffsets": '{"a":{"0":-1}}'}, "a batch read cannot start at latest"),
        ({"subscribe": "a", "endingOffsets": "earliest"}, "a batch read cannot end at earliest"),
        (
            {"subscribe": "a", "startingOffsets": '{"a":{"0":9}}', "endingOffsets": '{"a":{"0":3}}'},
            "startingOffsets for a-0 (9) is past endingOffsets (3)",
        ),
        (
            {"subscribe": "a", "startingOffsets": '{"a":{"0":1}}', "endingOffsets": '{"a":{"1":3}}'},
            "must name the same partitions",
        ),
        ({"subscribe": "a", "startingTimestamp": "yesterday"}, "startingTimestamp must be a timestamp"),
        (
            {"subscribe": "a", "startingOffsetsByTimestamp": '{"a":{"0":-5}}'},
            "timestamp -5 of a-0 is negative",
        ),
        ({"subscribe": "a", "startingOffsetsByTimestampStrategy": "nearest"}, "must be error or latest"),
        ({"subscribe": "a", "minPartitions": "0"}, "minPartitions must be >= 1"),
        ({"subscribe": "a", "maxRecordsPerPartition": "many"}, "maxRecordsPerPartition must be an integer"),
        ({"subscribe": "a", "failOnDataLoss": "yes"}, "failOnDataLoss must be true or false"),
        (
            {"subscribe": "a", "maxOffsetsPerTrigger": "10"},
            "maxOffsetsPerTrigger applies to streaming queries",
        ),
        (
            {"subscribe": "a", "subscibe": "b"},
            "unknown txnkafka source option 'subscibe'; did you mean subscribe?",
        ),
        ({"subscribe": "a", "topic": "b"}, "topic is an option of the txnkafka sink"),
        (
            {"subscribe": "a", "groupIdPrefix": "g"},
            "groupIdPrefix names consumer groups; txnkafka has no consumer",
        ),
        ({"subscribe": "a", "fetchOffset.numRetries": "3"}, "set that instead"),
        ({"subscribe": "a", "kafka.group.id": "g"}, "kafka.group.id: txnkafka has no consumer group"),
        ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "set startingOffsets to earliest or"),
        ({"subscribe": "a", "kafka.value.deserializer": "x"}, "values are binary"),
        ({"subscribe": "a", "kafka.enable.auto.commit": "true"}, "kafka.enable.auto.commit is not supported"),
        ({"subscribe": "a", "kafka.isolation.level": "read_most"}, "read_committed or read_uncommitted"),
        ({"subscribe": "a", "kafka.fetch.max.bytez": "1"}, "unknown configuration key 'fetch.max.bytez'"),
        ({"subscribe": "a", "kafka.sasl.jaas.config": "x"}, "sasl.jaas.config"),
    ],
)
def test_bad_input_is_a_config_error_naming_the_option(options: dict[str, str], message: str) -> None:
    refused(message, **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "a", "endingOffsets": "latest"}, "endingOffsets applies to batch reads"),
        ({"subscribe": "a", "endingTimestamp": "5"}, "endingTimestamp applies to batch reads"),
        (
            {"subscribe": "a", "minOffsetsPerTrigger": "9", "maxOffsetsPerTrigger": "5"},
            "minOffsetsPerTrigger (9) is higher than maxOffsetsPerTrigger (5)",
        ),
        ({"subscribe": "a", "maxTriggerDelay": "soon"}, "maxTriggerDelay must be a time"),
    ],
)
def test_stream_only_rules(options: dict[str, str], message: str) -> None:
    refused(message, streaming=True, **options)


def test_the_bootstrap_servers_are_required() -> None:
    with pytest.raises(ConfigError, match=r"needs the option kafka\.bootstrap\.servers"):
        SourceOptions.parse({"subscribe": "a"}, streaming=False)


def test_options_arrive_lowercased_from_pyspark_and_keep_their_meaning() -> None:
    lowered = {
        k.lower(): v
        for k, v in {
            **BOOT,
            "subscribePattern": "in-.*",
            "startingOffsetsByTimestamp": '{"in-1":{"0":1000}}',
            "startingOffsetsByTimestampStrategy": "LATEST",
            "includeHeaders": "TRUE",
            "minPartitions": "4",
            "kafkaConsumer.pollTimeoutMs": "5000",
            "kafka.isolation.level": "read_uncommitted",
            "maxOffsetsPerTrigger": "100",
            "maxTriggerDelay": "30s",
        }.items()
    }
    opts = SourceOptions.parse(lowered, streaming=True)
    assert opts.subscription.pattern == "in-.*"
    assert opts.starting.kind == "timestamps" and opts.starting.offsets == {TopicPartition("in-1", 0): 1000}
    assert opts.no_match_latest and opts.include_headers and opts.min_partitions == 4
    assert opts.poll_timeout_ms == 5000 and not opts.read_committed
    assert opts.max_offsets_per_trigger == 100 and opts.max_trigger_delay_ms == 30_000
    assert "isolation.level" not in opts.consumer_settings, "the consumer gets it as its own switch"


def test_the_global_timestamp_comes_before_per_partition_timestamps_and_offsets() -> None:
    opts = parse(
        subscribe="a",
        startingTimestamp="1700000000000",
        startingOffsets="earliest",
        startingOffsetsByTimestamp='{"a":{"0":5}}',
    )
    assert (opts.starting.kind, opts.starting.timestamp) == ("timestamp", 1_700_000_000_000)


def test_no_secret_in_the_repr() -> None:
    opts = parse(
        subscribe="a",
        **{
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.plain.username": "alice",
            "kafka.sasl.plain.password": "s3cr3t-pw",
        },
    )
    assert "s3cr3t-pw" not in repr(opts)
    assert opts.consumer_config().sasl_plain_password == "s3cr3t-pw"


@pytest.mark.parametrize(
    ("text", "ms"),
    [("15m", 900_000), ("30s", 30_000), ("500ms", 500), ("2h", 7_200_000), ("1d", 86_400_000), ("250", 250)],
)
def test_spark_time_strings(text: str, ms: int) -> None:
    assert parse_time_ms(text, "maxTriggerDelay") == ms


def test_checkpoint_offsets_are_sparks_json_and_canonical() -> None:
    offsets = {TopicPartition("b", 1): 7, TopicPartition("a", 10): 3, TopicPartition("a", 2): 5}
    value: Any = to_checkpoint(offsets)
    assert value == {"a": {"2": 5, "10": 3}, "b": {"1": 7}}
    assert list(value) == ["a", "b"] and list(value["a"]) == ["2", "10"], (
        "topics sorted, partitions by number"
    )
    assert from_checkpoint(value) == offsets
    assert from_checkpoint(None) == {} and to_checkpoint({}) == {}
    assert parse_assign('{"a":[0,2],"b":[1]}') == {
        TopicPartition("a", 0),
        TopicPartition("a", 2),
        TopicPartition("b", 1),
    }
