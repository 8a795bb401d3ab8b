"""Incremental fetch sessions (KIP-227), as a Kafka broker keeps them for its consumers.

A client opens a session with a full Fetch (``session_id`` 0, ``session_epoch`` 0) and gets its id in
the answer; later requests of the session (epoch 1, 2, ...) name only the partitions that changed
(added, or a new fetch offset) and the ones to forget, and the answer lists only the partitions with
something to say - records, an error, or a high watermark or log start offset that moved since the
session last reported it (Kafka's ``CachedPartition.maybeUpdateResponseData``: a last stable offset
that moved alone is not news). Epoch -1 is a fetch without a session (every
partition asked, every partition answered); a known id with epoch 0 or -1 closes that session first.

Errors, as Kafka's ``FetchManager`` answers them (top-level ``error_code``, no partitions, session id 0):
an unknown session id FETCH_SESSION_ID_NOT_FOUND; an epoch other than the expected one
INVALID_FETCH_SESSION_EPOCH; a request naming topics by id (v13+) in a session opened naming them by name,
or the other way round, FETCH_SESSION_TOPIC_ID_ERROR. The session stays, its expected epoch unchanged, so
a retry with the right epoch (and naming) works - as the 4.1 recording shows
(``tests/conformance/kafka-4.1.0/fetch_sessions.json``).

Simplifications: the cache has no size limit and no eviction (Kafka's
``max.incremental.fetch.session.cache.slots``, 1000, evicts by age and size); sessions are per
broker and die with the cluster, not with the broker's restart.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import attrs

from txnproducer._internal.protocol import error_codes as ec

__all__ = ["FetchSessions", "SessionPartition"]

#: Kafka's ``FetchMetadata``: epoch of a full fetch that opens a session / of a sessionless one.
INITIAL_EPOCH = 0
FINAL_EPOCH = -1


@attrs.define
class SessionPartition:
    """A partition a session fetches, and what the session last told the client about it."""

    topic: str | None
    topic_id: Any
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    # last reported (high watermark, log start offset); None: never
    reported: tuple[int, int] | None = None

    @property
    def key(self) -> tuple[Any, int]:
        return (self.topic if self.topic is not None else self.topic_id, self.partition)


@attrs.define
class _Session:
    session_id: int
    next_epoch: int
    partitions: dict[tuple[Any, int], SessionPartition]
    by_id: bool = False  # opened by a v13+ request (topics named by id)


@attrs.frozen
class SessionStep:
    """What one request means: an error, or the partitions to answer and whether all are answered."""

    error_code: int
    session_id: int  # what the answer carries (0: no session)
    partitions: list[SessionPartition]
    full: bool  # answer every partition (not only those with something to say)


class FetchSessions:
    """Every broker's fetch sessions (guarded by the cluster state lock, as all mock state)."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[int, int], _Session] = {}
        self._ids = itertools.count(1)

    def begin(
        self,
        broker_id: int,
        session_id: int,
        epoch: int,
        requested: Iterable[SessionPartition],
        forgotten: Iterable[tuple[Any, int]],
        by_id: bool = False,
    ) -> SessionStep:
        """Apply a request's session fields (``by_id``: the request names topics by id, v13+); see the
        module docstring."""
        requested = list(requested)
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id:
                self._sessions.pop((broker_id, session_id), None)
            if epoch == FINAL_EPOCH:
                return SessionStep(ec.NONE, 0, requested, True)
            new_id = next(self._ids)
            opened = _Session(new_id, 1, {p.key: p for p in requested}, by_id)
            self._sessions[(broker_id, new_id)] = opened
            return SessionStep(ec.NONE, new_id, requested, True)
        session = self._sessions.get((broker_id, session_id))
        if session is None:
            return SessionStep(ec.FETCH_SESSION_ID_NOT_FOUND, 0, [], True)
        if epoch != session.next_epoch:
            return SessionStep(ec.INVALID_FETCH_SESSION_EPOCH, 0, [], True)
        if by_id != session.by_id:
            return SessionStep(ec.FETCH_SESSION_TOPIC_ID_ERROR, 0, [], True)
        for key in forgotten:
            session.partitions.pop(key, None)
        for p in requested:
            known = session.partitions.get(p.key)
            if known is not None:
                p.reported = known.reported
            session.partitions[p.key] = p
        session.next_epoch = 1 if epoch >= 2**31 - 1 else epoch + 1
        return SessionStep(ec.NONE, session.session_id, list(session.partitions.values()), False)

    def session_count(self, broker_id: int | None = None) -> int:
        """How many sessions are open (on one broker, or on all)."""
        return sum(1 for (b, _) in self._sessions if broker_id is None or b == broker_id)
