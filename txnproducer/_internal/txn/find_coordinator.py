"""FindCoordinator (key 10): locate the transaction coordinator or a consumer group's coordinator.

Versions: v6 preferred (``versions.PREFERRED_VERSIONS``); v4+ asks with ``coordinator_keys`` (a
batch of one), older versions with ``key``. Sent to the least-loaded broker, never to a
coordinator. Errors: retriable codes are retried after ``retry_backoff_ms``;
TRANSACTIONAL_ID_AUTHORIZATION_FAILED is fatal; GROUP_AUTHORIZATION_FAILED makes the transaction
abortable (for ``send_offsets_to_transaction``); anything else is unexpected and fatal.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

from txnproducer._internal.protocol.error_codes import (
    GROUP_AUTHORIZATION_FAILED,
    NONE,
    TRANSACTION_ABORTABLE,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    is_retriable,
)
from txnproducer._internal.txn.error_policy import group_authorization_error
from txnproducer._internal.txn.handler import Priority, TxnContext, TxnRequestHandler
from txnproducer._internal.txn.result import TransactionalRequestResult


class FindCoordinatorHandler(TxnRequestHandler):
    """Locates the transaction coordinator (key = transactional id) or a group coordinator."""

    priority = Priority.FIND_COORDINATOR
    api_name = "FindCoordinator"

    def __init__(
        self, tm: TxnContext, result: TransactionalRequestResult, key_type: str, key: str
    ) -> None:
        super().__init__(tm, result)
        self.key_type = key_type
        self.key = key

    @property
    def coordinator_type(self) -> str | None:
        return None

    def looks_up(self, coordinator_type: str, key: str) -> bool:
        return self.key_type == coordinator_type and self.key == key

    @property
    def coordinator_key(self) -> str:
        return self.key

    def build_request(self) -> Any:
        version = self.version(FindCoordinatorRequest)
        key_type = 1 if self.key_type == "transaction" else 0
        if version >= 4:
            return FindCoordinatorRequest(version=version, key_type=key_type, coordinator_keys=[self.key])
        return FindCoordinatorRequest(version=version, key=self.key, key_type=key_type)

    def on_response(self, response: Any) -> None:
        coordinators = getattr(response, "coordinators", None)
        data = coordinators[0] if coordinators else response
        code = int(data.error_code)
        if code == NONE:
            self._tm.coordinator_found(self.key_type, self.key, int(data.node_id), data.host, int(data.port))
            self.result.set_success()
        elif is_retriable(code):
            self.retry_for(code)
        elif code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            self.handle_common(code)
        elif code == GROUP_AUTHORIZATION_FAILED:
            self.abortable_error(group_authorization_error(self.key))
        elif code == TRANSACTION_ABORTABLE:
            self.handle_common(code)
        else:
            self.unexpected(code, getattr(data, "error_message", None))
