"""The read-side scenarios of ``compare.py``: S4 consume-transform-produce and S5 read-only read_committed.

Why a module apart from ``_clients.py`` (S1-S3, the producers): these runs read, and each reading client
is its own loop. One run is one client in its own process (``_clients.py`` starts it); it prints the same
JSON keys as the producer runs (``records`` = inputs read, ``records_per_s``, ``cpu_us_per_record`` =
CPU of the whole process per input, all threads, ``resource.getrusage``), timed from the first poll that
returned records to the last commit (S4) or the last record (S5); imports, connections, the group join
and ``init_transactions`` are not timed, as for every client.

S4 (issue 28): read every committed record of the input topic from the beginning in a fresh consumer
group, transform each value with ``value.upper()``, write the results to the output topic and commit the
consumed offsets with them, one transaction per poll of at most 1,000 inputs, with the consumer's group
metadata (KIP-447 fencing):

- ``txnproducer``: ``TransactionalProcessor`` (``transform_batch``, ``max_records_per_txn=1000``);
- ``txnproducer-loop``: the producer guide's own loop on ``TransactionalConsumer.poll_batch`` +
  ``TransactionalProducer``;
- ``confluent-kafka``: ``Consumer.consume(1000)`` + a transactional ``Producer`` +
  ``send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer_group_metadata())``,
  as confluent-kafka's exactly-once example does;
- ``kafka-python``: ``KafkaConsumer.poll(max_records=1000)`` + its transactional ``KafkaProducer``;
- ``java``: ``KafkaConsumer.poll`` (``max.poll.records=1000``) + ``KafkaProducer.sendOffsetsToTransaction``
  (``java/PipelineBench.java``).

S5: read every committed record of a topic whose every tenth transaction was aborted, from the beginning,
with ``read_committed``: ``txnproducer`` through ``poll_batch`` (the batch API), ``txnproducer-poll``
through ``poll`` (a ``ConsumerRecord`` per record), kafka-python's ``KafkaConsumer.poll``,
confluent-kafka's ``consume(1000)``, the Java ``KafkaConsumer.poll`` (``max.poll.records`` 10,000 for
every client that has it).
"""

from __future__ import annotations

import resource
import threading
import time
import uuid
from typing import Any

from txnproducer.perf import PerfResult, peak_rss_bytes

__all__ = ["PIPELINE_CLIENTS", "READ_CLIENTS", "UPPER", "run_pipeline", "run_read", "write_input"]

PIPELINE_CLIENTS = (
    "txnproducer",
    "txnproducer-records",
    "txnproducer-loop",
    "confluent-kafka",
    "kafka-python",
)
READ_CLIENTS = ("txnproducer", "txnproducer-poll", "kafka-python", "confluent-kafka")
PER_TXN = 1000
LINGER_MS = 5
BLOCK_S = 60.0
READ_MAX_POLL_RECORDS = 10_000


def UPPER(value: bytes) -> bytes:
    return value.upper()


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def write_input(
    bootstrap: str, topic: str, partitions: int, records: int, record_size: int, abort_every: int = 0
) -> int:
    """Write the input with our producer in 1,000-record transactions (round robin over the partitions);
    ``abort_every`` N: every Nth transaction is aborted (S5: readers filter it). Returns the committed
    records."""
    from txnproducer import TransactionalProducer

    value = b"x" * record_size
    committed = written = txn = 0
    with TransactionalProducer(
        bootstrap_servers=bootstrap,
        transactional_id=f"bench-input-{uuid.uuid4()}",
        linger_ms=5,
        max_block_ms=int(BLOCK_S * 1000),
    ) as producer:
        producer.init_transactions()
        while committed < records:
            abort = abort_every > 0 and txn % abort_every == abort_every - 1
            n = PER_TXN if abort else min(PER_TXN, records - committed)
            producer.begin_transaction()
            for i in range(n):
                producer.send(topic, value, partition=(written + i) % partitions)
            written += n
            if abort:
                producer.abort_transaction()
            else:
                producer.commit_transaction()
                committed += n
            txn += 1
    return committed


class _Clock:
    """From the first poll that returned records: wall time and the process's CPU."""

    def __init__(self) -> None:
        self.start: float | None = None
        self.cpu_start = 0.0

    def first_records(self) -> None:
        if self.start is None:
            self.start = time.perf_counter()
            self.cpu_start = _cpu_s()

    def result(
        self,
        client: str,
        records: int,
        transactions: int,
        latencies: list[float],
        init_s: float,
        record_size: int,
        **extra: Any,
    ) -> PerfResult:
        end, cpu = time.perf_counter(), _cpu_s()
        elapsed = end - self.start if self.start is not None else 0.0
        result = PerfResult(
            client=client,
            records=records,
            transactions=transactions,
            record_size=record_size,
            elapsed_s=elapsed,
            commit_latencies_ms=latencies,
            peak_rss_bytes=peak_rss_bytes(),
            init_s=init_s,
            extra=dict(extra),
        )
        result.cpu_s = cpu - self.cpu_start if self.start is not None else 0.0
        return result


# --- S4: consume-transform-produce ----------------------------------------------------------------------


def run_pipeline(
    client: str,
    bootstrap: str,
    input_topic: str,
    output_topic: str,
    num_records: int,
    max_seconds: float,
    record_size: int,
) -> PerfResult:
    """One S4 run of ``client``: ``num_records`` inputs processed and committed (or ``max_seconds``)."""
    group = f"bench-s4-{client}-{uuid.uuid4().hex[:8]}"
    txn_id = f"bench-s4-{client}-{uuid.uuid4().hex[:8]}"
    if client in ("txnproducer", "txnproducer-records"):
        return _processor(
            bootstrap,
            input_topic,
            output_topic,
            num_records,
            max_seconds,
            record_size,
            group,
            columns=client == "txnproducer",
        )
    if client == "txnproducer-loop":
        return _our_loop(
            bootstrap, input_topic, output_topic, num_records, max_seconds, record_size, group, txn_id
        )
    if client == "confluent-kafka":
        return _confluent_loop(
            bootstrap, input_topic, output_topic, num_records, max_seconds, record_size, group, txn_id
        )
    if client == "kafka-python":
        return _kafka_python_loop(
            bootstrap, input_topic, output_topic, num_records, max_seconds, record_size, group, txn_id
        )
    raise ValueError(f"S4 has no client {client!r}; one of {', '.join(PIPELINE_CLIENTS)}")


def _processor(
    bootstrap: str,
    input_topic: str,
    output_topic: str,
    num_records: int,
    max_seconds: float,
    record_size: int,
    group: str,
    columns: bool,
) -> PerfResult:
    """``TransactionalProcessor``: with ``transform_columns`` (``columns``: a PartitionBatch in, an
    OutputBatch out) or ``transform_batch`` (ConsumerRecords in, an OutputRecord per record out)."""
    from txnproducer import TransactionalConsumer, TransactionalProducer
    from txnproducer.eos import OutputBatch, OutputRecord, TransactionalProcessor

    clock = _Clock()
    latencies: list[float] = []
    stop = threading.Event()

    class TimedProducer(TransactionalProducer):
        def commit_transaction(self, timeout: float | None = None) -> None:
            t = time.perf_counter()
            super().commit_transaction(timeout)
            latencies.append((time.perf_counter() - t) * 1000.0)

    class TimedConsumer(TransactionalConsumer):
        def poll_by_partition(self, timeout: float = 0.0, max_records: int | None = None) -> Any:
            out = super().poll_by_partition(timeout, max_records)
            if out:
                clock.first_records()
            return out

        def poll_batch(self, timeout: float = 0.0, max_records: int | None = None) -> Any:
            out = super().poll_batch(timeout, max_records)
            if out:
                clock.first_records()
            return out

    processor: Any = None

    def on_commit(_offsets: Any) -> None:
        if processor.metrics()["records_in"] >= num_records or (
            clock.start is not None and time.perf_counter() - clock.start > max_seconds
        ):
            stop.set()

    def transform(records: list[Any]) -> list[Any]:
        return [OutputRecord(output_topic, r.value.upper()) for r in records]

    def transform_columns(batch: Any) -> Any:
        return OutputBatch(output_topic, [v.upper() for v in batch.values])

    processor = TransactionalProcessor(
        input_topic,
        consumer_config={"bootstrap_servers": bootstrap, "group_id": group},
        producer_config={
            "bootstrap_servers": bootstrap,
            "linger_ms": LINGER_MS,
            "max_block_ms": int(BLOCK_S * 1000),
        },
        instance_name="bench",
        **({"transform_columns": transform_columns} if columns else {"transform_batch": transform}),
        max_records_per_txn=PER_TXN,
        on_commit=on_commit,
        consumer_factory=TimedConsumer,
        producer_factory=TimedProducer,
    )
    timer = threading.Timer(max_seconds + BLOCK_S, stop.set)  # bound incl. the group join
    timer.start()
    t0 = time.monotonic()
    try:
        processor.start()
        init_s = time.monotonic() - t0
        processor.run(stop_event=stop)
        metrics = processor.metrics()
        result = clock.result(
            "txnproducer" if columns else "txnproducer-records",
            metrics["records_in"],
            metrics["transactions_committed"],
            latencies,
            init_s,
            record_size,
            loop="TransactionalProcessor(transform_columns=...)"
            if columns
            else "TransactionalProcessor(transform_batch=...)",
        )
    finally:
        timer.cancel()
        processor.stop(leave_group=True)
    return result


def _our_loop(
    bootstrap: str,
    input_topic: str,
    output_topic: str,
    num_records: int,
    max_seconds: float,
    record_size: int,
    group: str,
    txn_id: str,
) -> PerfResult:
    """The producer guide's loop ("Your own loop"), with the clock and the bounds of a benchmark."""
    from txnproducer import AbortableError, TopicPartition, TransactionalConsumer, TransactionalProducer

    consumer = TransactionalConsumer(
        bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest"
    )
    producer = TransactionalProducer(
        bootstrap_servers=bootstrap,
        transactional_id=txn_id,
        linger_ms=LINGER_MS,
        max_block_ms=int(BLOCK_S * 1000),
    )
    clock = _Clock()
    latencies: list[float] = []
    done = transactions = 0
    try:
        t0 = time.monotonic()
        producer.init_transactions()
        consumer.subscribe([input_topic])
        init_s = time.monotonic() - t0
        hard_deadline = time.monotonic() + max_seconds + BLOCK_S
        send, position = producer.send, consumer.position
        while done < num_records and time.monotonic() < hard_deadline:
            batches = consumer.poll_batch(timeout=1.0, max_records=PER_TXN)
            if not batches:
                continue
            clock.first_records()
            producer.begin_transaction()
            try:
                for batch in batches:
                    for value in batch.values:
                        send(output_topic, value.upper())
                polled = {TopicPartition(b.topic, b.partition) for b in batches}
                producer.send_offsets_to_transaction(
                    {tp: position(tp) for tp in polled}, consumer.group_metadata()
                )
                t = time.perf_counter()
                producer.commit_transaction()
                latencies.append((time.perf_counter() - t) * 1000.0)
            except AbortableError:
                producer.abort_transaction()
                consumer.seek_to_committed()
                continue
            done += sum(len(b) for b in batches)
            transactions += 1
            if clock.start is not None and time.perf_counter() - clock.start > max_seconds:
                break
        return clock.result(
            "txnproducer-loop",
            done,
            transactions,
            latencies,
            init_s,
            record_size,
            loop="TransactionalConsumer.poll_batch + TransactionalProducer",
        )
    finally:
        consumer.close(10, leave_group=True)
        producer.close(10)


def _confluent_loop(
    bootstrap: str,
    input_topic: str,
    output_topic: str,
    num_records: int,
    max_seconds: float,
    record_size: int,
    group: str,
    txn_id: str,
) -> PerfResult:
    from confluent_kafka import Consumer, KafkaException, Producer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": LINGER_MS, "acks": "all"}
    )
    clock = _Clock()
    latencies: list[float] = []
    done = transactions = 0
    try:
        t0 = time.monotonic()
        producer.init_transactions(BLOCK_S)
        consumer.subscribe([input_topic])
        init_s = time.monotonic() - t0
        hard_deadline = time.monotonic() + max_seconds + BLOCK_S
        produce = producer.produce
        while done < num_records and time.monotonic() < hard_deadline:
            messages = consumer.consume(PER_TXN, 1.0)
            if not messages:
                continue
            clock.first_records()
            producer.begin_transaction()
            count = 0
            try:
                for message in messages:
                    if message.error() is not None:
                        continue
                    count += 1
                    while True:
                        try:
                            produce(output_topic, message.value().upper())
                            break
                        except BufferError:  # local queue full: serve delivery reports, then again
                            producer.poll(0.1)
                producer.send_offsets_to_transaction(
                    consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), BLOCK_S
                )
                t = time.perf_counter()
                producer.commit_transaction(BLOCK_S)
                latencies.append((time.perf_counter() - t) * 1000.0)
            except KafkaException:
                producer.abort_transaction(BLOCK_S)
                raise
            done += count
            transactions += 1
            if clock.start is not None and time.perf_counter() - clock.start > max_seconds:
                break
        return clock.result(
            "confluent-kafka",
            done,
            transactions,
            latencies,
            init_s,
            record_size,
            loop="Consumer.consume(1000) + transactional Producer",
        )
    finally:
        consumer.close()
        producer.flush(10)


def _kafka_python_loop(
    bootstrap: str,
    input_topic: str,
    output_topic: str,
    num_records: int,
    max_seconds: float,
    record_size: int,
    group: str,
    txn_id: str,
) -> PerfResult:
    from kafka import KafkaConsumer, KafkaProducer

    consumer = KafkaConsumer(
        input_topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=PER_TXN,
    )
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        transactional_id=txn_id,
        linger_ms=LINGER_MS,
        acks="all",
        max_block_ms=int(BLOCK_S * 1000),
    )
    clock = _Clock()
    latencies: list[float] = []
    done = transactions = 0
    try:
        t0 = time.monotonic()
        producer.init_transactions()
        init_s = time.monotonic() - t0
        hard_deadline = time.monotonic() + max_seconds + BLOCK_S
        from kafka.structs import OffsetAndMetadata

        while done < num_records and time.monotonic() < hard_deadline:
            polled = consumer.poll(timeout_ms=1000)
            if not polled:
                continue
            clock.first_records()
            producer.begin_transaction()
            offsets = {}
            for tp, records in polled.items():
                for record in records:
                    producer.send(output_topic, record.value.upper())
                offsets[tp] = OffsetAndMetadata(consumer.position(tp), "", -1)
                done += len(records)
            producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
            t = time.perf_counter()
            producer.commit_transaction()
            latencies.append((time.perf_counter() - t) * 1000.0)
            transactions += 1
            if clock.start is not None and time.perf_counter() - clock.start > max_seconds:
                break
        return clock.result(
            "kafka-python",
            done,
            transactions,
            latencies,
            init_s,
            record_size,
            loop="KafkaConsumer.poll + transactional KafkaProducer",
        )
    finally:
        consumer.close(autocommit=False)
        producer.close(timeout=10)


# --- S5: read-only read_committed -------------------------------------------------------------------------


def run_read(
    client: str,
    bootstrap: str,
    topic: str,
    partitions: int,
    expected: int,
    max_seconds: float,
    record_size: int,
) -> PerfResult:
    """Read the ``expected`` committed records of ``topic`` from the beginning (or ``max_seconds``)."""
    clock = _Clock()
    count = 0
    t0 = time.monotonic()
    hard_deadline = time.monotonic() + max_seconds + BLOCK_S
    if client in ("txnproducer", "txnproducer-poll"):
        from txnproducer import TopicPartition, TransactionalConsumer

        consumer = TransactionalConsumer(
            bootstrap_servers=bootstrap, auto_offset_reset="earliest", max_poll_records=READ_MAX_POLL_RECORDS
        )
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        init_s = time.monotonic() - t0
        try:
            if client == "txnproducer":
                while count < expected and time.monotonic() < hard_deadline:
                    batches = consumer.poll_batch(1.0)
                    if batches:
                        clock.first_records()
                        for batch in batches:
                            count += len(batch)
            else:
                while count < expected and time.monotonic() < hard_deadline:
                    records = consumer.poll(1.0)
                    if records:
                        clock.first_records()
                        count += len(records)
            return clock.result(
                client,
                count,
                0,
                [],
                init_s,
                record_size,
                api="poll_batch" if client == "txnproducer" else "poll",
            )
        finally:
            consumer.close(5)
    if client == "kafka-python":
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KafkaTopicPartition

        kconsumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=READ_MAX_POLL_RECORDS,
        )
        kconsumer.assign([KafkaTopicPartition(topic, p) for p in range(partitions)])
        init_s = time.monotonic() - t0
        try:
            while count < expected and time.monotonic() < hard_deadline:
                polled = kconsumer.poll(timeout_ms=1000)
                if polled:
                    clock.first_records()
                    for records in polled.values():
                        count += len(records)
            return clock.result(client, count, 0, [], init_s, record_size, api="KafkaConsumer.poll")
        finally:
            kconsumer.close()
    if client == "confluent-kafka":
        from confluent_kafka import Consumer
        from confluent_kafka import TopicPartition as ConfluentTopicPartition

        cconsumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-{uuid.uuid4()}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        cconsumer.assign([ConfluentTopicPartition(topic, p, -2) for p in range(partitions)])
        init_s = time.monotonic() - t0
        try:
            while count < expected and time.monotonic() < hard_deadline:
                messages = cconsumer.consume(1000, 1.0)
                if messages:
                    clock.first_records()
                    for message in messages:
                        if message.error() is None:
                            count += 1
            return clock.result(client, count, 0, [], init_s, record_size, api="Consumer.consume(1000)")
        finally:
            cconsumer.close()
    raise ValueError(f"S5 has no client {client!r}; one of {', '.join(READ_CLIENTS)}")
