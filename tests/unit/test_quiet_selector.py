"""QuietMissSelector: the standard selector lookup, minus the repr formatting on a miss."""

from __future__ import annotations

import selectors
import socket

import pytest

from txnproducer._internal.network.selector import QuietMissSelector


class CountingSocket(socket.socket):
    """A socket that counts how often its repr is formatted (two syscalls each time)."""

    reprs = 0

    def __repr__(self) -> str:
        type(self).reprs += 1
        return super().__repr__()


def test_miss_raises_key_error_without_formatting_the_socket() -> None:
    a, b = socket.socketpair()
    sock = CountingSocket(fileno=a.detach())
    try:
        with QuietMissSelector() as quiet, selectors.DefaultSelector() as standard:
            for sel in (quiet, standard):
                with pytest.raises(KeyError):
                    sel.get_key(sock)
            assert CountingSocket.reprs == 2  # only the standard selector formatted it (twice)
    finally:
        sock.close()
        b.close()


def test_hits_and_errors_match_the_standard_selector() -> None:
    a, b = socket.socketpair()
    try:
        with QuietMissSelector() as quiet, selectors.DefaultSelector() as standard:
            for sel in (quiet, standard):
                key = sel.register(a, selectors.EVENT_READ, "data")
                assert sel.get_key(a) == key
                assert sel.get_key(a.fileno()) == key  # by fd, as the standard lookup
                sel.modify(a, selectors.EVENT_READ | selectors.EVENT_WRITE, "both")
                assert sel.get_key(a).data == "both"
        a.close()  # a closed socket that is still registered is found by identity
        with QuietMissSelector() as quiet:
            c, d = socket.socketpair()
            key = quiet.register(c, selectors.EVENT_READ)
            c.close()
            assert quiet.get_key(c) == key
            d.close()
        closed = QuietMissSelector()
        closed.close()
        with pytest.raises(RuntimeError):
            closed.get_key(b)
    finally:
        a.close()
        b.close()


def test_the_network_client_uses_it() -> None:
    from txnproducer._internal.network.client import NetworkClient
    from txnproducer.config import ProducerConfig

    net = NetworkClient(ProducerConfig(bootstrap_servers="127.0.0.1:9", transactional_id="t"))
    try:
        assert isinstance(net._client._net._selector, QuietMissSelector)
    finally:
        net.close()
