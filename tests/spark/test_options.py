"""The txnkafka sink's options: what a user gets wrong fails on the driver, with the fix named."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")

from txnproducer.errors import ConfigError
from txnproducer.spark.sink.options import DEFAULT_SLOTS, DEFAULT_STATE_TOPIC, SinkOptions, default_prefix

BASE = {"kafka.bootstrap.servers": "broker:9092", "topic": "out"}


def test_a_streaming_query_is_named_by_its_checkpoint_location() -> None:
    options = SinkOptions.parse({**BASE, "checkpointLocation": "s3a://b/ckpt/q1"}, streaming=True)
    again = SinkOptions.parse({**BASE, "checkpointLocation": "s3a://b/ckpt/q1"}, streaming=True)
    other = SinkOptions.parse({**BASE, "checkpointLocation": "s3a://b/ckpt/q2"}, streaming=True)
    assert options.transactional_id_prefix == again.transactional_id_prefix == default_prefix("s3a://b/ckpt/q1")
    assert other.transactional_id_prefix != options.transactional_id_prefix
    assert not options.prefix_is_ephemeral
    assert (options.slots, options.state_topic) == (DEFAULT_SLOTS, DEFAULT_STATE_TOPIC)
    assert options.commit_log is None


def test_a_streaming_query_without_checkpoint_location_or_prefix_is_refused() -> None:
    with pytest.raises(ConfigError, match="checkpointLocation"):
        SinkOptions.parse(BASE, streaming=True)
    named = SinkOptions.parse({**BASE, "transactional.id.prefix": "orders"}, streaming=True)
    assert named.transactional_id_prefix == "orders"


def test_each_batch_job_gets_its_own_prefix_unless_one_is_given() -> None:
    first, second = (SinkOptions.parse(BASE, streaming=False) for _ in range(2))
    assert first.prefix_is_ephemeral and first.transactional_id_prefix.startswith("txnkafka-batch-")
    assert first.transactional_id_prefix != second.transactional_id_prefix
    fixed = SinkOptions.parse({**BASE, "transactional.id.prefix": "nightly"}, streaming=False)
    assert (fixed.transactional_id_prefix, fixed.prefix_is_ephemeral) == ("nightly", False)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("transactional.id.slots", "0", "must be >= 1"),
    ("transactional.id.slots", "four", "must be an integer"),
    ("state.topic", "no spaces allowed", "not a valid topic name"),
    ("state.topic.replication.factor", "0", "-1"),
    ("commit.timeout.ms", "0", "must be >= 1"),
    ("commit.parallelism", "0", "must be >= 1"),
    ("kafka.transactional.id", "x", "derives its ids"),
    ("kafka.linger.ms", "-1", "linger"),
    ("comit.log", "/x", "unknown txnkafka option"),
])
def test_bad_options_fail_on_the_driver_naming_the_option(option: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SinkOptions.parse({**BASE, "transactional.id.prefix": "p", option: value}, streaming=False)


def test_options_are_case_insensitive_as_spark_hands_them_over() -> None:
    options = SinkOptions.parse({**BASE, "Transactional.Id.Slots": "6", "STATE.TOPIC": "s"}, streaming=False)
    assert (options.slots, options.state_topic) == (6, "s")


def test_the_sink_sends_larger_batches_unless_told_otherwise() -> None:
    assert SinkOptions.parse(BASE, streaming=False).producer_settings["batch.size"] == "262144"
    own = SinkOptions.parse({**BASE, "kafka.batch_size": "16384"}, streaming=False).producer_settings
    assert own["batch_size"] == "16384" and "batch.size" not in own
