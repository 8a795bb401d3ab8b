"""One benchmark run of one client in one scenario; prints one JSON object on stdout.

    python benchmarks/_clients.py --client kafka-python --scenario S1 --bootstrap 127.0.0.1:9092 --topic t

``compare.py`` starts this script once per run, so each client runs in a fresh interpreter (no
warm caches from another client, and ``ru_maxrss`` is that client's own peak RSS). S1-S3 use
``txnproducer.perf.run_workload``, the same loop for every client, through a small adapter per
library. S4 is a consume-transform-produce loop: a read_committed kafka-python consumer in a
group feeds a transactional producer that commits the consumed offsets with each transaction.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a source tree
    sys.path.insert(0, str(ROOT))

from _aio_clients import AIO_CLIENTS, run_aio  # noqa: E402

from txnproducer.perf import (  # noqa: E402
    PerfResult,
    TxnClient,
    TxnProducerClient,
    peak_rss_bytes,
    producer_diagnostics,
    run_workload,
)

CLIENTS = ("txnproducer", "kafka-python", "confluent-kafka")
#: txnproducer on its pure-Python hot path (TXNPRODUCER_PURE_PYTHON=1 in the run's process; compare.py
#: sets it), for the README's table of both paths: ``--clients txnproducer,txnproducer-pure,...``.
PURE = "txnproducer-pure"
#: txnproducer with every request on kafka-python's connections, as before its own connections spoke TLS
#: and SASL (what a secured cluster got until issue 30): the same run can show the before and after
KAFKA_IO = "txnproducer-kafka-io"
OUR_CLIENTS = ("txnproducer", PURE, KAFKA_IO)

# records per transaction, default records per run, default time bound per run (seconds)
SCENARIOS: dict[str, dict[str, Any]] = {
    "S1": {"records_per_txn": 1000, "num_records": 200_000, "max_seconds": 20.0,
           "title": "1,000 records/txn: records/s"},
    "S2": {"records_per_txn": 1, "num_records": 3_000, "max_seconds": 15.0,
           "title": "1 record/txn: transactions/s"},
    "S3": {"records_per_txn": 10, "num_records": 5_000, "max_seconds": 15.0,
           "title": "10 records/txn: commit latency"},
    "S4": {"records_per_txn": None, "num_records": 50_000, "max_seconds": 30.0,
           "title": "consume-transform-produce: records/s"},
}
RECORD_SIZE = 100
LINGER_MS = 5
BLOCK_TIMEOUT_S = 60.0  # bound on every blocking client call


# the producer's security settings (``--security-config``, written by ``_secured.py``) in librdkafka's names
_LIBRDKAFKA_NAMES = {"security_protocol": "security.protocol", "ssl_cafile": "ssl.ca.location",
                     "ssl_certfile": "ssl.certificate.location", "ssl_keyfile": "ssl.key.location",
                     "sasl_mechanism": "sasl.mechanism", "sasl_plain_username": "sasl.username",
                     "sasl_plain_password": "sasl.password"}


class KafkaPythonClient:
    """kafka-python 3.0.12's transactional KafkaProducer (its defaults, linger 5 ms)."""

    name = "kafka-python"
    queue_full: tuple[type[BaseException], ...] = ()  # send() blocks (max_block_ms) instead

    def __init__(self, bootstrap: str, transactional_id: str, linger_ms: int = LINGER_MS,
                 batch_size: int | None = None, security: dict[str, str] | None = None) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=transactional_id, linger_ms=linger_ms,
            acks="all", max_block_ms=int(BLOCK_TIMEOUT_S * 1000),
            **({} if batch_size is None else {"batch_size": batch_size}), **(security or {}),
        )
        self.send = self.producer.send  # the library's call itself (perf.TxnClient)

    def init(self) -> None:
        self.producer.init_transactions()

    def prepare(self, topic: str) -> None:
        self.producer.partitions_for(topic)

    def begin(self) -> None:
        self.producer.begin_transaction()

    def on_queue_full(self) -> None:  # never called: queue_full is empty
        pass

    def commit(self) -> None:
        self.producer.commit_transaction()

    def abort(self) -> None:
        self.producer.abort_transaction()

    def send_offsets(self, offsets: dict[Any, int], consumer: Any) -> None:
        from kafka.structs import OffsetAndMetadata

        self.producer.send_offsets_to_transaction(
            {tp: OffsetAndMetadata(off, "", -1) for tp, off in offsets.items()}, consumer.group_metadata())

    def close(self) -> None:
        self.producer.close(timeout=BLOCK_TIMEOUT_S)


class ConfluentClient:
    """confluent-kafka's transactional Producer (librdkafka defaults, linger 5 ms)."""

    name = "confluent-kafka"

    def __init__(self, bootstrap: str, transactional_id: str, linger_ms: int = LINGER_MS,
                 batch_size: int | None = None, security: dict[str, str] | None = None) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({
            "bootstrap.servers": bootstrap, "transactional.id": transactional_id,
            "linger.ms": linger_ms, "acks": "all",
            **({} if batch_size is None else {"batch.size": batch_size}),
            **{_LIBRDKAFKA_NAMES[k]: v for k, v in (security or {}).items()},
        })
        self.send = self.producer.produce  # the library's call itself (perf.TxnClient)

    def init(self) -> None:
        self.producer.init_transactions(BLOCK_TIMEOUT_S)

    def prepare(self, topic: str) -> None:
        self.producer.list_topics(topic, BLOCK_TIMEOUT_S)  # fills librdkafka's metadata cache

    def begin(self) -> None:
        self.producer.begin_transaction()

    # local queue full: the loop serves delivery reports, then sends the record again
    queue_full: tuple[type[BaseException], ...] = (BufferError,)

    def on_queue_full(self) -> None:
        self.producer.poll(1.0)

    def commit(self) -> None:
        self.producer.commit_transaction(BLOCK_TIMEOUT_S)

    def abort(self) -> None:
        self.producer.abort_transaction(BLOCK_TIMEOUT_S)

    def send_offsets(self, offsets: dict[Any, int], consumer: Any) -> None:
        raise NotImplementedError("S4 with confluent-kafka is not part of the comparison")

    def close(self) -> None:
        self.producer.flush(BLOCK_TIMEOUT_S)


class OurClient(TxnProducerClient):
    """TxnProducerClient plus what the S4 loop and the failover stream need."""

    def abort(self) -> None:
        self.producer.abort_transaction()

    def send_offsets(self, offsets: dict[Any, int], consumer: Any) -> None:
        self.producer.send_offsets_to_transaction(offsets, consumer.group_metadata())


def make_client(name: str, bootstrap: str, transactional_id: str, batch_size: int | None = None,
                security: dict[str, str] | None = None) -> Any:
    """``batch_size``: the same batch size in bytes for every client (None: each client's default);
    ``security``: a secured listener's settings, in the producer's names (None: PLAINTEXT)."""
    if name in OUR_CLIENTS:
        if name == KAFKA_IO:
            from txnproducer._internal.network.client import NetworkClient

            NetworkClient.direct_io_enabled = False  # this process only: the switch the tests use
        return OurClient(bootstrap_servers=bootstrap, transactional_id=transactional_id, linger_ms=LINGER_MS,
                         max_block_ms=int(BLOCK_TIMEOUT_S * 1000),
                         **({} if batch_size is None else {"batch_size": batch_size}), **(security or {}))
    if name == "kafka-python":
        return KafkaPythonClient(bootstrap, transactional_id, batch_size=batch_size, security=security)
    if name == "confluent-kafka":
        return ConfluentClient(bootstrap, transactional_id, batch_size=batch_size, security=security)
    raise ValueError(f"unknown client {name!r}; one of {', '.join(CLIENTS)}")


# --- S4: consume-transform-produce ------------------------------------------------------------------------


def transform(value: bytes) -> bytes:
    """The 'business logic' of S4: cheap and the same for every client."""
    return value[::-1]


def _consumer(bootstrap: str, topic: str, group: str) -> Any:
    from kafka import KafkaConsumer

    return KafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, isolation_level="read_committed",
        enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=500,
    )


def run_ctp_loop(client: Any, bootstrap: str, input_topic: str, output_topic: str, num_records: int,
                 max_seconds: float) -> PerfResult:
    """Hand-written consume-transform-produce: poll, begin, send each, send offsets, commit."""
    consumer = _consumer(bootstrap, input_topic, f"bench-{uuid.uuid4().hex[:8]}")
    t0 = time.monotonic()
    client.init()
    init_s = time.monotonic() - t0
    latencies: list[float] = []
    done = transactions = 0
    start: float | None = None
    hard_deadline = time.monotonic() + max_seconds + BLOCK_TIMEOUT_S  # includes the group join
    try:
        while done < num_records and time.monotonic() < hard_deadline:
            polled = consumer.poll(timeout_ms=1000)
            if not polled:
                continue
            if start is None:
                start = time.monotonic()
            client.begin()
            offsets = {}
            for tp, records in polled.items():
                for record in records:
                    client.send(output_topic, transform(record.value))
                offsets[tp] = records[-1].offset + 1
                done += len(records)
            client.send_offsets(offsets, consumer)
            commit_start = time.monotonic()
            client.commit()
            latencies.append((time.monotonic() - commit_start) * 1000.0)
            transactions += 1
            if time.monotonic() - start > max_seconds:
                break
        elapsed = time.monotonic() - start if start is not None else 0.0
    finally:
        consumer.close()
    return PerfResult(client=client.name, records=done, transactions=transactions, record_size=RECORD_SIZE,
                      elapsed_s=elapsed, commit_latencies_ms=latencies, peak_rss_bytes=peak_rss_bytes(),
                      init_s=init_s, extra={"loop": "hand-written"})


def run_eos_processor(bootstrap: str, input_topic: str, output_topic: str, num_records: int,
                      max_seconds: float) -> PerfResult:
    """Ours: ``txnproducer.eos.TransactionalProcessor`` (raises ImportError while it does not exist).

    Timed like the hand-written loop: from the first poll that returned records to the last commit;
    commit latency is ``commit_transaction()`` alone (a wrapper around the processor's producer).
    """
    import threading

    from txnproducer import TransactionalProducer
    from txnproducer.eos import OutputRecord, TransactionalProcessor

    latencies: list[float] = []
    first_data: list[float] = []
    stop = threading.Event()

    class TimedProducer(TransactionalProducer):
        def commit_transaction(self, timeout: float | None = None) -> None:
            t = time.monotonic()
            super().commit_transaction(timeout)
            latencies.append((time.monotonic() - t) * 1000.0)

    def consumer_factory(**settings: Any) -> Any:
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(**settings)
        poll = consumer.poll

        def timed_poll(*args: Any, **kwargs: Any) -> Any:
            out = poll(*args, **kwargs)
            if out and not first_data:
                first_data.append(time.monotonic())
            return out

        consumer.poll = timed_poll
        return consumer

    processor: Any = None

    def on_commit(_offsets: Any) -> None:
        if processor.metrics()["records_in"] >= num_records or (
                first_data and time.monotonic() - first_data[0] > max_seconds):
            stop.set()

    processor = TransactionalProcessor(
        input_topic,
        consumer_config={"bootstrap_servers": bootstrap, "group_id": f"bench-{uuid.uuid4().hex[:8]}",
                         "max_poll_records": 500},
        producer_config={"bootstrap_servers": bootstrap, "linger_ms": LINGER_MS,
                         "max_block_ms": int(BLOCK_TIMEOUT_S * 1000)},
        transactional_id=f"bench-eos-{uuid.uuid4().hex[:8]}",
        transform_batch=lambda records: [OutputRecord(output_topic, transform(r.value)) for r in records],
        max_records_per_txn=500,
        on_commit=on_commit,
        consumer_factory=consumer_factory,
        producer_factory=lambda config: TimedProducer(config),
    )
    timer = threading.Timer(max_seconds + BLOCK_TIMEOUT_S, stop.set)  # bound incl. the group join
    timer.start()
    t0 = time.monotonic()
    try:
        processor.start()
        init_s = time.monotonic() - t0
        processor.run(stop_event=stop)
        end = time.monotonic()
        metrics = processor.metrics()
    finally:
        timer.cancel()
        processor.stop()
    elapsed = end - first_data[0] if first_data else 0.0
    return PerfResult(client="txnproducer", records=metrics["records_in"],
                      transactions=metrics["transactions_committed"], record_size=RECORD_SIZE,
                      elapsed_s=elapsed, commit_latencies_ms=latencies, peak_rss_bytes=peak_rss_bytes(),
                      init_s=init_s, extra={"loop": "txnproducer.eos.TransactionalProcessor"})


# --- entry point -------------------------------------------------------------------------------------------


def run_one(client_name: str, scenario: str, bootstrap: str, topic: str, num_records: int | None,
            max_seconds: float | None, input_topic: str | None = None,
            batch_size: int | None = None, security: dict[str, str] | None = None) -> dict[str, Any]:
    """``batch_size`` (S1-S3, the sync clients): the same batch size for every client; ``security``
    (S1-S3, the sync clients): a secured listener's settings."""
    spec = SCENARIOS[scenario]
    if batch_size is not None and (client_name in AIO_CLIENTS or scenario == "S4"):
        raise ValueError("--batch-size is for the sync clients' S1-S3")
    if security and (client_name in AIO_CLIENTS or scenario == "S4"):
        raise ValueError("--security-config is for the sync clients' S1-S3")
    n = num_records or spec["num_records"]
    bound = max_seconds or spec["max_seconds"]
    txn_id = f"bench-{client_name}-{scenario}-{uuid.uuid4().hex[:8]}"
    if client_name in AIO_CLIENTS:
        if scenario == "S4":
            return {"client": client_name, "scenario": scenario,
                    "skipped": "S4 compares the sync consume-transform-produce loops"}
        result = run_aio(client_name, bootstrap, txn_id, topic, n, RECORD_SIZE, spec["records_per_txn"],
                         bound)
    elif scenario == "S4":
        if input_topic is None:
            raise ValueError("S4 needs --input-topic (filled with records beforehand)")
        if client_name in OUR_CLIENTS:
            try:
                result = run_eos_processor(bootstrap, input_topic, topic, n, bound)
            except ImportError:
                return {"client": client_name, "scenario": scenario,
                        "skipped": "txnproducer.eos is not there yet"}
        elif client_name == "kafka-python":
            client = make_client(client_name, bootstrap, txn_id)
            try:
                result = run_ctp_loop(client, bootstrap, input_topic, topic, n, bound)
            finally:
                client.close()
        else:
            return {"client": client_name, "scenario": scenario,
                    "skipped": "S4 compares ours with kafka-python"}
    else:
        client = make_client(client_name, bootstrap, txn_id, batch_size, security)
        try:
            result = run_workload(client, topic, n, RECORD_SIZE, records_per_txn=spec["records_per_txn"],
                                  max_seconds=bound)
            if isinstance(client, OurClient):
                result.extra.update(producer_diagnostics(client.producer))
        finally:
            client.close()
        result.peak_rss_bytes = peak_rss_bytes()  # after close: includes everything the client held
    out = result.to_dict()
    out["client"] = client_name
    out["scenario"] = scenario
    if hasattr(os, "sched_getaffinity"):  # where it ran: compare.py --client-cpus pins it
        out["cpus"] = sorted(os.sched_getaffinity(0))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--client", required=True, choices=(*CLIENTS, PURE, KAFKA_IO, *AIO_CLIENTS))
    parser.add_argument("--scenario", required=True, choices=tuple(SCENARIOS))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True, help="topic written (S4: the output topic)")
    parser.add_argument("--input-topic", help="S4: topic read (already filled)")
    parser.add_argument("--num-records", type=int, default=None)
    parser.add_argument("--max-seconds", type=float, default=None)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="batch size in bytes (default: the client's own default)")
    parser.add_argument("--security-config", default=None,
                        help="JSON file of a secured listener's settings (benchmarks/_secured.py)")
    args = parser.parse_args(argv)
    security = None
    if args.security_config:
        security = json.loads(Path(args.security_config).read_text())
    result = run_one(args.client, args.scenario, args.bootstrap, args.topic, args.num_records,
                     args.max_seconds, args.input_topic, args.batch_size, security)
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


__all__ = ["AIO_CLIENTS", "CLIENTS", "KAFKA_IO", "PURE", "SCENARIOS", "TxnClient", "main", "make_client",
           "run_one"]

if __name__ == "__main__":
    sys.exit(main())
