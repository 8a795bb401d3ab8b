"""The names of everything txnproducer's telemetry emits: spans, attributes, events, metrics.

Why one module: dashboards, alerts and tests query these names, so they are spelled once. Two kinds:

* the OpenTelemetry messaging semantic conventions (semconv 1.27+, as opentelemetry-python's
  ``opentelemetry-semantic-conventions`` 0.66b spells them: ``messaging.system``,
  ``messaging.destination.name``, ...). They do not describe transactions;
* extensions for what they do not cover (the transaction, its identity and outcome, the coordinator
  requests), all under the ``txnproducer.`` prefix so that no one mistakes them for conventions and a
  future convention cannot collide with them.

Metric names mirror ``producer.metrics()`` (the Java client's ``txn-*-time-ns-total`` family) under
``kafka.producer.``, the prefix OpenTelemetry's Java agent gives the Java client's metrics.

Nothing here imports OpenTelemetry: the constants are usable without the ``[otel]`` extra.
"""

from __future__ import annotations

from typing import Final

# -- instrumentation scope
SCOPE: Final = "txnproducer"

# -- semantic conventions (messaging, Kafka, general)
MESSAGING_SYSTEM: Final = "messaging.system"
MESSAGING_SYSTEM_KAFKA: Final = "kafka"
MESSAGING_OPERATION_NAME: Final = "messaging.operation.name"
MESSAGING_OPERATION_TYPE: Final = "messaging.operation.type"
MESSAGING_DESTINATION_NAME: Final = "messaging.destination.name"
MESSAGING_DESTINATION_PARTITION_ID: Final = "messaging.destination.partition.id"
MESSAGING_CLIENT_ID: Final = "messaging.client.id"
MESSAGING_BATCH_MESSAGE_COUNT: Final = "messaging.batch.message_count"
MESSAGING_CONSUMER_GROUP_NAME: Final = "messaging.consumer.group.name"
MESSAGING_KAFKA_MESSAGE_KEY: Final = "messaging.kafka.message.key"
MESSAGING_KAFKA_OFFSET: Final = "messaging.kafka.offset"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
ERROR_TYPE: Final = "error.type"
EXCEPTION_MESSAGE: Final = "exception.message"

# messaging.operation.type values
OPERATION_SEND: Final = "send"
OPERATION_PROCESS: Final = "process"

# -- W3C trace context in record headers
TRACEPARENT: Final = "traceparent"
TRACESTATE: Final = "tracestate"

# -- extensions: the transaction
TRANSACTIONAL_ID: Final = "txnproducer.transactional_id"
PRODUCER_ID: Final = "txnproducer.producer_id"
PRODUCER_EPOCH: Final = "txnproducer.producer_epoch"
TRANSACTION_VERSION: Final = "txnproducer.transaction_version"
RECORD_COUNT: Final = "txnproducer.record_count"
OUTCOME: Final = "txnproducer.outcome"
ABORT_REASON: Final = "txnproducer.abort_reason"
# a coordinator request (EndTxn, TxnOffsetCommit, ...) and its attempt number (1: first send)
REQUEST: Final = "txnproducer.request"
ATTEMPT: Final = "txnproducer.attempt"
ATTEMPTS: Final = "txnproducer.attempts"
BROKER_ID: Final = "txnproducer.broker_id"
OFFSET_PARTITION_COUNT: Final = "txnproducer.offsets.partition_count"
PREPARED_PRODUCER_ID: Final = "txnproducer.prepared.producer_id"
PREPARED_EPOCH: Final = "txnproducer.prepared.producer_epoch"
COMMIT: Final = "txnproducer.commit"
# how many input records a transaction consumed (TransactionalProcessor)
INPUT_RECORD_COUNT: Final = "txnproducer.input_record_count"
# the PySpark sink
SPARK_BATCH_ID: Final = "txnproducer.spark.batch_id"
SPARK_QUERY_ID: Final = "txnproducer.spark.query_id"
SPARK_PARTITION_ID: Final = "txnproducer.spark.partition_id"
SPARK_ATTEMPT: Final = "txnproducer.spark.attempt"
SPARK_PREFIX: Final = "txnproducer.spark.prefix"
SPARK_DECISION: Final = "txnproducer.spark.decision"
SPARK_TRANSACTION_COUNT: Final = "txnproducer.spark.transaction_count"
SPARK_FENCED_COUNT: Final = "txnproducer.spark.fenced_count"
SPARK_SUPERSEDED: Final = "txnproducer.spark.superseded"

# txnproducer.outcome values
OUTCOME_COMMITTED: Final = "committed"
OUTCOME_ABORTED: Final = "aborted"
OUTCOME_FENCED: Final = "fenced"
OUTCOME_FAILED: Final = "failed"
OUTCOME_PREPARED: Final = "prepared"
OUTCOME_ABANDONED: Final = "abandoned"

# txnproducer.abort_reason values besides an error type
ABORT_BY_APPLICATION: Final = "application"
ABORT_ON_CLOSE: Final = "close"

# -- span names
SPAN_TRANSACTION: Final = "transaction"
SPAN_INIT: Final = "init_transactions"
SPAN_SEND_OFFSETS: Final = "send_offsets_to_transaction"
SPAN_COMMIT: Final = "commit_transaction"
SPAN_ABORT: Final = "abort_transaction"
SPAN_COMPLETE: Final = "complete_transaction"
SPAN_SPARK_TASK: Final = "txnkafka task"
SPAN_SPARK_BATCH: Final = "txnkafka commit"
SPAN_SPARK_RECOVER: Final = "txnkafka recover"
SPAN_SPARK_FENCE: Final = "txnkafka fence"


def send_span_name(topic: str) -> str:
    """``send {topic}``: the conventions' ``{operation} {destination}``."""
    return f"send {topic}"


def process_span_name(topic: str) -> str:
    """``process {topic}``: a consumer's (or TransactionalProcessor's) work on an input record."""
    return f"process {topic}"


# -- events
EVENT_RETRY: Final = "retry"
EVENT_ABORTABLE_ERROR: Final = "abortable_error"
EVENT_PREPARED: Final = "prepared"
EVENT_BATCH_RETRY: Final = "retry"

# -- metrics
METRIC_PREFIX: Final = "kafka.producer."
METRIC_TRANSACTIONS: Final = "txnproducer.transactions"
METRIC_TRANSACTION_DURATION: Final = "txnproducer.transaction.duration"
METRIC_OPERATION_DURATION: Final = "txnproducer.operation.duration"
OPERATION: Final = "txnproducer.operation"
METRIC_BUFFER_AVAILABLE: Final = "kafka.producer.buffer_available_bytes"
METRIC_BUFFER_TOTAL: Final = "kafka.producer.buffer_total_bytes"
