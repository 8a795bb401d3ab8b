"""The selector the producer's network thread polls: kafka-python's sockets and our own in one.

Why a subclass of the platform's default selector: kafka-python registers a connection's socket
each time it waits to read and asks ``get_key`` first, which usually misses; the standard selector
then formats the socket's repr (``getsockname`` and ``getpeername`` calls) into a KeyError message,
twice, and kafka-python drops the message (a profile with the cost is in ``benchmarks/README.md``).
And the Sender's own connections (:mod:`.connection`) are registered in the same selector, so one
``epoll`` serves both kinds of socket: their events are handed to them here.
"""

from __future__ import annotations

import selectors
from typing import Any

from .connection import DirectConnection

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
