"""The client side of an incremental fetch session with one broker (KIP-227; the Java
``FetchSessionHandler``).

Why: a consumer of many partitions would otherwise name every partition in every Fetch and get
every partition back, data or not. In a session, the first request is full (epoch 0: the broker
opens a session and answers its id); each later one (epoch 1, 2, ...) names only the partitions
whose fetch state changed since the broker last saw it, and the ones to forget; the broker answers
only partitions with something to say.

Rules, as the Java client:

- :meth:`build` turns "what to fetch now" into a request: full when there is no session (every
  partition), else the changed and added partitions plus the forgotten ones (a partition of the
  session not fetched this round - its records are still buffered, it was paused or revoked);
- :meth:`handle_response` after a good answer: a full request whose answer carries a session id
  opens the session at epoch 1 (id 0: the broker keeps none; the next request is full again); an
  incremental one moves the epoch on (wrapping past 2**31 - 1 to 1) and the session now holds what
  was sent. A top-level error ends the session: FETCH_SESSION_ID_NOT_FOUND starts over with a new one,
  any other error (INVALID_FETCH_SESSION_EPOCH, ...) asks the broker to close it and open a new one
  (the same id with epoch 0); the answer's partitions are not used;
- :meth:`handle_error` after a failed request (connection lost, timeout): the same, close and reopen.

Thread rule: the polling thread only; one request in flight per broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from kafka.structs import TopicPartition

from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.fetch_request import FetchPartitionData

__all__ = ["FetchPlan", "FetchSessionHandler"]

INITIAL_EPOCH = 0
_MAX_EPOCH = 2**31 - 1


class FetchPlan(NamedTuple):
    """One request's session fields and partitions."""

    session_id: int
    epoch: int
    to_send: dict[TopicPartition, FetchPartitionData]  # full: every wanted partition
    forgotten: list[TopicPartition]
    wanted: dict[TopicPartition, FetchPartitionData]  # what the session holds once answered
    by_id: bool

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH


class FetchSessionHandler:
    """The session with one broker (see the module docstring)."""

    def __init__(self, node: int) -> None:
        self.node = node
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self.by_id = False
        self._session: dict[TopicPartition, FetchPartitionData] = {}

    def build(self, wanted: Mapping[TopicPartition, FetchPartitionData], by_id: bool) -> FetchPlan:
        """The request for ``wanted`` (topics named by id when ``by_id``: v13+)."""
        if by_id != self.by_id and self.epoch != INITIAL_EPOCH:
            self.epoch = INITIAL_EPOCH  # the session named topics the other way: open a new one
        self.by_id = by_id
        wanted = dict(wanted)
        if self.epoch == INITIAL_EPOCH:
            return FetchPlan(self.session_id, INITIAL_EPOCH, wanted, [], wanted, by_id)
        session = self._session
        to_send = {tp: data for tp, data in wanted.items() if session.get(tp) != data}
        forgotten = [tp for tp in session if tp not in wanted]
        return FetchPlan(self.session_id, self.epoch, to_send, forgotten, wanted, by_id)

    def handle_response(self, plan: FetchPlan, error_code: int, session_id: int) -> bool:
        """Apply a good answer's session fields; False when the answer must not be used."""
        if error_code != ec.NONE:
            if error_code == ec.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = 0
            self.epoch = INITIAL_EPOCH
            self._session = {}
            return False
        if plan.full:
            self.session_id = session_id
            self.epoch = 1 if session_id else INITIAL_EPOCH
        else:
            self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1
        self._session = plan.wanted
        return True

    def handle_error(self) -> None:
        """The request failed (connection lost, timed out): close the session and open a new one."""
        self.epoch = INITIAL_EPOCH
        self._session = {}

    def partitions(self) -> list[TopicPartition]:
        """The partitions the broker's session holds."""
        return list(self._session)
