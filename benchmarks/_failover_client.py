"""One Python client's steady transaction stream for ``failover.py``; one JSON event per line on stdout.

    python benchmarks/_failover_client.py --client txnproducer --bootstrap HOST:PORT,... --topic t \\
        --transactional-id fo-1 [--records-per-txn 10] [--interval-ms 100]

The same stream and the same events as ``java/TxnStream.java`` (which says why), through the adapters of
``_clients.py`` with their settings (acks=all, linger 5 ms, each library's defaults otherwise): begin, send
N records, commit, at most one transaction per interval, until stdin closes. A failed transaction is
aborted; when the abort fails too (fenced, a fatal error), the client is closed and a new one initialized,
as an application would. Times are ``time.monotonic_ns()`` (CLOCK_MONOTONIC, as the JVM's nanoTime).
``FAILOVER_CLIENT_LOG_LEVEL`` (DEBUG, INFO) writes txnproducer's log lines to stderr, time-stamped
(``failover.py --client-log-level``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for path in (HERE.parent, HERE):
    if str(path) not in sys.path:  # run as a script from a source tree
        sys.path.insert(0, str(path))

from _clients import RECORD_SIZE, make_client  # noqa: E402

STREAM_CLIENTS = ("txnproducer", "confluent-kafka")
_emit_lock = threading.Lock()


def emit(event: str, error: str | None = None) -> None:
    line: dict[str, Any] = {"ev": event, "t": time.monotonic_ns()}
    if error is not None:
        line["error"] = error[:500]
    with _emit_lock:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def _close(client: Any) -> None:
    with contextlib.suppress(Exception):  # a fatally failed client may refuse to close cleanly
        if client.name == "txnproducer":
            client.producer.close(5)
        else:
            client.producer.flush(5)


def stream(name: str, bootstrap: str, topic: str, transactional_id: str, per_txn: int, interval_s: float,
           stop: threading.Event) -> None:
    payload = os.urandom(RECORD_SIZE)
    client = make_client(name, bootstrap, transactional_id)
    client.init()
    emit("ready")
    next_at = time.monotonic()
    while not stop.is_set():
        wait = next_at - time.monotonic()
        if wait > 0 and stop.wait(wait):  # pacing: one transaction per interval at most
            break
        next_at = max(next_at + interval_s, time.monotonic())
        try:
            client.begin()
            for _ in range(per_txn):
                try:
                    client.send(topic, payload)
                except client.queue_full:  # confluent-kafka's local queue: serve it, send again
                    client.on_queue_full()
                    client.send(topic, payload)
            client.commit()
            emit("commit")
        except Exception as exc:
            emit("fail", f"{type(exc).__name__}: {exc}")
            try:
                client.abort()
            except Exception as fatal:
                emit("fail", f"abort: {type(fatal).__name__}: {fatal}")
                _close(client)
                client = make_client(name, bootstrap, transactional_id)
                client.init()
    _close(client)
    emit("done")


def _log_to_stderr(level: str) -> None:
    """txnproducer's events on stderr (the run's client log), with the wall-clock time to the millisecond."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d %(name)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("txnproducer")
    logger.setLevel(level)
    logger.addHandler(handler)
    logger.propagate = False


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("FAILOVER_CLIENT_LOG_LEVEL"):
        _log_to_stderr(os.environ["FAILOVER_CLIENT_LOG_LEVEL"])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--client", required=True, choices=STREAM_CLIENTS)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--records-per-txn", type=int, default=10)
    parser.add_argument("--interval-ms", type=float, default=100.0)
    args = parser.parse_args(argv)
    stop = threading.Event()

    def watch_stdin() -> None:
        sys.stdin.readline()  # any line, or the end of input, stops the stream
        stop.set()

    threading.Thread(target=watch_stdin, name="stdin", daemon=True).start()
    stream(args.client, args.bootstrap, args.topic, args.transactional_id, args.records_per_txn,
           args.interval_ms / 1000, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
