"""The fetcher: Fetch requests to each partition leader, their answers buffered for ``poll()``.

What it does, as the Java consumer's ``Fetcher`` / ``FetchCollector``:

- one Fetch in flight per broker, for the partitions it leads that are fetchable (a position, not
  paused, no error), in an incremental fetch session (:mod:`.session`); version: the highest both
  sides speak (v4-v18), v13+ (topics by id) only when every topic's id is known;
- a broker that leads a partition with records still buffered is not fetched from until they are
  handed out (the Java client since 4.0, KAFKA-17182): a fetch naming only its other partitions
  would drop the buffered ones from the broker's fetch session, to be added back a round later -
  churn that can get the whole session evicted;
- pipelined: :meth:`collect` hands out buffered records and, before returning them, sends the next
  fetch to the brokers whose buffered records it emptied - the broker works on it while the
  application processes;
- a chunk of control batches or aborted records only moves the position; ``position_advanced`` says
  so, and ``poll()`` returns at once (empty), as the Java consumer's does, so that a reader waiting
  for its position to reach an offset past a transaction marker sees it without waiting out its
  poll timeout;
- a chunk is handed out only while the partition is fetchable and its position is the offset the
  chunk continues from (``CompletedFetch.next_fetch_offset``, the Java ``FetchCollector``'s check on
  every collect): a seek, a reset or a truncation found by validation makes the rest stale;
- each partition's answer in the order of the Java client's error handling: records are buffered as a
  :class:`~.completed_fetch.CompletedFetch` (if the position is still the one fetched from);
  OFFSET_OUT_OF_RANGE resets by ``auto_offset_reset`` (or keeps :class:`OffsetOutOfRangeError` for
  ``poll()`` with "none"); NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH apply the answer's KIP-951
  leader hint and broker endpoints, as the producer does, and refresh metadata; UNKNOWN_LEADER_EPOCH,
  unknown topic or partition and storage errors refresh metadata and retry; UNKNOWN_SERVER_ERROR is
  logged and retried; TOPIC_AUTHORIZATION_FAILED, CORRUPT_MESSAGE (:class:`CorruptRecordError`) and any
  other code (:class:`BrokerError`; the Java client throws) are kept for ``poll()`` until the
  application seeks - never retried silently;
- a fetch-session error ends the session (:mod:`.session`); FETCH_SESSION_TOPIC_ID_ERROR also refreshes
  metadata (the session named a topic by an id the broker no longer has, as the Java client);
- after an answer with an error, or a failed request, that broker is not fetched from again before
  ``retry_backoff_ms``;
- metadata's leader epochs are compared with each partition's: a newer one means a new leader; a
  position with an epoch is validated first (:mod:`.offsets`, KIP-320) and the partition's buffered
  records are dropped (they are refetched once the position is confirmed).

Thread rule: the polling thread only (it also drives the network poll).
"""

from __future__ import annotations

import collections
import time
import uuid
from typing import Any

from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.fetch_request import (
    FETCH_API_KEY,
    FETCH_MAX_VERSION,
    FETCH_MAX_VERSION_BY_NAME,
    FETCH_MIN_VERSION,
    FetchPartitionData,
    FetchRequestData,
    ForgottenTopic,
)
from txnproducer._internal.protocol.fetch_response import FetchResponseData
from txnproducer.consumer_config import ConsumerConfig

from .completed_fetch import CompletedFetch, Deserializers
from .positions import Assignment, FetchState
from .session import FetchPlan, FetchSessionHandler

__all__ = ["Fetcher"]

_READ_UNCOMMITTED, _READ_COMMITTED = 0, 1
_RETRY_WITH_METADATA = frozenset(
    {
        ec.UNKNOWN_LEADER_EPOCH,
        ec.UNKNOWN_TOPIC_OR_PARTITION,
        ec.UNKNOWN_TOPIC_ID,
        ec.KAFKA_STORAGE_ERROR,
        ec.REPLICA_NOT_AVAILABLE,
        ec.OFFSET_NOT_AVAILABLE,
        ec.INCONSISTENT_TOPIC_ID,
        ec.LEADER_NOT_AVAILABLE,
    }
)
_LEADER_MOVED = frozenset({ec.NOT_LEADER_OR_FOLLOWER, ec.FENCED_LEADER_EPOCH})


class Fetcher:
    """See the module docstring."""

    def __init__(self, config: ConsumerConfig, net: NetworkClient, assignment: Assignment, *,
                 read_committed: bool = True) -> None:
        self._config = config
        self._isolation = _READ_COMMITTED if read_committed else _READ_UNCOMMITTED
        self._net = net
        self._assignment = assignment
        self._sessions: dict[int, FetchSessionHandler] = {}
        self._in_flight: dict[int, Any] = {}  # node -> the request's future
        self._not_before: dict[int, float] = {}  # node -> no fetch before (backoff after an error)
        self._completed: collections.deque[CompletedFetch] = collections.deque()
        self._buffered: set[TopicPartition] = set()
        self._log = get_logger("txnproducer.consumer")
        self.fetches_sent = 0  # for tests and metrics
        # the last collect() moved a position without handing out a record (control batches or
        # aborted data only): poll() returns then, as the Java consumer's (Fetch.positionAdvanced)
        self.position_advanced = False

    # -- what may be fetched ----------------------------------------------------------------------

    def update_leaders(self) -> None:
        """Take metadata's leader epochs: a newer one means a new leader, whose log must be checked
        against the position (KIP-320) before fetching again."""
        cluster = self._net.cluster
        for state in self._assignment:
            epoch = cluster.leader_epoch_for_partition(state.tp)
            if epoch is None or epoch < 0 or epoch <= state.leader_epoch:
                continue
            state.leader_epoch = epoch
            if state.state is FetchState.FETCHING and state.position is not None and state.offset_epoch >= 0:
                state.state = FetchState.AWAIT_VALIDATION
                state.next_try = 0.0
                self.discard({state.tp})
            elif state.state is FetchState.AWAIT_VALIDATION:
                # ask the new leader at once: an answer still out was asked with the old epoch and is
                # stale (``offsets.py`` drops it)
                state.in_flight = False
                state.next_try = 0.0

    def _fetchable_by_node(self) -> dict[int, dict[TopicPartition, FetchPartitionData]]:
        by_node: dict[int, dict[TopicPartition, FetchPartitionData]] = {}
        max_bytes = self._config.max_partition_fetch_bytes
        buffered = self._buffered
        busy = {node for node in map(self._net.leader_for, buffered) if node is not None}
        for state in self._assignment:
            if not state.fetchable or state.tp in buffered:
                continue
            node = self._net.leader_for(state.tp)
            if node is None:
                self._net.request_metadata_update()
                continue
            if node in busy:
                continue  # it leads partitions with buffered records (module docstring)
            assert state.position is not None
            by_node.setdefault(node, {})[state.tp] = FetchPartitionData(
                state.tp.partition, state.position, max_bytes, current_leader_epoch=state.leader_epoch
            )
        return by_node

    def send_fetches(self) -> int:
        """Send a Fetch to every broker that leads a fetchable partition and has none in flight."""
        now = time.monotonic()
        sent = 0
        for node, wanted in self._fetchable_by_node().items():
            if node in self._in_flight or self._not_before.get(node, 0.0) > now:
                continue
            broker_max = self._net.max_version(node, FETCH_API_KEY)
            if broker_max is None or not self._net.is_ready(node):
                self._net.ensure_connecting(node)
                continue
            self._send(node, wanted, broker_max)
            sent += 1
        return sent

    def _send(self, node: int, wanted: dict[TopicPartition, FetchPartitionData], broker_max: int) -> None:
        ids = {topic: self._net.topic_id(topic) for topic in {tp.topic for tp in wanted}}
        version = min(FETCH_MAX_VERSION, broker_max)
        by_id = version > FETCH_MAX_VERSION_BY_NAME and all(ids.values())
        if not by_id:
            version = min(version, FETCH_MAX_VERSION_BY_NAME)
        if version < FETCH_MIN_VERSION:
            raise errors.UnsupportedVersionError(
                f"broker {node} speaks Fetch up to v{broker_max}; read_committed needs v{FETCH_MIN_VERSION}+"
            )
        session = self._sessions.setdefault(node, FetchSessionHandler(node))
        plan = session.build(wanted, by_id)
        config = self._config
        request = FetchRequestData(
            version=version,
            max_wait_ms=config.fetch_max_wait_ms,
            min_bytes=config.fetch_min_bytes,
            max_bytes=config.fetch_max_bytes,
            isolation_level=self._isolation,
            session_id=plan.session_id,
            session_epoch=plan.epoch,
            topics=self._topics(plan.to_send, ids, by_id),
            forgotten=[
                ForgottenTopic(ref, parts)
                for ref, parts in self._topics(dict.fromkeys(plan.forgotten), ids, by_id)
            ],
        )
        future = self._net.send(node, request)
        self._in_flight[node] = future
        self.fetches_sent += 1
        names = {tid: topic for topic, tid in ids.items() if tid is not None}
        future.add_callback(lambda response: self._answered(node, plan, response, names))
        future.add_errback(lambda exc: self._failed(node, exc))

    @staticmethod
    def _topics(
        partitions: dict[TopicPartition, Any], ids: dict[str, uuid.UUID | None], by_id: bool
    ) -> list[tuple[Any, list[Any]]]:
        grouped: dict[Any, list[Any]] = {}
        for tp, data in partitions.items():
            ref = ids.get(tp.topic) if by_id else tp.topic
            grouped.setdefault(ref, []).append(tp.partition if data is None else data)
        return list(grouped.items())

    # -- answers ------------------------------------------------------------------------------------

    def _failed(self, node: int, exc: BaseException) -> None:
        self._in_flight.pop(node, None)
        session = self._sessions.get(node)
        if session is not None:
            session.handle_error()
        self._back_off(node)
        self._net.request_metadata_update()
        self._log.debug("txn.consumer_fetch_failed", node=node, error=f"{type(exc).__name__}: {exc}")

    def _back_off(self, node: int) -> None:
        self._not_before[node] = time.monotonic() + self._config.retry_backoff_ms / 1000

    def _answered(
        self, node: int, plan: FetchPlan, response: FetchResponseData, names: dict[uuid.UUID, str]
    ) -> None:
        self._in_flight.pop(node, None)
        session = self._sessions[node]
        if not session.handle_response(plan, response.error_code, response.session_id):
            self._log.debug(
                "txn.consumer_fetch_session_error", node=node, error=ec.error_name(response.error_code)
            )
            if response.error_code == ec.FETCH_SESSION_TOPIC_ID_ERROR:
                self._net.request_metadata_update()
            self._back_off(node)
            return
        troubled = False
        for topic in response.responses:
            name = names.get(topic.topic_id) if topic.topic_id is not None else topic.name
            if name is None:
                continue
            for part in topic.partitions:
                tp = TopicPartition(name, part.partition)
                sent = plan.wanted.get(tp)
                if sent is None:
                    continue
                troubled |= self._partition_answer(tp, sent.fetch_offset, part, response)
        if troubled:
            self._back_off(node)

    def _partition_answer(
        self, tp: TopicPartition, fetch_offset: int, part: Any, response: FetchResponseData
    ) -> bool:
        """Handle one partition of an answer; True when it was an error."""
        state = self._assignment.get(tp)
        if state is None or state.state is not FetchState.FETCHING or state.position != fetch_offset:
            return False  # revoked, sought or reset meanwhile: the answer is stale
        code = part.error_code
        if code == ec.NONE:
            records = part.records
            if records is not None and records.nbytes:
                self._completed.append(
                    CompletedFetch(tp, fetch_offset, records, part.aborted, part.high_watermark)
                )
                self._buffered.add(tp)
            return False
        if code == ec.OFFSET_OUT_OF_RANGE:
            self._out_of_range(state, fetch_offset)
        elif code in _LEADER_MOVED:
            self._follow_hint(tp, part, response)
        elif code == ec.TOPIC_AUTHORIZATION_FAILED:
            state.error = errors.TopicAuthorizationError(
                f"not authorized to read topic {tp.topic!r} (TOPIC_AUTHORIZATION_FAILED): grant "
                "this principal READ on the topic, then poll again",
                error_code=code,
            )
        elif code in _RETRY_WITH_METADATA:
            self._net.request_metadata_update()
        elif code == ec.UNKNOWN_SERVER_ERROR:
            self._log.warning(
                "txn.consumer_fetch_error",
                topic=tp.topic,
                partition=tp.partition,
                offset=fetch_offset,
                error=ec.error_name(code),
            )
        elif code == ec.CORRUPT_MESSAGE:
            state.error = errors.CorruptRecordError(
                f"the broker answered CORRUPT_MESSAGE to a fetch of {tp.topic}-{tp.partition} at offset "
                f"{fetch_offset}: its log holds data it cannot read there. Nothing was skipped: the position "
                f"stays at {fetch_offset} and every poll() raises this until you seek; seek past the damaged "
                "batch to skip its records knowingly, or stop the consumer",
                topic=tp.topic,
                partition=tp.partition,
                offset=fetch_offset,
            )
        else:
            state.error = errors.BrokerError(
                f"the broker answered {ec.error_name(code)} ({code}) to a fetch of {tp.topic}-{tp.partition} "
                f"at offset {fetch_offset}, which a consumer cannot act on. The partition is not fetched "
                f"again until you seek it: seek(tp, {fetch_offset}) tries again",
                error_code=code,
            )
        return True

    def _out_of_range(self, state: Any, fetch_offset: int) -> None:
        strategy = self._config.auto_offset_reset
        tp = state.tp
        if strategy == "none":
            state.error = errors.OffsetOutOfRangeError(
                f"offset {fetch_offset} of {tp.topic}-{tp.partition} is out of range "
                f"(OFFSET_OUT_OF_RANGE) and "
                "auto_offset_reset is 'none': seek() the partition (seek_to_beginning, seek_to_end) "
                "and poll again",
                offsets={tp: fetch_offset},
            )
            return
        self._log.info(
            "txn.consumer_offset_reset",
            topic=tp.topic,
            partition=tp.partition,
            offset=fetch_offset,
            reset=strategy,
            reason="OFFSET_OUT_OF_RANGE",
        )
        state.request_reset(strategy)

    def _follow_hint(self, tp: TopicPartition, part: Any, response: FetchResponseData) -> None:
        """KIP-951: a leader named in the answer is used at once (metadata confirms it later)."""
        for endpoint in response.node_endpoints:
            self._net.ensure_broker(endpoint.node_id, endpoint.host, endpoint.port)
        hint = part.current_leader
        if hint is not None and hint[0] >= 0 and hint[1] >= 0:
            self._net.follow_leader_hint(tp, hint[0], hint[1])
        else:
            self._net.request_metadata_update()

    # -- handing records out ---------------------------------------------------------------------------

    def discard(self, partitions: set[TopicPartition] | None = None) -> None:
        """Drop buffered records (of ``partitions``, or all): they were revoked or sought away from."""
        if partitions is None:
            self._completed.clear()
            self._buffered.clear()
            return
        self._completed = collections.deque(c for c in self._completed if c.tp not in partitions)
        self._buffered -= partitions

    def has_buffered(self) -> bool:
        return bool(self._completed)

    def collect(
        self, max_records: int, columns: bool, chunks: bool = False, *,
        deserializers: Deserializers | None = None,
    ) -> list[Any]:
        """Up to ``max_records`` buffered records (``ConsumerRecord`` objects, deserialized with
        ``deserializers`` if given, or one :class:`PartitionBatch` per partition chunk with
        ``columns``, or one list of records per partition chunk with ``chunks``); then the next
        fetches go out.

        Raises :class:`~txnproducer.CorruptRecordError` or
        :class:`~txnproducer.RecordDeserializationError` when the next record cannot be handed out and
        nothing came before it (else what came before is returned, and the next call raises)."""
        out: list[Any] = []
        remaining = max_records
        completed = self._completed
        self.position_advanced = False
        while completed and remaining > 0:
            chunk = completed[0]
            state = self._assignment.get(chunk.tp)
            if state is None or not state.fetchable or state.position != chunk.next_fetch_offset:
                completed.popleft()  # revoked, paused, sought, reset or truncated since: stale
                self._buffered.discard(chunk.tp)
                continue
            before = state.position
            try:
                taken = chunk.take(state, remaining, columns, deserializers)
            except errors.RecordDeserializationError:
                if out:
                    break  # hand out what came before; the next call tries the record again
                raise
            except errors.CorruptRecordError:
                completed.popleft()
                self._buffered.discard(chunk.tp)
                if out:
                    break  # hand out what came before; the next poll raises
                raise
            n = len(taken)
            if not n and state.position != before:
                self.position_advanced = True  # past control batches or aborted records only
            if n:
                remaining -= n
                if chunks or not isinstance(taken, list):
                    out.append(taken)  # a PartitionBatch or a chunk's records: one per chunk
                elif out:
                    out.extend(taken)
                else:
                    out = taken
            if chunk.exhausted:
                completed.popleft()
                self._buffered.discard(chunk.tp)
            elif not n:
                break
        self.send_fetches()
        return out

    def in_flight(self) -> int:
        return len(self._in_flight)
