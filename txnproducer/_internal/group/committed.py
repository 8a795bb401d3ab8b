"""The group's committed offsets for the polling thread: OffsetFetch (``offset_fetch.py``) sent on the
member's IO thread, waited for within the caller's timeout, shared by both protocols' members.

Why a request outlives its caller: a consumer polling with short timeouts asks for the committed
offsets of newly assigned partitions at every poll. A request still unanswered when one call gives
up goes on, and the next call for the same partitions takes its answer instead of sending another
(Java's ``pendingCommittedOffsetRequest``). Likewise a retriable answer (UNSTABLE_OFFSET_COMMIT while
a transaction's offsets are pending, a coordinator move) sets when the next attempt may go: a call
before then waits for that time within its own timeout, or - ``timeout`` 0 - gives up at once without
sending, so that a caller that must not block (a consumer whose other partitions keep flowing) can ask
at every poll without flooding the coordinator.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from kafka.structs import TopicPartition

from txnproducer import errors

from . import offset_fetch
from .coordinator import CoordinatorLink
from .io_thread import GroupIo
from .offset_fetch import CommittedOffset, FetchOutcome
from .state import CoordinatedState
from .waits import MemberWaits

__all__ = ["CommittedOffsets"]


class _Pending:
    """An answer the polling thread waits for (written on the IO thread, with the state lock)."""

    done = False
    outcome: FetchOutcome | None = None
    failure: BaseException | None = None


class _Retry:
    """When the next attempt for ``wanted`` may go, after how many failures, and why."""

    def __init__(self, wanted: frozenset[TopicPartition], not_before: float, attempts: int, why: str) -> None:
        self.wanted = wanted
        self.not_before = not_before
        self.attempts = attempts
        self.why = why


class CommittedOffsets:
    """See the module docstring. ``identity()`` (IO thread, when a request is built): the (member
    id, member epoch) a consumer-protocol member names itself with, or None; ``on_answer()`` (IO
    thread): an answer came - the member's owner may want to wake its polling thread."""

    def __init__(self, state: CoordinatedState, link: CoordinatorLink, io: GroupIo, waits: MemberWaits, *,
                 identity: Callable[[], tuple[str, int] | None] | None = None,
                 on_answer: Callable[[], None] | None = None) -> None:
        self._state = state
        self._link = link
        self._io = io
        self._waits = waits
        self._identity = identity
        self._on_answer = on_answer
        self._pending: tuple[frozenset[TopicPartition], _Pending] | None = None
        self._retry: _Retry | None = None

    def fetch(self, partitions: Iterable[TopicPartition],
              timeout: float) -> dict[TopicPartition, CommittedOffset]:
        """{tp: (offset, leader_epoch, metadata)} of ``partitions`` with a committed offset (absent:
        nothing committed), within ``timeout`` seconds, else TimeoutError naming the last reason.
        Raises GroupAuthorizationError, TopicAuthorizationError, a FatalError, ClosedError."""
        wanted = frozenset(partitions)
        if not wanted:
            return {}
        deadline = time.monotonic() + timeout
        waits = self._waits
        while True:
            in_flight = self._pending
            retry = self._retry if self._retry is not None and self._retry.wanted == wanted else None
            if in_flight is not None and in_flight[0] == wanted:
                pending = in_flight[1]
            else:
                if retry is not None and not waits.sleep_until(retry.not_before, deadline):
                    raise self._timeout(timeout, retry.why)
                if not waits.ensure_coordinator_ready(deadline):
                    raise self._timeout(timeout, retry.why if retry is not None else
                                        "the coordinator was not found")
                pending = _Pending()
                self._pending = (wanted, pending)
                self._io.call_soon(lambda p=pending: self._send(wanted, p))  # type: ignore[misc]
            if not waits.wait_for(lambda p=pending: p.done, deadline):  # type: ignore[misc]
                # an earlier attempt's answer says more than the one still on its way
                raise self._timeout(timeout, "no answer from the coordinator" if retry is None else
                                    f"{retry.why} (the attempt after it was not answered in time)")
            self._pending = None
            outcome = pending.outcome
            if outcome is not None and outcome.offsets is not None:
                self._retry = None
                return outcome.offsets
            if outcome is not None and outcome.error is not None:
                self._retry = None
                raise outcome.error
            failure = pending.failure
            if isinstance(failure, (errors.FatalError, errors.ClosedError)):
                raise failure
            why = outcome.retry_because if outcome is not None and outcome.retry_because else str(failure)
            attempts = (retry.attempts if retry is not None else 0) + 1
            self._retry = _Retry(wanted, time.monotonic() + waits.backoff_s(attempts), attempts, why)

    def _send(self, partitions: frozenset[TopicPartition], pending: _Pending) -> None:
        """On the IO thread."""
        group_id = self._link.group_id
        state = self._state
        member = self._identity() if self._identity is not None else None

        def finish(outcome: FetchOutcome | None, failure: BaseException | None) -> None:
            with state.cond:
                if not pending.done:
                    pending.outcome, pending.failure = outcome, failure
                    pending.done = True
                    state.changed()
            if self._on_answer is not None:
                self._on_answer()

        def answered(response: object) -> None:
            finish(offset_fetch.read_response(group_id, response, self._forget), None)

        self._link.send(lambda v: offset_fetch.build_request(group_id, partitions, v, member), answered,
                        lambda exc: finish(None, exc))

    def _forget(self) -> None:
        self._link.forget("it answered NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE to OffsetFetch")

    def _timeout(self, timeout: float, why: str) -> errors.TimeoutError:
        return errors.TimeoutError(
            f"fetching committed offsets for group {self._link.group_id!r} did not finish within the "
            f"timeout ({int(timeout * 1000)} ms); last: {why}")
