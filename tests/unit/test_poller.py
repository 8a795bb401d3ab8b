"""network/poller.py: the epoll the connections register with, answering in the selectors module's terms."""

from __future__ import annotations

import selectors
import socket

import pytest

from txnproducer._internal.network.poller import Poller


def test_a_ready_socket_is_reported_with_its_data_and_the_selectors_event_bits() -> None:
    poller = Poller()
    a, b = socket.socketpair()
    try:
        marker = object()
        poller.register(a, selectors.EVENT_READ, marker)
        assert poller.poll(0) == []  # nothing to read yet
        b.send(b"x")
        assert poller.poll(1.0) == [(marker, selectors.EVENT_READ)]
        poller.modify(a, selectors.EVENT_READ | selectors.EVENT_WRITE, "new data")
        assert poller.poll(1.0) == [("new data", selectors.EVENT_READ | selectors.EVENT_WRITE)]
        poller.modify(a, selectors.EVENT_WRITE, "w")
        assert poller.poll(1.0) == [("w", selectors.EVENT_WRITE)]
        with pytest.raises(KeyError):
            poller.register(a, selectors.EVENT_READ, None)  # as a selector: registered once
        poller.unregister(a)
        assert poller.poll(0) == []
        with pytest.raises(KeyError):
            poller.unregister(a)
        with pytest.raises(KeyError):
            poller.modify(a, selectors.EVENT_READ, None)
    finally:
        a.close()
        b.close()
        poller.close()


def test_a_peer_that_hung_up_wakes_the_reader_and_the_writer_as_selectors_reports_it() -> None:
    """An error or hang-up comes as both bits: the connection's read or write finds out what happened."""
    poller = Poller()
    a, b = socket.socketpair()
    try:
        poller.register(a, selectors.EVENT_READ, "conn")
        b.close()
        assert poller.poll(1.0) == [("conn", selectors.EVENT_READ | selectors.EVENT_WRITE)]
        a.close()
        with pytest.raises(KeyError):  # a closed socket (fileno -1): not registered (_drop_socket ignores it)
            poller.unregister(a)
    finally:
        a.close()
        poller.close()
