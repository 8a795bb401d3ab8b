"""The readiness poller every connection of a client registers with: ``epoll`` itself where there is one.

Why not ``selectors.DefaultSelector``: its ``select()`` is Python around the same ``epoll.poll`` - a
``SelectorKey`` lookup per ready socket, a list of (key, events) pairs, the timeout rounded through
``math.ceil`` - and the Sender polls three or four times per transaction (the commit's wake-up, the
Produce answer, the EndTxn answer): about 3 us a poll of a one-record transaction's ~400 us
(``benchmarks/txn_cpu.py``). :class:`Poller` keeps the selector's interface for registration
(``register``/``modify``/``unregister`` with the same ``selectors.EVENT_*`` masks and a data object
per socket, what :class:`~.connection.DirectConnection` calls) and adds :meth:`Poller.poll`, which
returns (data, events) pairs straight from ``epoll.poll``. Where ``select.epoll`` does not exist
(macOS, Windows) the same class wraps ``selectors.DefaultSelector``.

Thread rule: the network thread only (registration and the poll).
"""

from __future__ import annotations

import contextlib
import select
import selectors
from typing import Any, Protocol

__all__ = ["Poller", "Registry"]


class Registry(Protocol):
    """What a connection needs of its poller: a ``selectors`` selector's registration calls (a
    :class:`Poller`, or a ``selectors.DefaultSelector`` in tests that poll on their own)."""

    def register(self, fileobj: Any, events: int, data: Any = None) -> Any: ...

    def modify(self, fileobj: Any, events: int, data: Any = None) -> Any: ...

    def unregister(self, fileobj: Any) -> Any: ...

_READ = selectors.EVENT_READ
_WRITE = selectors.EVENT_WRITE


class Poller:
    """register/modify/unregister as a selector, and ``poll(timeout_s) -> [(data, events)]``."""

    def __init__(self) -> None:
        epoll = getattr(select, "epoll", None)
        self._data: dict[int, Any] = {}
        if epoll is not None:
            self._epoll: Any = epoll()
            self._selector: selectors.BaseSelector | None = None
        else:  # pragma: no cover - not Linux
            self._epoll = None
            self._selector = selectors.DefaultSelector()

    # -- registration (the selector's interface) --------------------------------------------------

    @staticmethod
    def _mask(events: int) -> int:
        mask = 0
        if events & _READ:
            mask |= select.EPOLLIN
        if events & _WRITE:
            mask |= select.EPOLLOUT
        return mask

    def register(self, fileobj: Any, events: int, data: Any = None) -> None:
        if self._selector is not None:  # pragma: no cover - not Linux
            self._selector.register(fileobj, events, data)
            return
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        if fd in self._data:
            raise KeyError(f"{fileobj!r} (fd {fd}) is already registered")
        self._epoll.register(fd, self._mask(events))
        self._data[fd] = data

    def modify(self, fileobj: Any, events: int, data: Any = None) -> None:
        if self._selector is not None:  # pragma: no cover - not Linux
            self._selector.modify(fileobj, events, data)
            return
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        if fd not in self._data:
            raise KeyError(f"{fileobj!r} (fd {fd}) is not registered")
        self._epoll.modify(fd, self._mask(events))
        self._data[fd] = data

    def unregister(self, fileobj: Any) -> None:
        if self._selector is not None:  # pragma: no cover - not Linux
            self._selector.unregister(fileobj)
            return
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        if self._data.pop(fd, _MISSING) is _MISSING:
            raise KeyError(f"{fileobj!r} (fd {fd}) is not registered")
        with contextlib.suppress(OSError):  # closed already: the kernel dropped it with the descriptor
            self._epoll.unregister(fd)

    def close(self) -> None:
        if self._selector is not None:  # pragma: no cover - not Linux
            self._selector.close()
            return
        self._epoll.close()
        self._data.clear()

    # -- the poll -------------------------------------------------------------------------------------

    def poll(self, timeout_s: float) -> list[tuple[Any, int]]:
        """Wait at most ``timeout_s`` (>= 0) for a registered socket to be ready; (data, events) of
        each ready one, ``events`` in ``selectors.EVENT_*`` bits (an error or hang-up counts as both,
        as the selectors module reports it: the connection's read or write then finds out)."""
        if self._selector is not None:  # pragma: no cover - not Linux
            return [(key.data, events) for key, events in self._selector.select(timeout_s)]
        # epoll's resolution is a millisecond: CPython rounds a timeout up to the next one (a deadline
        # 0.2 ms away is not polled for in a busy loop), as selectors does
        ready = self._epoll.poll(timeout_s)
        if not ready:
            return []
        data = self._data
        out = []
        for fd, event in ready:
            item = data.get(fd, _MISSING)
            if item is _MISSING:
                continue  # unregistered between epoll's answer and here (by nothing today: defensive)
            events = 0
            if event & ~select.EPOLLIN:
                events |= _WRITE
            if event & ~select.EPOLLOUT:
                events |= _READ
            out.append((item, events))
        return out


_MISSING = object()
