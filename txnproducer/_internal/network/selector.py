"""The selector the producer's network thread polls: kafka-python's sockets and our own in one.

Why a subclass of the platform's default selector: kafka-python registers a connection's socket
each time it waits to read and asks ``get_key`` first, which usually misses; the standard selector
then formats the socket's repr (``getsockname`` and ``getpeername`` calls) into a KeyError message,
twice, and kafka-python drops the message (a profile with the cost is in ``benchmarks/README.md``).
And the Sender's own connections (:mod:`.connection`) are registered in the same selector, so one
``epoll`` serves both kinds of socket: their events are handed to them here, in kafka-python's poll
(:meth:`QuietMissSelector.select`) or in the Sender's own (:meth:`QuietMissSelector.poll_direct`,
see :mod:`.direct_connections`).
"""

from __future__ import annotations

import selectors
import socket
from typing import Any

from .connection import DirectConnection

# What the wake-up socket's reader gets in one call; kafka-python drains it with the same size.
_WAKEUP_DRAIN = 1024

__all__ = ["QuietMissSelector"]


class QuietMissSelector(selectors.DefaultSelector):
    """The platform's default selector, whose ``get_key`` miss does not format the file object,
    and which hands the Sender's own connections their events itself.

    The lookup is the standard one (same fd resolution, same errors), only without the message.
    kafka-python takes the class through its documented ``selector`` setting.
    """

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        fd_to_key = getattr(self, "_fd_to_key", None)
        lookup = getattr(self, "_fileobj_lookup", None)
        if fd_to_key is None or lookup is None:  # not CPython's selector layout: the standard path
            return super().get_key(fileobj)
        if self.get_map() is None:
            raise RuntimeError("Selector is closed")
        key = fd_to_key.get(lookup(fileobj))
        if key is None:
            raise KeyError(fileobj)  # formatted only if someone prints it
        return key  # type: ignore[no-any-return]

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        """The ready keys for kafka-python's loop; a :class:`DirectConnection`'s events are
        dispatched to it here instead (one ``epoll`` and one poll for both kinds of socket)."""
        ready = super().select(timeout)
        if not ready:
            return ready
        theirs = []
        for key, events in ready:
            data = key.data
            if type(data) is DirectConnection:
                data.on_events(events)
            else:
                theirs.append((key, events))
        return theirs

    def poll_direct(self, timeout: float, wakeup: socket.socket) -> bool:
        """Wait up to ``timeout`` seconds; hand our connections their events and drain the
        ``wakeup`` socket (kafka-python's, written by ``wakeup()`` from any thread) as kafka-python
        does. True when kafka-python's own sockets have events, or the wake-up socket needs its
        attention (closed or failing: kafka-python rebuilds it): its loop must run then."""
        theirs = False
        for key, events in selectors.DefaultSelector.select(self, timeout):
            data = key.data
            if type(data) is DirectConnection:
                data.on_events(events)
            elif key.fileobj is wakeup:
                try:
                    if not wakeup.recv(_WAKEUP_DRAIN):
                        theirs = True
                except BlockingIOError:
                    pass
                except OSError:
                    theirs = True
            else:
                theirs = True
        return theirs
