"""What a Produce answer, or its failure, does to each of its batches: complete, retry, split, fail.

Why apart from the Sender: the Sender decides what goes out and when; this decides what came back
means for every batch, the Java client's ``Sender.completeBatch`` / ``failBatch`` / ``canRetry``
rules, checked against them one error code at a time: appended (or a duplicate of an appended
batch) completes; a retriable code, or a sequence error the transaction manager can explain, sends
it again with its sequence (at once to a leader a KIP-951 hint named); MESSAGE_TOO_LARGE splits it;
anything else fails its records and makes the transaction abortable or the producer fatal (the
transaction manager's rule). An answer's appended batches complete together: one lock each for the
transaction manager and the accumulator, not one per batch. Everything here runs on the Sender thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.batching.accumulator import RecordAccumulator, encoding_error
from txnproducer._internal.batching.batch import ProducerBatch
from txnproducer._internal.network.client import NetworkClient
from txnproducer._internal.produce_errors import LEADER_HINT_CODES, RETRIABLE, STALE_METADATA, produce_error
from txnproducer._internal.protocol import error_codes as ec
from txnproducer._internal.protocol.error_codes import (
    DUPLICATE_SEQUENCE_NUMBER,
    MESSAGE_TOO_LARGE,
    NETWORK_EXCEPTION,
    NONE,
    UNKNOWN_PRODUCER_ID,
)
from txnproducer._internal.protocol.produce_response import PartitionResponse, ProduceResponseData
from txnproducer._internal.txn.state import COMPLETING
from txnproducer.config import ProducerConfig

__all__ = ["ProduceOutcomes"]


class ProduceOutcomes:
    """The Sender's handling of Produce answers (see the module docstring)."""

    def __init__(self, *, network: NetworkClient, accumulator: RecordAccumulator, transaction_manager: Any,
                 config: ProducerConfig, metrics: Any, event: Callable[..., None],
                 telemetry: Callable[[], Any], after_answer: Callable[[], object]) -> None:
        """``event`` logs with the producer's identity; ``telemetry`` reads the Sender's tracing hooks
        (attached after it started); ``after_answer`` lets the EndTxn of a completing transaction go
        out from inside the network poll, once an answer may have completed its last batch."""
        self._net = network
        self._acc = accumulator
        self._tm = transaction_manager
        self._config = config
        self._metrics = metrics
        self._event = event
        self._telemetry = telemetry
        self._after_answer = after_answer

    def on_response(self, node: int, batches: list[ProducerBatch], response: ProduceResponseData,
                    names_by_id: dict[Any, str]) -> None:
        # keyed by plain (topic, partition) tuples: a batch's TopicPartition (a named tuple) hashes
        # and compares equal to its tuple, without a named tuple made per partition answered
        answers: dict[tuple[str | None, int], PartitionResponse] = {}
        for topic in response.responses:
            name = names_by_id.get(topic.topic_id) if names_by_id else topic.name
            for answer in topic.partition_responses:
                answers[(name, answer.index)] = answer
        # Appended batches complete together (one lock each for the TM and the accumulator, not one
        # per batch), in the answer's order and before a failed batch that follows them is handled.
        appended: list[tuple[ProducerBatch, int, int | None]] = []
        for batch in batches:
            part = answers.get(batch.tp)
            if part is not None and part.error_code in (NONE, DUPLICATE_SEQUENCE_NUMBER):
                if batch.final_state is None:  # else expired or aborted meanwhile; the TM already knows
                    appended.append((batch, part.base_offset, part.log_append_time_ms))
                continue
            if appended:  # the batches before it first, as the answer lists them
                self.complete_all(appended)
                appended = []
            if part is None:
                self.retry_or_fail(batch, NETWORK_EXCEPTION, "partition missing from the Produce response",
                                   None)
                continue
            code = part.error_code
            moved = (part.current_leader is not None and code in LEADER_HINT_CODES
                     and self._follow_leader_hint(batch.tp, node, part.current_leader, response))
            self.retry_or_fail(batch, code, part.error_message, part.record_errors,
                               part.log_start_offset, leader_moved=moved)
        if appended:
            self.complete_all(appended, before_futures=self._end_if_completing)
        else:
            self._end_if_completing()

    def _end_if_completing(self) -> None:
        """The last batch of a committing/aborting transaction may have just been acknowledged: its
        EndTxn can go out now (the TM checks, under its lock, that no batch is incomplete) - before
        the records' futures and callbacks run: the broker works on it meanwhile, and its answer is
        read after them, so a commit still returns after its records' futures completed."""
        if self._tm.state in COMPLETING:
            self._after_answer()

    def _follow_leader_hint(self, tp: TopicPartition, node: int, leader: tuple[int, int],
                            response: ProduceResponseData) -> bool:
        """KIP-951: the old leader named the new one (and how to reach it). Route the partition
        there at once, as the Java client does, instead of after a metadata round trip; True if
        the batch's retry should go without backoff (the leader is another broker now)."""
        leader_id, leader_epoch = leader
        if leader_id < 0 or leader_epoch < 0:
            return False
        for endpoint in response.node_endpoints:
            if endpoint.node_id == leader_id:
                self._net.ensure_broker(endpoint.node_id, endpoint.host, endpoint.port)
        self._net.follow_leader_hint(tp, leader_id, leader_epoch)
        self._event("debug", "txn.leader_hint", topic=tp.topic, partition=tp.partition, leader=leader_id,
                    leader_epoch=leader_epoch)
        return leader_id != node

    def on_failure(self, batches: list[ProducerBatch], exc: BaseException) -> None:
        """The request never got an answer (connection dropped, request timed out)."""
        self._event("debug", "txn.produce_request_failed", error=repr(exc), batches=len(batches))
        self._net.request_metadata_update()
        for batch in batches:
            self.retry_or_fail(batch, NETWORK_EXCEPTION, f"{type(exc).__name__}: {exc}", None)

    def complete_all(self, appended: list[tuple[ProducerBatch, int, int | None]],
                     before_futures: Callable[[], object] | None = None) -> None:
        """The broker appended these ``(batch, base_offset, log_append_time)``: their partitions'
        sequences, the batches out of the accumulator (no longer incomplete, their memory back),
        ``before_futures()``, then their futures."""
        self._tm.handle_completed_batches([(batch.tp, batch.base_sequence, batch.record_count,
                                            batch.producer_epoch, base_offset)
                                           for batch, base_offset, _ in appended])
        self._acc.finalize_all(appended)
        if before_futures is not None:
            before_futures()
        self._acc.finish_all(appended)

    def retry_or_fail(self, batch: ProducerBatch, code: int, message: str | None,
                      record_errors: Any, log_start_offset: int | None = None,
                      leader_moved: bool = False) -> None:
        if batch.final_state is not None:
            return
        tm = self._tm
        pid_epoch = tm.producer_id_and_epoch
        same_producer = (pid_epoch is not None and pid_epoch.producer_id == batch.producer_id
                         and pid_epoch.epoch == batch.producer_epoch)
        within_time = time.monotonic() - batch.created < self._acc.delivery_timeout_s
        retry = False
        if same_producer and within_time and batch.attempts <= self._config.retries \
                and not tm.has_fatal_error():
            retry = code in RETRIABLE or bool(tm.can_retry(
                batch.tp, code, batch.producer_epoch, batch.base_sequence,
                log_start_offset=log_start_offset, sequence_reset=batch.sequence_reset))
            if retry and code == UNKNOWN_PRODUCER_ID and not batch.sequence_reset \
                    and tm.state_lost_to_retention(batch.tp, log_start_offset):
                self._restart_sequences(batch.tp)
        if code == MESSAGE_TOO_LARGE and batch.record_count > 1 and same_producer and within_time \
                and not tm.has_fatal_error():
            # larger than the topic's max.message.bytes: send it in halves (sequences kept)
            try:
                parts = self._acc.split_and_reenqueue(batch)  # encodes the halves before it changes anything
            except Exception as cause:
                self.fail_unencodable(batch, cause)
                return
            tm.handle_split_batch(batch.tp, batch.base_sequence, [p.record_count for p in parts])
            self._event("info", "txn.batch_split", topic=batch.tp.topic, partition=batch.tp.partition,
                        records=batch.record_count, base_sequence=batch.base_sequence)
            return
        if retry:
            if code in STALE_METADATA:
                self._net.request_metadata_update()
            if self._metrics is not None:
                self._metrics.record_retry(batch.record_count)
            telemetry = self._telemetry()
            if telemetry is not None:
                telemetry.batch_retry(batch, code)
            self._event("debug", "txn.batch_retry", topic=batch.tp.topic, partition=batch.tp.partition,
                        error_code=code, base_sequence=batch.base_sequence)
            # to a leader a KIP-951 hint just named: at once (Java skips the backoff when the
            # leader changed since the batch was sent)
            self._acc.reenqueue(batch, backoff=not leader_moved)
            return
        exc: BaseException = produce_error(code, message)
        if code == ec.INVALID_PRODUCER_EPOCH:  # the record's future says why, as the commit does
            exc = self._tm.abortable_produce_error(exc, code, batch.tp)
        if not within_time:
            exc = errors.DeliveryTimeoutError(
                f"batch for {batch.tp.topic}-{batch.tp.partition} not acknowledged within "
                f"delivery_timeout_ms={self._config.delivery_timeout_ms} (last error: {exc})")
        per_record: dict[int, BaseException] | None = None
        if record_errors:
            per_record = {int(e.batch_index): produce_error(code, e.batch_index_error_message or message)
                          for e in record_errors}
        if self._metrics is not None:
            self._metrics.record_error(batch.record_count)
        self._event("info", "txn.batch_failed", topic=batch.tp.topic, partition=batch.tp.partition,
                    error=str(exc))
        tm.handle_failed_batch(batch.tp, batch.base_sequence, batch.record_count,
                               batch.producer_epoch, exc, True)
        self._acc.fail(batch, exc, per_record)

    def fail_unencodable(self, batch: ProducerBatch, cause: Exception) -> None:
        """A batch whose encoding raised (a compression library that failed, a bug): its records fail
        with BatchEncodingError and the transaction becomes abortable, as after any batch that failed
        for good; the loop goes on with the other batches. Defence in depth: ``send()`` lets nothing
        through that the encoders cannot write, but one batch must never stop the Sender thread."""
        exc = encoding_error(batch, cause)
        if self._metrics is not None:
            self._metrics.record_error(batch.record_count)
        self._event("error", "txn.batch_encoding_failed", topic=batch.tp.topic, partition=batch.tp.partition,
                    records=batch.record_count, error=repr(cause), exc_info=cause)
        self._tm.handle_failed_batch(batch.tp, batch.base_sequence, batch.record_count,
                                     batch.producer_epoch, exc, True)
        self._acc.fail(batch, exc)

    def _restart_sequences(self, tp: TopicPartition) -> None:
        """Retention removed our producer state on ``tp``: its in-flight batches start again at
        sequence 0 (re-stamped, records unchanged) and are retried in order."""
        batches = self._acc.outstanding(tp)
        bases = self._tm.restart_sequences(tp, [b.record_count for b in batches])
        for batch, base in zip(batches, bases, strict=True):
            batch.restamp(base)

    def expire_batches(self, now: float) -> None:
        for batch in self._acc.expired_batches(now):
            if batch.final_state is not None:
                continue
            exc = errors.DeliveryTimeoutError(
                f"{batch.record_count} record(s) for {batch.tp.topic}-{batch.tp.partition} expired: "
                f"not acknowledged within delivery_timeout_ms={self._config.delivery_timeout_ms}")
            self._event("info", "txn.batch_expired", topic=batch.tp.topic, partition=batch.tp.partition)
            self._tm.handle_failed_batch(batch.tp, batch.base_sequence, batch.record_count,
                                         batch.producer_epoch, exc, False)
            self._acc.fail(batch, exc)

