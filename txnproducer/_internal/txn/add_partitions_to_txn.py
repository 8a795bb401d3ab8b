"""AddPartitionsToTxn (key 24): TV1 only - register the transaction's new partitions with the coordinator.

Versions: v3 and below (v4+ is broker-to-broker, KIP-890). Under TV2 partitions are added
implicitly by Produce v12+ and this request is never sent. The manager batches every partition a
transaction touched since the last request into one request; a partition's batches are drained
only once its add succeeded. Errors per partition: TOPIC_AUTHORIZATION_FAILED makes the
transaction abortable (TopicAuthorizationError); OPERATION_NOT_ATTEMPTED is the collateral of
another partition's error; coordinator moves, retriable codes and the fatal codes go through
:meth:`~txnproducer._internal.txn.handler.TxnRequestHandler.handle_common`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest
from kafka.structs import TopicPartition

from txnproducer import errors
from txnproducer._internal.protocol.error_codes import (
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TXN_STATE,
    NONE,
    OPERATION_NOT_ATTEMPTED,
    PRODUCER_FENCED,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTION_ABORTABLE,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    UNKNOWN_PRODUCER_ID,
    error_name,
    is_retriable,
)
from txnproducer._internal.txn.handler import COORDINATOR_MOVED, TxnContext, TxnRequestHandler
from txnproducer._internal.txn.result import TransactionalRequestResult


class AddPartitionsToTxnHandler(TxnRequestHandler):
    """TV1: registers the transaction's new partitions with the coordinator (v3 and below)."""

    api_name = "AddPartitionsToTxn"

    def __init__(
        self, tm: TxnContext, result: TransactionalRequestResult, partitions: set[TopicPartition]
    ) -> None:
        super().__init__(tm, result)
        self.partitions = set(partitions)

    def build_request(self) -> Any:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in sorted(self.partitions):
            by_topic[tp.topic].append(tp.partition)
        topic_cls = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
        pid = self._tm.producer_id_and_epoch
        return AddPartitionsToTxnRequest(
            version=self.version(AddPartitionsToTxnRequest),
            v3_and_below_transactional_id=self._tm.transactional_id,
            v3_and_below_producer_id=pid.producer_id,
            v3_and_below_producer_epoch=pid.epoch,
            v3_and_below_topics=[topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()],
        )

    def on_response(self, response: Any) -> None:
        results: dict[TopicPartition, int] = {}
        top = int(getattr(response, "error_code", 0) or 0)
        for topic in getattr(response, "results_by_topic_v3_and_below", None) or []:
            for p in topic.results_by_partition:
                results[TopicPartition(topic.name, int(p.partition_index))] = int(p.partition_error_code)
        if top != NONE:
            results = dict.fromkeys(self.partitions, top)
        unauthorized: set[str] = set()
        other_errors: dict[TopicPartition, str] = {}
        for tp, code in results.items():
            if code == NONE:
                continue
            if (
                code in COORDINATOR_MOVED
                or is_retriable(code)
                or code
                in (
                    INVALID_PRODUCER_EPOCH,
                    PRODUCER_FENCED,
                    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    INVALID_TXN_STATE,
                    UNKNOWN_PRODUCER_ID,
                    INVALID_PRODUCER_ID_MAPPING,
                    TRANSACTION_ABORTABLE,
                )
            ):
                self.handle_common(code)
                return
            if code == TOPIC_AUTHORIZATION_FAILED:
                unauthorized.add(tp.topic)
            elif code != OPERATION_NOT_ATTEMPTED:
                other_errors[tp] = error_name(code)
            else:
                other_errors.setdefault(tp, error_name(code))
        self._tm.partitions_added(self.partitions, success=not unauthorized and not other_errors)
        if unauthorized:
            self.abortable_error(
                errors.TopicAuthorizationError(
                    f"not authorized to write to topic(s) {sorted(unauthorized)}: call"
                    " abort_transaction(), fix the ACLs and retry",
                    error_code=TOPIC_AUTHORIZATION_FAILED,
                )
            )
        elif other_errors:
            detail = ", ".join(
                f"{tp.topic}-{tp.partition}: {name}" for tp, name in sorted(other_errors.items())
            )
            self.abortable_error(
                errors.AbortableError(
                    f"could not add partitions to the transaction ({detail}): call abort_transaction()"
                    " and start a new transaction"
                )
            )
        else:
            self.result.set_success()
