"""Offset resets (ListOffsets) and position validation after a leader change (OffsetForLeaderEpoch).

Resets, as the Java ``OffsetFetcher``: the partitions awaiting one are grouped by leader and asked
for their earliest (-2) or latest (-1, the last stable offset for read_committed) offset, with the
leader epoch the consumer believes current; the answer becomes the position (with its leader epoch).

Validation, as the Java ``OffsetsForLeaderEpochUtils`` / ``SubscriptionState.maybeCompleteValidation``
(KIP-320): for a partition whose leader changed, the new leader is asked where the epoch of the last
consumed record ends.

- end offset >= position: the position is in the log; fetching resumes;
- end offset < position: the log was truncated below the position (records the consumer read are
  gone). With ``auto_offset_reset`` earliest or latest the consumer seeks to that end offset - the first
  offset known to diverge - and logs ``txn.consumer_log_truncated``, as the Java client; with "none"
  ``poll()`` raises :class:`~txnproducer.LogTruncationError`. Never a silent read on;
- no answer for that epoch (end offset or epoch -1): the position cannot be placed - reset by the
  policy, or :class:`~txnproducer.OffsetOutOfRangeError` with "none".

Stale answers are dropped, as the Java ``SubscriptionState`` drops them: a reset answer applies only while
the partition still awaits a reset by the strategy it was sent for (``seek_to_beginning`` then
``seek_to_end`` before the first answer came: the earliest offset must not win), a validation answer only
while the position, its epoch and the leader epoch are still those it was sent for (a seek to a committed
offset - an exactly-once loop's rewind after an abort - while a validation was out must not be judged by
the old position's answer). Each request's callback holds what it was sent for.

Errors of either request: FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER and unknown
partitions refresh metadata and retry after ``retry_backoff_ms`` (doubling to ``retry_backoff_max_ms``);
TOPIC_AUTHORIZATION_FAILED is kept for ``poll()``. A failed request is retried the same way.

Thread rule: the polling thread only.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from typing import Any

from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.list_offsets import (
    EARLIEST,
    LATEST,
    LIST_OFFSETS_API_KEY,
    LIST_OFFSETS_MAX_VERSION,
    LIST_OFFSETS_MIN_VERSION,
    list_offsets_request,
    listed_offsets,
)
from txnproducer._internal.protocol.offset_for_leader_epoch import (
    OFFSET_FOR_LEADER_EPOCH_API_KEY,
    OFFSET_FOR_LEADER_EPOCH_MAX_VERSION,
    OFFSET_FOR_LEADER_EPOCH_MIN_VERSION,
    epoch_end_offsets,
    offset_for_leader_epoch_request,
)
from txnproducer.consumer_config import ConsumerConfig

from .positions import Assignment, FetchState, PartitionState

__all__ = ["OffsetLookups"]

_TIMESTAMPS = {"earliest": EARLIEST, "latest": LATEST}


class OffsetLookups:
    """Sends the resets and validations the assignment needs (see the module docstring)."""

    def __init__(self, config: ConsumerConfig, net: NetworkClient, assignment: Assignment, *,
                 read_committed: bool = True) -> None:
        self._config = config
        self._read_committed = read_committed
        self._net = net
        self._assignment = assignment
        self._log = get_logger("txnproducer.consumer")

    def send(self) -> None:
        """Send what is due: resets first, then validations (each grouped by leader)."""
        now = time.monotonic()
        self._send_kind(
            FetchState.AWAIT_RESET,
            now,
            LIST_OFFSETS_API_KEY,
            LIST_OFFSETS_MIN_VERSION,
            LIST_OFFSETS_MAX_VERSION,
            self._reset_request,
            self._reset_answered,
        )
        self._send_kind(
            FetchState.AWAIT_VALIDATION,
            now,
            OFFSET_FOR_LEADER_EPOCH_API_KEY,
            OFFSET_FOR_LEADER_EPOCH_MIN_VERSION,
            OFFSET_FOR_LEADER_EPOCH_MAX_VERSION,
            self._validation_request,
            self._validation_answered,
        )

    def _send_kind(
        self,
        kind: FetchState,
        now: float,
        api_key: int,
        min_version: int,
        max_version: int,
        build: Callable[[int, dict[str, list[PartitionState]]], Any],
        answered: Callable[[list[tuple[PartitionState, Any]], Any], None],
    ) -> None:
        by_node: dict[int, dict[str, list[PartitionState]]] = {}
        for state in self._assignment.in_state(kind):
            if state.in_flight or state.next_try > now or state.error is not None:
                continue
            node = self._net.leader_for(state.tp)
            if node is None:
                self._net.request_metadata_update()
                continue
            by_node.setdefault(node, {}).setdefault(state.tp.topic, []).append(state)
        for node, topics in by_node.items():
            broker_max = self._net.max_version(node, api_key)
            if broker_max is None or not self._net.is_ready(node):
                self._net.ensure_connecting(node)
                continue
            version = min(max_version, broker_max)
            if version < min_version:
                raise errors.UnsupportedVersionError(
                    f"broker {node} speaks API {api_key} up to v{broker_max}; the consumer needs "
                    f"v{min_version}+"
                )
            sent = [(s, _sent_for(s)) for parts in topics.values() for s in parts]
            for s, _ in sent:
                s.in_flight = True
            future = self._net.send(node, build(version, topics))
            future.add_callback(functools.partial(answered, sent))
            future.add_errback(functools.partial(self._failed, sent, kind))

    # -- requests --------------------------------------------------------------------------------

    def _reset_request(self, version: int, topics: dict[str, list[PartitionState]]) -> Any:
        return list_offsets_request(
            version,
            {
                topic: [(s.tp.partition, s.leader_epoch, _TIMESTAMPS[s.reset_to or "latest"]) for s in states]
                for topic, states in topics.items()
            },
            read_committed=self._read_committed,
            timeout_ms=self._config.request_timeout_ms,
        )

    def _validation_request(self, version: int, topics: dict[str, list[PartitionState]]) -> Any:
        return offset_for_leader_epoch_request(
            version,
            {
                topic: [(s.tp.partition, s.leader_epoch, s.offset_epoch) for s in states]
                for topic, states in topics.items()
            },
        )

    # -- answers ---------------------------------------------------------------------------------

    def _retry_later(self, state: PartitionState) -> None:
        state.in_flight = False
        config = self._config
        backoff = min(config.retry_backoff_max_ms, config.retry_backoff_ms * 2 ** min(state.retries, 20))
        state.retries += 1
        state.next_try = time.monotonic() + backoff * random.uniform(0.8, 1.2) / 1000

    def _failed(self, sent: list[tuple[PartitionState, Any]], kind: FetchState, exc: BaseException) -> None:
        for state, sent_for in sent:
            if self._current(state, kind, sent_for):
                self._retry_later(state)
        self._net.request_metadata_update()
        self._log.debug("txn.consumer_offset_lookup_failed", error=f"{type(exc).__name__}: {exc}")

    def _error(self, state: PartitionState, code: int) -> None:
        if code == ec.TOPIC_AUTHORIZATION_FAILED:
            state.in_flight = False
            state.error = errors.TopicAuthorizationError(
                f"not authorized to describe topic {state.tp.topic!r} (TOPIC_AUTHORIZATION_FAILED): "
                "grant this "
                "principal DESCRIBE and READ on the topic, then poll again",
                error_code=code,
            )
            return
        self._net.request_metadata_update()
        self._retry_later(state)

    def _current(self, state: PartitionState, kind: FetchState, sent_for: Any) -> bool:
        """Whether an answer still applies: the partition was not revoked since, and still awaits what
        the request was sent for (module docstring)."""
        return (
            self._assignment.get(state.tp) is state and state.state is kind and _sent_for(state) == sent_for
        )

    def _reset_answered(self, sent: list[tuple[PartitionState, Any]], response: Any) -> None:
        answers = listed_offsets(response)
        for state, sent_for in sent:
            if not self._current(state, FetchState.AWAIT_RESET, sent_for):
                continue
            answer = answers.get((state.tp.topic, state.tp.partition))
            if answer is None or answer.error_code != ec.NONE or answer.offset < 0:
                self._error(state, ec.UNKNOWN_TOPIC_OR_PARTITION if answer is None else answer.error_code)
                continue
            self._log.debug(
                "txn.consumer_position_reset",
                topic=state.tp.topic,
                partition=state.tp.partition,
                offset=answer.offset,
                reset=state.reset_to,
            )
            state.seek(answer.offset, answer.leader_epoch)

    def _validation_answered(self, sent: list[tuple[PartitionState, Any]], response: Any) -> None:
        answers = epoch_end_offsets(response)
        for state, sent_for in sent:
            if not self._current(state, FetchState.AWAIT_VALIDATION, sent_for):
                continue
            answer = answers.get((state.tp.topic, state.tp.partition))
            if answer is None or answer.error_code != ec.NONE:
                self._error(state, ec.UNKNOWN_TOPIC_OR_PARTITION if answer is None else answer.error_code)
                continue
            position = state.position
            assert position is not None
            if answer.end_offset < 0 or answer.leader_epoch < 0:
                self._unplaceable(state, position)
            elif answer.end_offset < position:
                self._truncated(state, position, answer.end_offset, answer.leader_epoch)
            else:
                state.in_flight = False
                state.retries = 0
                state.state = FetchState.FETCHING

    def _unplaceable(self, state: PartitionState, position: int) -> None:
        strategy = self._config.auto_offset_reset
        tp = state.tp
        if strategy == "none":
            state.in_flight = False
            state.error = errors.OffsetOutOfRangeError(
                f"the new leader of {tp.topic}-{tp.partition} does not know the leader epoch "
                f"{state.offset_epoch} of position {position}, and auto_offset_reset is 'none': seek() the "
                "partition and poll again",
                offsets={tp: position},
            )
            return
        self._log.warning(
            "txn.consumer_offset_reset",
            topic=tp.topic,
            partition=tp.partition,
            offset=position,
            reset=strategy,
            reason="leader epoch unknown to the new leader",
        )
        state.request_reset(strategy)

    def _truncated(self, state: PartitionState, position: int, end_offset: int, epoch: int) -> None:
        tp = state.tp
        if self._config.auto_offset_reset == "none":
            state.in_flight = False
            state.error = errors.LogTruncationError(
                f"the log of {tp.topic}-{tp.partition} was truncated below the position {position} after a "
                f"leader change: records from offset {end_offset} on were replaced (KIP-320). seek() the "
                f"partition - to {end_offset} to read the new log - and poll again",
                offsets={tp: position},
                divergent_offsets={tp: end_offset},
            )
            return
        self._log.warning(
            "txn.consumer_log_truncated",
            topic=tp.topic,
            partition=tp.partition,
            position=position,
            divergent_offset=end_offset,
            leader_epoch=epoch,
        )
        state.seek(end_offset, epoch)

    def pending(self) -> list[TopicPartition]:
        """Partitions still without a fetchable position."""
        return [
            s.tp
            for s in self._assignment
            if s.state in (FetchState.AWAIT_RESET, FetchState.AWAIT_VALIDATION) and s.error is None
        ]


def _sent_for(state: PartitionState) -> Any:
    """What a request for ``state`` is sent for, and what its answer must still find to apply: the
    reset strategy while awaiting a reset (the Java ``SubscriptionState.maybeSeekUnvalidated`` check),
    the position with its offset epoch and the leader epoch while awaiting validation
    (``maybeCompleteValidation``)."""
    if state.state is FetchState.AWAIT_RESET:
        return state.reset_to
    return (state.position, state.offset_epoch, state.leader_epoch)
