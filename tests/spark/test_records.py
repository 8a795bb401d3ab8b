"""Arrow batches to Kafka records: Spark's Kafka-sink column contract, column by column."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyarrow", reason="pyarrow not installed (the [spark] extra)")
pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")

import pyarrow as pa

from txnproducer.errors import ConfigError
from txnproducer.spark.sink.records import check_columns, send_batches


class Recorder:
    """Stands in for the producer: send_batches only calls send()."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
             headers: Any = None) -> None:
        self.sent.append((topic, key, value, partition, headers))


def test_string_and_binary_keys_and_values_are_sent_as_bytes() -> None:
    batch = pa.record_batch([pa.array(["k1", None]), pa.array(["é", None], pa.large_string())],
                            names=["key", "value"])
    producer = Recorder()
    assert send_batches(producer, [batch], "out") == 2  # type: ignore[arg-type]
    assert producer.sent == [("out", b"k1", "é".encode(), None, None), ("out", None, None, None, None)]


def test_topic_partition_and_header_columns_are_honoured_per_row() -> None:
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    batch = pa.record_batch([
        pa.array([b"v0", b"v1"]), pa.array(["t0", None]), pa.array([2, None], pa.int32()),
        pa.array([[{"key": "h", "value": b"x"}], []], pa.list_(header)),
    ], names=["value", "topic", "partition", "headers"])
    producer = Recorder()
    send_batches(producer, [batch], "fallback")  # type: ignore[arg-type]
    assert producer.sent == [("t0", None, b"v0", 2, [("h", b"x")]), ("fallback", None, b"v1", None, None)]


def test_a_row_without_any_topic_fails_the_task() -> None:
    batch = pa.record_batch([pa.array([b"v"]), pa.array([None], pa.string())], names=["value", "topic"])
    with pytest.raises(ConfigError, match="no topic"):
        send_batches(Recorder(), [batch], None)  # type: ignore[arg-type]


def test_the_fault_hook_runs_once_after_the_first_batch() -> None:
    batches = [pa.record_batch([pa.array([b"a"])], names=["value"]) for _ in range(3)]
    seen: list[int] = []
    producer = Recorder()
    send_batches(producer, batches, "out", lambda p: seen.append(len(p.sent)))  # type: ignore[arg-type]
    assert seen == [1] and len(producer.sent) == 3


@pytest.mark.parametrize(("columns", "topic", "message"), [
    (["key"], "t", "needs a 'value' column"),
    (["value", "offset"], "t", "does not know the column"),
    (["value"], None, "'topic' column or the option topic"),
])
def test_schemas_the_sink_cannot_write_fail_on_the_driver(columns: list[str], topic: str | None,
                                                           message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_columns(columns, topic)
