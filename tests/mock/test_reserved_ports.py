"""``tests/_support/ports.py``: clusters whose stopped brokers keep their ports to themselves.

What the broker-stopping tests rely on: the cluster's ports lie below the kernel's ephemeral range
(which ``bind(0)`` and ``connect()`` draw from, so no other test's broker lands there), a stopped broker
comes back on its port, and a block another process holds is given up for a free one instead of
failing the test.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests._support import ports
from tests._support.ports import LOWEST, cluster_on_reserved_ports, ephemeral_floor


def test_the_brokers_are_bound_below_the_ephemeral_range_and_come_back_on_their_ports() -> None:
    with cluster_on_reserved_ports(num_brokers=3) as cluster:
        found = [cluster.broker_address(b)[1] for b in cluster.broker_ids]
        assert found == list(range(found[0], found[0] + 3))
        assert found[0] >= LOWEST and found[-1] < ephemeral_floor()
        cluster.stop_broker(2)
        cluster.start_broker(2)
        assert cluster.broker_address(2)[1] == found[1]
        with socket.create_connection(cluster.broker_address(2), timeout=5):
            pass


def test_a_block_someone_else_holds_is_given_up_for_another(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:  # another process's listener, in the block drawn first
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        drawn = iter([taken - 1, LOWEST + 7_000])

        class _Draws:
            @staticmethod
            def randrange(*_args: Any) -> int:
                return next(drawn)

        monkeypatch.setattr(ports, "_rng", _Draws)
        with cluster_on_reserved_ports(num_brokers=2) as cluster:
            bound = [cluster.broker_address(b)[1] for b in cluster.broker_ids]
        assert bound == [LOWEST + 7_000, LOWEST + 7_001]
        assert next(drawn, None) is None  # the held block was tried first
