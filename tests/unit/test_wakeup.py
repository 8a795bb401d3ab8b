"""The Sender's wake-ups: written once while one is pending, never lost after a poll.

A one-record transaction wakes the Sender twice (its record, its commit) before the Sender runs;
the second write is a system call for nothing. What must hold: a wake-up after the poll returned
is written again, so that the Sender cannot sleep through a change it has not seen.
"""

from __future__ import annotations

import select
from collections.abc import Iterator

import pytest

from txnproducer._internal.network.client import NetworkClient
from txnproducer.config import ProducerConfig


@pytest.fixture
def net() -> Iterator[NetworkClient]:
    client = NetworkClient(ProducerConfig(bootstrap_servers="127.0.0.1:9", transactional_id="t"))
    try:
        yield client
    finally:
        client.close()


def _pending_bytes(net: NetworkClient) -> bool:
    wake = net._direct._wake_r
    readable, _, _ = select.select([wake], [], [], 0)
    return bool(readable)


def test_a_second_wakeup_before_the_poll_writes_nothing(net: NetworkClient) -> None:
    writes: list[int] = []
    write = net._direct.wakeup
    net._direct.wakeup = lambda: (writes.append(1), write())[1]  # type: ignore[method-assign]
    net.wakeup()
    net.wakeup()
    assert writes == [1]
    assert _pending_bytes(net)
    net.poll(30.0)  # returns at once: the wake-up is pending
    assert not _pending_bytes(net)  # drained by the poll
    net.wakeup()  # after the poll: written again, the next poll returns at once
    assert writes == [1, 1]
    assert _pending_bytes(net)
    net.poll(30.0)
    assert not _pending_bytes(net)


def test_a_poll_that_raises_after_draining_does_not_mute_wakeups(net: NetworkClient,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    net.wakeup()

    def drains_then_raises(*_args: object) -> None:  # a callback inside the poll that raised
        net._direct._wake_r.recv(1024)
        raise RuntimeError("boom")

    monkeypatch.setattr(net._direct, "poll", drains_then_raises)
    with pytest.raises(RuntimeError):
        net.poll(0.0)
    assert not _pending_bytes(net)
    net.wakeup()  # must be written: nothing is pending any more
    assert _pending_bytes(net)
