"""AddOffsetsToTxn (key 25): TV1 only - add a consumer group's offsets partition to the transaction.

Versions: v3 under TV1 (v4 is advertised with TV2, where TxnOffsetCommit v5 goes to the group
coordinator directly and this request is skipped). On success the offsets themselves follow in a
TxnOffsetCommit to the group coordinator, completing the same result. Errors:
GROUP_AUTHORIZATION_FAILED makes the transaction abortable (GroupAuthorizationError), as in the
Java client; the rest as
:meth:`~txnproducer._internal.txn.handler.TxnRequestHandler.handle_common`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka.protocol.producer.transaction import AddOffsetsToTxnRequest
from kafka.structs import OffsetAndMetadata, TopicPartition

from txnproducer._internal.protocol.error_codes import (
    GROUP_AUTHORIZATION_FAILED,
    NONE,
)
from txnproducer._internal.txn.error_policy import group_authorization_error
from txnproducer._internal.txn.handler import TxnContext, TxnRequestHandler
from txnproducer._internal.txn.offsets import group_fields
from txnproducer._internal.txn.result import TransactionalRequestResult
from txnproducer._internal.txn.txn_offset_commit import TxnOffsetCommitHandler


class AddOffsetsToTxnHandler(TxnRequestHandler):
    """TV1: adds the group's __consumer_offsets partition to the transaction, then commits offsets."""

    api_name = "AddOffsetsToTxn"

    def __init__(
        self,
        tm: TxnContext,
        result: TransactionalRequestResult,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        group_metadata: Any,
    ) -> None:
        super().__init__(tm, result)
        self.offsets = dict(offsets)
        self.group_metadata = group_metadata
        self.group_id = group_fields(group_metadata)[0]

    def build_request(self) -> Any:
        pid = self._tm.producer_id_and_epoch
        return AddOffsetsToTxnRequest(
            version=self.version(AddOffsetsToTxnRequest),
            transactional_id=self._tm.transactional_id,
            producer_id=pid.producer_id,
            producer_epoch=pid.epoch,
            group_id=self.group_id,
        )

    def on_response(self, response: Any) -> None:
        code = int(response.error_code)
        if code == NONE:
            self._tm.offsets_added(self)
            self._tm.enqueue(TxnOffsetCommitHandler(self._tm, self.result, self.offsets, self.group_metadata))
        elif code == GROUP_AUTHORIZATION_FAILED:
            self.abortable_error(group_authorization_error(self.group_id))
        else:
            self.handle_common(code)
