"""The stand-alone mock cluster process: starts, prints its bootstrap servers, serves, stops on SIGTERM."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from kafka import KafkaProducer

from txnproducer.testing.wire_client import WireClient

ROOT = Path(__file__).resolve().parents[2]


def test_standalone_serves_kafka_python_and_stops_on_sigterm() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "txnproducer.testing.standalone",
            "--brokers",
            "2",
            "--port",
            "0",
            "--transaction-version",
            "2",
            "--topic",
            "standalone:2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        stdout = proc.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        line = lines.get(timeout=30)  # printed once every broker listens
        assert line.startswith("bootstrap_servers="), line + (
            proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
        )
        servers = line.strip().split("=", 1)[1]
        assert len(servers.split(",")) == 2
        producer = KafkaProducer(bootstrap_servers=servers, enable_idempotence=True, acks="all")
        try:
            meta = producer.send("standalone", b"hello", partition=1).get(timeout=10)
        finally:
            producer.close(timeout=5)
        assert (meta.partition, meta.offset) == (1, 0)
        host, port = servers.split(",")[0].split(":")
        with WireClient(host, int(port)) as client:
            from kafka.protocol.metadata import MetadataRequest

            topics = client.send(MetadataRequest[12](topics=None, allow_auto_topic_creation=False)).topics
            assert [t.name for t in topics] == ["standalone"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
