"""Where ``txnproducer perf`` sends its records: a MockCluster in a child process, or a topic made on
a real cluster.

Why apart from :mod:`txnproducer.perf`: starting, watching and stopping a child process (and an
admin client for a real cluster) is a concern of its own, also used by ``benchmarks/compare.py``
and the asyncio loop-lag test; the perf module keeps the workload and its command line.
"""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["MOCK_START_TIMEOUT_S", "MOCK_STOP_TIMEOUT_S", "create_topic", "mock_cluster_process"]

# Bound on starting (and stopping) the standalone mock cluster process.
MOCK_START_TIMEOUT_S = 60.0
MOCK_STOP_TIMEOUT_S = 10.0


@contextmanager
def mock_cluster_process(
    brokers: int = 1,
    transaction_version: int = 2,
    partitions: int = 3,
    topics: Sequence[str] = (),
    crc_check: bool = True,
    timeout_s: float = MOCK_START_TIMEOUT_S,
) -> Iterator[str]:
    """Run ``txnproducer.testing.standalone`` in a child process; yield its bootstrap servers.

    A separate process keeps the mock broker's CPU and memory out of the measured process. Its
    stdout is drained by a thread for the whole run (it may log there), so it can never block on
    a full pipe. The child is stopped with SIGTERM (then SIGKILL) on exit, each step bounded.
    """
    cmd = [sys.executable, "-m", "txnproducer.testing.standalone", "--brokers", str(brokers), "--port", "0",
           "--transaction-version", str(transaction_version), "--partitions", str(partitions)]
    for topic in topics:
        cmd += ["--topic", f"{topic}:{partitions}"]
    if not crc_check:
        cmd.append("--no-crc-check")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, name="mock-cluster-stdout", daemon=True).start()
    try:
        deadline = time.monotonic() + timeout_s
        bootstrap = None
        while bootstrap is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"the mock cluster did not start within {timeout_s:.0f} s")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"the mock cluster exited with code {proc.wait(MOCK_STOP_TIMEOUT_S)}")
            if line.startswith("bootstrap_servers="):
                bootstrap = line.strip().split("=", 1)[1]
        yield bootstrap
    finally:
        _stop_process(proc)


def _stop_process(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(MOCK_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(MOCK_STOP_TIMEOUT_S)


def create_topic(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30.0,
                 **security: Any) -> None:
    """Create ``topic`` on a real cluster (ignored when it exists): auto-creation is often off.
    ``security``: the producer's ``security_protocol``/``ssl_*``/``sasl_*`` settings, for the admin client."""
    from txnproducer.admin.connection import AdminConnection
    from txnproducer.admin.create_topics import create_topic as create
    from txnproducer.admin.settings import AdminSettings

    settings = AdminSettings.from_mapping({"bootstrap_servers": bootstrap,
                                           "default.api.timeout.ms": int(timeout_s * 1000), **security})
    admin = AdminConnection(settings)
    try:
        create(admin, topic, partitions, admin.deadline(), replication_factor=1)
    finally:
        admin.close()
