"""One benchmark run of one client in one scenario; prints one JSON object on stdout.

    python benchmarks/_clients.py --client kafka-python --scenario S1 --bootstrap 127.0.0.1:9092 --topic t

``compare.py`` starts this script once per run, so each client runs in a fresh interpreter (no
warm caches from another client, and ``ru_maxrss`` is that client's own peak RSS). S1-S3 use
``txnproducer.perf.run_workload``, the same loop for every client, through a small adapter per
library. S4 (consume-transform-produce) and S5 (read-only read_committed) are each reading client's
own loop: ``_pipelines.py``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a source tree: after PYTHONPATH's entries, so that
    # compare.py --tree (PYTHONPATH=another tree) runs that tree's txnproducer with this harness
    sys.path.insert(1 + len([p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]), str(ROOT))

import _pipelines  # noqa: E402
from _aio_clients import AIO_CLIENTS, run_aio  # noqa: E402
from _pipelines import PIPELINE_CLIENTS, READ_CLIENTS, run_pipeline, run_read  # noqa: E402

import txnproducer  # noqa: E402
from txnproducer.perf import (  # noqa: E402
    TxnClient,
    TxnProducerClient,
    peak_rss_bytes,
    producer_diagnostics,
    run_workload,
)

CLIENTS = ("txnproducer", "kafka-python", "confluent-kafka")
#: txnproducer on its pure-Python hot path (TXNPRODUCER_PURE_PYTHON=1 in the run's process; compare.py
#: sets it), for docs/performance.md's table of both paths: ``--clients txnproducer,txnproducer-pure,...``.
PURE = "txnproducer-pure"
#: txnproducer with every request on kafka-python's connections, as before its own connections spoke TLS
#: and SASL (what a secured cluster got until issue 30): the same run can show the before and after
KAFKA_IO = "txnproducer-kafka-io"
OUR_CLIENTS = ("txnproducer", PURE, KAFKA_IO)
#: our other ways through S4 and S5 (``_pipelines.py``): the processor with a record transform, the
#: the producer guide's own loop, and the per-record poll()
READ_SIDE_CLIENTS = ("txnproducer-records", "txnproducer-loop", "txnproducer-poll")
#: inputs of S4 and S5: partitions of the input topic
READ_PARTITIONS = 6

# records per transaction, default records per run, default time bound per run (seconds)
SCENARIOS: dict[str, dict[str, Any]] = {
    "S1": {"records_per_txn": 1000, "num_records": 200_000, "max_seconds": 20.0,
           "title": "1,000 records/txn: records/s"},
    "S2": {"records_per_txn": 1, "num_records": 3_000, "max_seconds": 15.0,
           "title": "1 record/txn: transactions/s"},
    "S3": {"records_per_txn": 10, "num_records": 5_000, "max_seconds": 15.0,
           "title": "10 records/txn: commit latency"},
    # ten records over six partitions, each to partition i % 6 (the partition argument of send):
    # a transaction of six batches and six partitions for the coordinator, as an order and its
    # items spread by key would be
    "S6": {"records_per_txn": 10, "num_records": 5_000, "max_seconds": 15.0, "spread": 6,
           "title": "10 records over 6 partitions/txn"},
    "S4": {"records_per_txn": 1000, "num_records": 200_000, "max_seconds": 60.0,
           "title": "consume-transform-produce: inputs/s"},
    "S5": {"records_per_txn": None, "num_records": 200_000, "max_seconds": 60.0,
           "title": "read-only read_committed: records/s"},
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

    def close(self) -> None:
        self.producer.flush(BLOCK_TIMEOUT_S)


class OurClient(TxnProducerClient):
    """TxnProducerClient plus what the failover stream needs."""

    def abort(self) -> None:
        self.producer.abort_transaction()


#: txnproducer-pure runs our default client of S4/S5 on the pure-Python path
PURE_AS_OURS = {PURE: "txnproducer"}


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


class Initialized:
    """A client whose ``init()`` (and ``prepare()``) ran already: ``run_workload`` calls them on every
    run, and a warm-up run comes before the measured one on the same producer. ``spread`` sends each
    record of a transaction to the next of that many partitions (S6); None leaves the choice to the
    client's partitioner. The other calls are the client's own bound methods."""

    def __init__(self, client: Any, spread: int | None = None) -> None:
        self.name = client.name
        self.queue_full = client.queue_full
        self.on_queue_full = client.on_queue_full
        self.begin = client.begin
        self.commit = client.commit
        self.close = client.close
        if spread is None:
            self.send = client.send
        else:  # every library's send takes partition= (ours, kafka-python's send, librdkafka's produce)
            send, begin = client.send, client.begin
            cycle = [itertools.cycle(range(spread)).__next__]

            def begin_spread() -> None:  # record i of each transaction to partition i % spread
                cycle[0] = itertools.cycle(range(spread)).__next__
                begin()

            self.begin = begin_spread
            self.send = lambda topic, value: send(topic, value, partition=cycle[0]())

    def init(self) -> None:
        pass

    def prepare(self, topic: str) -> None:
        pass


def run_warmed(client: Any, topic: str, num_records: int, records_per_txn: int, max_seconds: float,
               warmup_transactions: int, spread: int | None) -> Any:
    """``run_workload`` after ``warmup_transactions`` untimed transactions of the same shape on the same
    producer (what the JVM needs to compile its hot paths: about 6,000; the Python clients have no JIT,
    but run the same warm-up so every client is measured in the same state)."""
    client.init()
    client.prepare(topic)
    ready = Initialized(client, spread)
    if warmup_transactions > 0:
        run_workload(ready, topic, warmup_transactions * records_per_txn, RECORD_SIZE,
                     records_per_txn=records_per_txn)
    return run_workload(ready, topic, num_records, RECORD_SIZE, records_per_txn=records_per_txn,
                        max_seconds=max_seconds)


# --- entry point -------------------------------------------------------------------------------------------


def run_one(client_name: str, scenario: str, bootstrap: str, topic: str, num_records: int | None,
            max_seconds: float | None, input_topic: str | None = None,
            batch_size: int | None = None, security: dict[str, str] | None = None,
            warmup_transactions: int = 0, s4_records_per_txn: int | None = None) -> dict[str, Any]:
    """``batch_size`` (S1-S3, S6, the sync clients): the same batch size for every client; ``security``
    (S1-S3, S6, the sync clients): a secured listener's settings; ``warmup_transactions`` (S1-S3, S6):
    untimed transactions first; ``s4_records_per_txn``: S4's inputs per transaction (default 1,000)."""
    spec = SCENARIOS[scenario]
    if s4_records_per_txn is not None:
        _pipelines.PER_TXN = s4_records_per_txn  # read by every S4 loop when it starts
    if batch_size is not None and (client_name in AIO_CLIENTS or scenario in ("S4", "S5")):
        raise ValueError("--batch-size is for the sync clients' S1-S3")
    if security and (client_name in AIO_CLIENTS or scenario in ("S4", "S5")):
        raise ValueError("--security-config is for the sync clients' S1-S3")
    n = num_records or spec["num_records"]
    bound = max_seconds or spec["max_seconds"]
    txn_id = f"bench-{client_name}-{scenario}-{uuid.uuid4().hex[:8]}"
    if client_name in AIO_CLIENTS:
        if scenario in ("S4", "S5"):
            return {"client": client_name, "scenario": scenario,
                    "skipped": "S4 and S5 compare the sync reading loops"}
        result = run_aio(client_name, bootstrap, txn_id, topic, n, RECORD_SIZE, spec["records_per_txn"],
                         bound, warmup_transactions, spec.get("spread"))
    elif scenario == "S4":
        if input_topic is None:
            raise ValueError("S4 needs --input-topic (filled with records beforehand)")
        client = PURE_AS_OURS.get(client_name, client_name)
        if client not in PIPELINE_CLIENTS:
            return {"client": client_name, "scenario": scenario, "skipped": "not an S4 client"}
        result = run_pipeline(client, bootstrap, input_topic, topic, n, bound, RECORD_SIZE)
    elif scenario == "S5":
        client = PURE_AS_OURS.get(client_name, client_name)
        if client not in READ_CLIENTS:
            return {"client": client_name, "scenario": scenario, "skipped": "not an S5 client"}
        result = run_read(client, bootstrap, topic, READ_PARTITIONS, n, bound, RECORD_SIZE)
    elif client_name in READ_SIDE_CLIENTS:
        return {"client": client_name, "scenario": scenario, "skipped": "a read-side client (S4, S5)"}
    else:
        client = make_client(client_name, bootstrap, txn_id, batch_size, security)
        try:
            result = run_warmed(client, topic, n, spec["records_per_txn"], bound, warmup_transactions,
                                spec.get("spread"))
            if isinstance(client, OurClient):
                result.extra.update(producer_diagnostics(client.producer))
        finally:
            client.close()
        result.peak_rss_bytes = peak_rss_bytes()  # after close: includes everything the client held
    out = result.to_dict()
    out["client"] = client_name
    out["txnproducer_source"] = str(Path(txnproducer.__file__).resolve().parent.parent)  # which tree ran
    out["scenario"] = scenario
    if hasattr(os, "sched_getaffinity"):  # where it ran: compare.py --client-cpus pins it
        out["cpus"] = sorted(os.sched_getaffinity(0))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--client", required=True,
                        choices=(*CLIENTS, PURE, KAFKA_IO, *READ_SIDE_CLIENTS, *AIO_CLIENTS))
    parser.add_argument("--scenario", required=True, choices=tuple(SCENARIOS))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True,
                        help="topic written (S4: the output topic; S5: the topic read)")
    parser.add_argument("--input-topic", help="S4: topic read (already filled)")
    parser.add_argument("--num-records", type=int, default=None)
    parser.add_argument("--max-seconds", type=float, default=None)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="batch size in bytes (default: the client's own default)")
    parser.add_argument("--warmup-transactions", type=int, default=0,
                        help="S1-S3, S6: untimed transactions of the same shape before the measured ones")
    parser.add_argument("--s4-records-per-txn", type=int, default=None,
                        help="S4: inputs per transaction (default 1,000)")
    parser.add_argument("--security-config", default=None,
                        help="JSON file of a secured listener's settings (benchmarks/_secured.py)")
    args = parser.parse_args(argv)
    security = None
    if args.security_config:
        security = json.loads(Path(args.security_config).read_text())
    result = run_one(args.client, args.scenario, args.bootstrap, args.topic, args.num_records,
                     args.max_seconds, args.input_topic, args.batch_size, security, args.warmup_transactions,
                     args.s4_records_per_txn)
    sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


__all__ = ["AIO_CLIENTS", "CLIENTS", "KAFKA_IO", "PURE", "READ_PARTITIONS", "READ_SIDE_CLIENTS", "SCENARIOS",
           "TxnClient", "main", "make_client", "run_one"]

if __name__ == "__main__":
    sys.exit(main())
