"""TxnOffsetCommit (key 28): stage consumer offsets in the group coordinator as part of the transaction.

Versions: v3 under TV1 (after AddOffsetsToTxn), v5 under TV2 (sent alone: the group coordinator
adds the offsets partition to the transaction itself, KIP-890). Sent to the group's coordinator
with the consumer's generation, member id and group instance id (KIP-447), so that the group
fences the offsets of a zombie consumer. Only the partitions that failed with a retriable error
are sent again; after CONCURRENT_TRANSACTIONS (TV2: the group coordinator adds the offsets partition
to the transaction while the previous transaction's markers are still being written) in
``transaction_retry_backoff_ms``, as every coordinator request (docs/guide/producer.md "Where we differ
from the Java client"). Errors:
ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID make the transaction abortable
(CommitFailedError); GROUP_AUTHORIZATION_FAILED too (GroupAuthorizationError, as the Java client);
INVALID_PRODUCER_EPOCH / PRODUCER_FENCED fence the producer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from kafka.protocol.producer.transaction import TxnOffsetCommitRequest
from kafka.structs import OffsetAndMetadata, TopicPartition

from txnproducer import errors
from txnproducer._internal.protocol.error_codes import (
    CONCURRENT_TRANSACTIONS,
    FENCED_INSTANCE_ID,
    GROUP_AUTHORIZATION_FAILED,
    ILLEGAL_GENERATION,
    INVALID_PRODUCER_EPOCH,
    NONE,
    PRODUCER_FENCED,
    REQUEST_TIMED_OUT,
    TRANSACTION_ABORTABLE,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    UNKNOWN_MEMBER_ID,
    error_name,
    is_retriable,
)
from txnproducer._internal.txn.error_policy import group_authorization_error
from txnproducer._internal.txn.handler import COORDINATOR_MOVED, TxnContext, TxnRequestHandler
from txnproducer._internal.txn.offsets import group_fields
from txnproducer._internal.txn.result import TransactionalRequestResult


class TxnOffsetCommitHandler(TxnRequestHandler):
    """Stages the consumer offsets in the group coordinator as part of the transaction."""

    api_name = "TxnOffsetCommit"

    def __init__(
        self,
        tm: TxnContext,
        result: TransactionalRequestResult,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        group_metadata: Any,
    ) -> None:
        super().__init__(tm, result)
        self.pending = dict(offsets)
        self.group_id, self.generation_id, self.member_id, self.group_instance_id = group_fields(
            group_metadata
        )

    @property
    def coordinator_type(self) -> str | None:
        return "group"

    @property
    def coordinator_key(self) -> str:
        return self.group_id

    def build_request(self) -> Any:
        topic_cls = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
        part_cls = topic_cls.TxnOffsetCommitRequestPartition
        by_topic: dict[str, list[Any]] = defaultdict(list)
        for tp in sorted(self.pending):
            om = self.pending[tp]
            leader_epoch = getattr(om, "leader_epoch", -1)
            by_topic[tp.topic].append(
                part_cls(
                    partition_index=tp.partition,
                    committed_offset=int(om.offset),
                    committed_leader_epoch=-1 if leader_epoch is None else int(leader_epoch),
                    committed_metadata=om.metadata if om.metadata is not None else "",
                )
            )
        pid = self._tm.producer_id_and_epoch
        return TxnOffsetCommitRequest(
            version=self.version(TxnOffsetCommitRequest),
            transactional_id=self._tm.transactional_id,
            group_id=self.group_id,
            producer_id=pid.producer_id,
            producer_epoch=pid.epoch,
            generation_id=self.generation_id,
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            topics=[topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()],
        )

    def on_response(self, response: Any) -> None:
        rediscovered = False
        concurrent = False
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, int(p.partition_index))
                code = int(p.error_code)
                if code == NONE:
                    self.pending.pop(tp, None)
                elif code in COORDINATOR_MOVED or code == REQUEST_TIMED_OUT:
                    if not rediscovered:
                        rediscovered = True
                        self._tm.lookup_coordinator("group", self.group_id)
                elif code == CONCURRENT_TRANSACTIONS:
                    concurrent = True  # TV2: the previous transaction's markers are still being written
                elif is_retriable(code):
                    continue  # e.g. UNKNOWN_TOPIC_OR_PARTITION, COORDINATOR_LOAD_IN_PROGRESS: retry
                elif code == GROUP_AUTHORIZATION_FAILED:
                    self.abortable_error(group_authorization_error(self.group_id))
                    return
                elif code in (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID):
                    self.abortable_error(
                        errors.CommitFailedError(
                            f"the group coordinator rejected the offsets of group {self.group_id!r}"
                            f" ({error_name(code)}): the consumer's group metadata is stale after a"
                            " rebalance. Call abort_transaction(), poll the consumer to rejoin and"
                            " reprocess from the last committed offsets",
                            error_code=code,
                        )
                    )
                    return
                elif code in (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED):
                    self.fenced(code)
                    return
                elif code in (TRANSACTION_ABORTABLE, TRANSACTIONAL_ID_AUTHORIZATION_FAILED):
                    self.handle_common(code)
                    return
                else:
                    self.unexpected(code)
                    return
        if self.result.done():
            return
        if not self.pending:
            self._tm.offsets_committed(self.group_id)
            self.result.set_success()
        elif concurrent:
            self.retry_for(CONCURRENT_TRANSACTIONS)  # transaction_retry_backoff_ms
        else:
            self.reenqueue()
