"""MockClusters whose brokers a test stops while clients still know their ports.

Why: a MockCluster normally binds port 0, and the kernel hands out ports from its ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768-60999 here). The suite runs eight pytest workers
at once, creating about 15 listeners a second between them, so a port a stopped broker just gave up
goes to another worker's new broker about once in 7,000 binds. Then the restart fails with
EADDRINUSE, and meanwhile the stopped broker's clients - which keep reconnecting to it - talk to the
other test's cluster (its request log, its one-shot faults). The chaos tier stops a broker about 11
times a run: about 1 run in 80 lost that race.

Ports below the ephemeral range are never handed out by ``bind(("", 0))`` or by ``connect()``, so a
cluster bound there (``MockCluster(port=N)``: N, N+1, ...) keeps its ports to itself while a broker is
down; only another cluster made here could pick the same block, at random among about 12,000.
"""

from __future__ import annotations

import contextlib
import errno
import random
from collections.abc import Iterator
from typing import Any

from txnproducer.testing import MockCluster

__all__ = ["cluster_on_reserved_ports", "ephemeral_floor"]

LOWEST = 20_000  # below it: ports that services of the machine (and people's habits) use
_ATTEMPTS = 50
_rng = random.Random()  # its own: a test that seeds the global generator must not make two workers collide


def ephemeral_floor() -> int:
    """The first port of the kernel's ephemeral range (32768 when it cannot be read)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


@contextlib.contextmanager
def cluster_on_reserved_ports(num_brokers: int = 3, **settings: Any) -> Iterator[MockCluster]:
    """A started ``MockCluster(num_brokers, **settings)`` on a block of ports below the ephemeral
    range; a block some other process holds (EADDRINUSE) is given up for another one."""
    floor = ephemeral_floor()
    if floor - num_brokers <= LOWEST:
        raise RuntimeError(f"the ephemeral port range starts at {floor}: no room below it for {num_brokers} "
                           f"brokers above {LOWEST}")
    for _ in range(_ATTEMPTS):
        cluster = MockCluster(num_brokers=num_brokers, port=_rng.randrange(LOWEST, floor - num_brokers),
                              **settings)
        try:
            cluster.start()
        except OSError as exc:
            cluster.close()
            if exc.errno != errno.EADDRINUSE:
                raise
            continue
        try:
            yield cluster
        finally:
            cluster.close()
        return
    raise RuntimeError(f"no free block of {num_brokers} ports between {LOWEST} and {floor} "
                       f"in {_ATTEMPTS} tries")
