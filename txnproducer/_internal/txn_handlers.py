"""One handler class per transactional request type, and the error-code policy of each.

Why: the Java client's TransactionManager decides what every coordinator error means per request
type (KIP-98, KIP-360, KIP-588, KIP-890, KIP-1050). Keeping each request's build + response
handling in its own small class makes that table readable and testable. A handler is created by
the :class:`~txnproducer._internal.transaction_manager.TransactionManager`, queued by priority,
handed to the Sender by ``next_request()``, and completed through ``handle_response()`` or
``fail()``. All handler methods run under the transaction manager's lock.

The request object is built when the Sender takes the handler (``prepare()``), so the version
follows the transaction version and the broker's ApiVersions known at that moment.
"""

from __future__ import annotations

import enum
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import kafka.errors as kerrors
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)
from kafka.structs import OffsetAndMetadata, TopicPartition

from .. import errors
from .txn_result import TransactionalRequestResult

if TYPE_CHECKING:
    from .transaction_manager import TransactionManager


class Priority(enum.IntEnum):
    """Send order: find the coordinator first, then the producer id, ... EndTxn last, except a
    KIP-360 epoch bump, which must follow the EndTxn(abort) it recovers from."""

    FIND_COORDINATOR = 0
    INIT_PRODUCER_ID = 1
    ADD_PARTITIONS_OR_OFFSETS = 2
    END_TXN = 3
    EPOCH_BUMP = 4


# Kafka protocol error codes used below (names as in Apache Kafka's Errors enum).
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
REQUEST_TIMED_OUT = 7
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_VERSION = 35
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
OPERATION_NOT_ATTEMPTED = 55
UNKNOWN_PRODUCER_ID = 59
FENCED_INSTANCE_ID = 82
PRODUCER_FENCED = 90
TRANSACTION_ABORTABLE = 120

_COORDINATOR_MOVED = frozenset({COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR})

# The request versions this client speaks per transaction version, capped at send time by the
# broker's ApiVersions (``max_versions``). TV1 matches the pre-KIP-890 exchange recorded against
# Kafka 4.1 (tv1_commit_flow.json); TV2 the KIP-890 part 2 one (tv2_commit_flow.json).
PREFERRED_VERSIONS: dict[int, dict[int, int]] = {
    1: {
        FindCoordinatorRequest.API_KEY: 6,
        InitProducerIdRequest.API_KEY: 4,
        AddPartitionsToTxnRequest.API_KEY: 3,
        AddOffsetsToTxnRequest.API_KEY: 3,
        TxnOffsetCommitRequest.API_KEY: 3,
        EndTxnRequest.API_KEY: 4,
    },
    2: {
        FindCoordinatorRequest.API_KEY: 6,
        InitProducerIdRequest.API_KEY: 5,
        AddPartitionsToTxnRequest.API_KEY: 3,  # v4+ is broker-to-broker only
        AddOffsetsToTxnRequest.API_KEY: 4,
        TxnOffsetCommitRequest.API_KEY: 5,
        EndTxnRequest.API_KEY: 5,
    },
}
# TV2 semantics need these versions; a broker offering less is driven with TV1.
TV2_REQUIRED_VERSIONS: dict[int, int] = {EndTxnRequest.API_KEY: 5, TxnOffsetCommitRequest.API_KEY: 5}


def choose_version(request_cls: Any, tv: int, max_versions: Callable[[int], int | None] | None) -> int:
    """``PREFERRED_VERSIONS[tv]`` capped by the broker's max (``max_versions``) and the class's range."""
    api_key = int(request_cls.API_KEY)
    version = PREFERRED_VERSIONS[2 if tv >= 2 else 1][api_key]
    if max_versions is not None:
        broker_max = max_versions(api_key)
        if broker_max is not None:
            version = min(version, broker_max)
    return max(int(request_cls.min_version), min(version, int(request_cls.max_version)))


def error_name(code: int) -> str:
    """Apache Kafka's name for an error code (kafka-python's, with its few differences)."""
    return str(kerrors.for_code(code).message)


def is_retriable(code: int) -> bool:
    return bool(kerrors.for_code(code).retriable)


class TxnRequestHandler:
    """Base: one queued transactional request, its result, and its retry bookkeeping."""

    priority: Priority = Priority.ADD_PARTITIONS_OR_OFFSETS
    is_end_txn: bool = False
    api_name: str = "?"

    def __init__(self, tm: TransactionManager, result: TransactionalRequestResult) -> None:
        self._tm = tm
        self.result = result
        self.is_retry = False
        self.attempts = 0
        # monotonic seconds before which the Sender must not send this handler (retry backoff)
        self.not_before = 0.0
        self.retry_backoff_ms = 0
        self._request: Any = None

    # --- what the Sender reads ---------------------------------------------------------------

    @property
    def coordinator_type(self) -> str | None:
        """``"transaction"``, ``"group"`` or ``None`` (any broker will do)."""
        return "transaction"

    @property
    def coordinator_key(self) -> str:
        return self._tm.transactional_id

    @property
    def request(self) -> Any:
        """The kafka-python request object, version already chosen (built by ``prepare``)."""
        if self._request is None:
            self.prepare()
        return self._request

    def prepare(self) -> None:
        """(Re)build the request for the current transaction version and broker versions."""
        self._request = self.build_request()

    def build_request(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    # --- completion (Sender thread) ----------------------------------------------------------

    def handle_response(self, response: Any) -> None:
        """Process the decoded response; may re-enqueue this handler or enqueue follow-ups."""
        with self._tm._lock:
            self._tm._request_finished(self)
            if self._tm._closed:
                return
            try:
                self.on_response(response)
            except Exception as exc:  # a malformed answer must not leave callers waiting forever
                self.fatal_error(
                    errors.FatalError(
                        f"could not process the {self.api_name} response ({type(exc).__name__}: {exc});"
                        " close the producer"
                    )
                )
        if self.result.done():
            # Hand the GIL to the application thread waiting on this result (commit_transaction,
            # ...) now, with the TM lock released. Otherwise it runs only once the Sender blocks in
            # its next network poll: about 0.2 ms more per commit, measured on Kafka 4.1.0.
            time.sleep(0)

    def fail(self, exc: BaseException) -> None:
        """The request could not be completed on the wire (disconnect, timeout, no node).

        A FatalError (e.g. the broker does not support the version) ends the producer; anything
        else is retried after the backoff, rediscovering the coordinator first.
        """
        with self._tm._lock:
            self._tm._request_finished(self)
            if self._tm._closed:
                return
            if isinstance(exc, errors.FatalError):
                self.fatal_error(exc)
                return
            self._tm._log_debug("txn.request_failed", api=self.api_name, error=repr(exc))
            if self.coordinator_type is not None:
                self._tm.lookup_coordinator(self.coordinator_type, self.coordinator_key)
            self.reenqueue()

    def on_response(self, response: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # --- helpers for subclasses --------------------------------------------------------------

    def reenqueue(self, backoff_ms: float | None = None) -> None:
        self._tm._reenqueue(self, self._tm.retry_backoff_ms if backoff_ms is None else backoff_ms)

    def retry_for(self, code: int) -> None:
        """Re-send after the right backoff: CONCURRENT_TRANSACTIONS uses the short one."""
        if code == CONCURRENT_TRANSACTIONS:
            self.reenqueue(self._tm.transaction_retry_backoff_ms)
        else:
            self.reenqueue()

    def fatal_error(self, exc: errors.TxnProducerError | BaseException) -> None:
        self._tm._fatal_from_handler(self, exc)

    def abortable_error(self, exc: BaseException, *, bump_epoch: bool = False) -> None:
        self._tm._abortable_from_handler(self, exc, bump_epoch=bump_epoch)

    def fenced(self, code: int) -> None:
        self.fatal_error(self._tm._fenced_error(code, self.api_name))

    def unexpected(self, code: int, message: str | None = None) -> None:
        detail = f": {message}" if message else ""
        self.fatal_error(
            errors.FatalError(
                f"unexpected error {error_name(code)} ({code}) in the {self.api_name} response"
                f"{detail}; close the producer",
                error_code=code,
            )
        )

    def handle_common(self, code: int, message: str | None = None) -> None:
        """The errors every transaction-coordinator request treats alike (after its own cases)."""
        tm = self._tm
        if code in _COORDINATOR_MOVED:
            tm.lookup_coordinator("transaction", tm.transactional_id)
            self.reenqueue()
        elif is_retriable(code):
            self.retry_for(code)
        elif code in (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED):
            # Java maps INVALID_PRODUCER_EPOCH from the coordinator to PRODUCER_FENCED (KIP-588)
            self.fenced(code)
        elif code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            self.fatal_error(
                errors.TransactionalIdAuthorizationError(
                    f"the principal is not allowed to use transactional_id {tm.transactional_id!r}"
                    f" ({self.api_name}): grant it WRITE/DESCRIBE on the TransactionalId, then create"
                    " a new producer",
                    error_code=code,
                )
            )
        elif code == CLUSTER_AUTHORIZATION_FAILED:
            self.fatal_error(
                errors.FatalError(
                    "the principal lacks IDEMPOTENT_WRITE/cluster authorization"
                    f" ({self.api_name}): fix the ACLs, then create a new producer",
                    error_code=code,
                )
            )
        elif code == UNSUPPORTED_VERSION:
            self.fatal_error(
                errors.UnsupportedVersionError(
                    f"the broker does not support {self.api_name} version"
                    f" {getattr(self._request, 'version', '?')}: transactions need Kafka >= 0.11"
                    " (TV2 needs transaction.version=2); close the producer",
                    error_code=code,
                )
            )
        elif code == INVALID_TXN_STATE:
            self.fatal_error(
                errors.InvalidTxnStateError(
                    f"the coordinator answered INVALID_TXN_STATE to {self.api_name}: it has no"
                    " matching transaction (it may have been aborted after transaction_timeout_ms);"
                    " close the producer",
                    error_code=code,
                )
            )
        elif code == INVALID_PRODUCER_ID_MAPPING:
            self.fatal_error(
                errors.FatalError(
                    f"the coordinator no longer maps transactional_id {tm.transactional_id!r} to"
                    f" producer id {tm.producer_id_and_epoch.producer_id} (INVALID_PRODUCER_ID_MAPPING,"
                    " e.g. transactional.id.expiration.ms passed); close the producer and create a"
                    " new one",
                    error_code=code,
                )
            )
        elif code == UNKNOWN_PRODUCER_ID:
            self.abortable_error(
                errors.UnknownProducerIdError(
                    f"the coordinator does not know this producer ({self.api_name}): call"
                    " abort_transaction(); the producer recovers with a new epoch",
                    error_code=code,
                ),
                bump_epoch=True,
            )
        elif code == TRANSACTION_ABORTABLE:
            self.abortable_error(
                errors.TransactionAbortableError(
                    f"the coordinator answered TRANSACTION_ABORTABLE to {self.api_name}: call"
                    " abort_transaction() and start a new transaction",
                    error_code=code,
                )
            )
        else:
            self.unexpected(code, message)


class FindCoordinatorHandler(TxnRequestHandler):
    """Locates the transaction coordinator (key = transactional id) or a group coordinator."""

    priority = Priority.FIND_COORDINATOR
    api_name = "FindCoordinator"

    def __init__(
        self, tm: TransactionManager, result: TransactionalRequestResult, key_type: str, key: str
    ) -> None:
        super().__init__(tm, result)
        self.key_type = key_type
        self.key = key

    @property
    def coordinator_type(self) -> str | None:
        return None

    @property
    def coordinator_key(self) -> str:
        return self.key

    def build_request(self) -> Any:
        version = self._tm._version_for(FindCoordinatorRequest)
        key_type = 1 if self.key_type == "transaction" else 0
        if version >= 4:
            return FindCoordinatorRequest(version=version, key_type=key_type, coordinator_keys=[self.key])
        return FindCoordinatorRequest(version=version, key=self.key, key_type=key_type)

    def on_response(self, response: Any) -> None:
        coordinators = getattr(response, "coordinators", None)
        data = coordinators[0] if coordinators else response
        code = int(data.error_code)
        if code == NONE:
            self._tm._coordinator_found(self.key_type, self.key, int(data.node_id), data.host, int(data.port))
            self.result.set_success()
        elif is_retriable(code):
            self.retry_for(code)
        elif code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            self.handle_common(code)
        elif code == GROUP_AUTHORIZATION_FAILED:
            self.fatal_error(self._tm._group_authorization_error(self.key))
        elif code == TRANSACTION_ABORTABLE:
            self.handle_common(code)
        else:
            self.unexpected(code, getattr(data, "error_message", None))


class InitProducerIdHandler(TxnRequestHandler):
    """Gets (or, with the current id/epoch, bumps - KIP-360) the producer id and epoch."""

    api_name = "InitProducerId"

    def __init__(
        self,
        tm: TransactionManager,
        result: TransactionalRequestResult,
        *,
        epoch_bump: bool,
        producer_id: int = -1,
        producer_epoch: int = -1,
        keep_prepared_txn: bool = False,
    ) -> None:
        super().__init__(tm, result)
        self.epoch_bump = epoch_bump
        self.priority = Priority.EPOCH_BUMP if epoch_bump else Priority.INIT_PRODUCER_ID
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        # KIP-939: keep an ongoing (prepared) transaction instead of aborting it (never on a bump)
        self.keep_prepared_txn = keep_prepared_txn and not epoch_bump

    def build_request(self) -> Any:
        tm = self._tm
        if tm.enable_2pc:
            # KIP-939: Enable2Pc/KeepPreparedTxn exist only in v6, which brokers advertise only with
            # transaction.two.phase.commit.enable; silently dropping them would lose the semantics
            broker_max = tm._max_versions(InitProducerIdRequest.API_KEY) if tm._max_versions else None
            if broker_max is not None and broker_max < 6:
                raise errors.UnsupportedVersionError(
                    f"enable_2pc needs InitProducerId v6 (KIP-939) but the broker supports only up to"
                    f" v{broker_max}: enable transaction.two.phase.commit.enable on the brokers, or drop"
                    " enable_2pc and complete prepared transactions with complete_transaction(state)"
                    " on an uninitialized producer",
                    error_code=UNSUPPORTED_VERSION,
                )
            return InitProducerIdRequest(
                version=6,
                transactional_id=tm.transactional_id,
                transaction_timeout_ms=tm.transaction_timeout_ms,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                enable2_pc=True,
                keep_prepared_txn=self.keep_prepared_txn,
            )
        return InitProducerIdRequest(
            version=tm._version_for(InitProducerIdRequest),
            transactional_id=tm.transactional_id,
            transaction_timeout_ms=tm.transaction_timeout_ms,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
        )

    def prepare(self) -> None:
        try:
            super().prepare()
        except errors.UnsupportedVersionError as exc:
            self._request = None
            self.fatal_error(exc)
            raise

    def on_response(self, response: Any) -> None:
        code = int(response.error_code)
        if code == NONE:
            ongoing = (-1, -1)
            if self.keep_prepared_txn:
                ongoing_pid = getattr(response, "ongoing_txn_producer_id", None)
                ongoing_epoch = getattr(response, "ongoing_txn_producer_epoch", None)
                if ongoing_pid is not None and ongoing_epoch is not None:
                    ongoing = (int(ongoing_pid), int(ongoing_epoch))
            self._tm._producer_id_received(
                int(response.producer_id), int(response.producer_epoch), self, ongoing=ongoing
            )
            self.result.set_success()
        elif code == INVALID_TRANSACTION_TIMEOUT:
            self.fatal_error(
                errors.FatalError(
                    f"transaction_timeout_ms={self._tm.transaction_timeout_ms} was rejected by the"
                    " broker (INVALID_TRANSACTION_TIMEOUT): it must be > 0 and <="
                    " transaction.max.timeout.ms (default 900000); fix the config",
                    error_code=code,
                )
            )
        elif code in (TRANSACTION_ABORTABLE, UNKNOWN_PRODUCER_ID):
            # no transaction to abort while initializing: nothing the application can do but restart
            self.unexpected(code)
        else:
            self.handle_common(code)


class AddPartitionsToTxnHandler(TxnRequestHandler):
    """TV1: registers the transaction's new partitions with the coordinator (v3 and below)."""

    api_name = "AddPartitionsToTxn"

    def __init__(
        self, tm: TransactionManager, result: TransactionalRequestResult, partitions: set[TopicPartition]
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
            version=self._tm._version_for(AddPartitionsToTxnRequest),
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
                code in _COORDINATOR_MOVED
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
        self._tm._partitions_add_finished(self.partitions, success=not unauthorized and not other_errors)
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


def group_fields(group_metadata: Any) -> tuple[str, int, str, str | None]:
    """(group_id, generation_id, member_id, group_instance_id) from ConsumerGroupMetadata or a str."""
    if isinstance(group_metadata, str):
        return group_metadata, -1, "", None
    group_id = getattr(group_metadata, "group_id", None)
    if not isinstance(group_id, str) or not group_id:
        raise TypeError(
            "group_metadata must be a consumer's group_metadata() (ConsumerGroupMetadata) or a group id"
            f" string, got {group_metadata!r}"
        )
    generation = getattr(group_metadata, "generation_id", -1)
    member = getattr(group_metadata, "member_id", "") or ""
    instance = getattr(group_metadata, "group_instance_id", None)
    return group_id, -1 if generation is None else int(generation), str(member), instance


def normalize_offsets(offsets: Mapping[Any, Any]) -> dict[TopicPartition, OffsetAndMetadata]:
    """Validate ``{TopicPartition: OffsetAndMetadata | int}`` up front, in the application thread,
    so that a bad value raises where it was passed instead of inside the Sender."""
    if not isinstance(offsets, Mapping):
        raise TypeError(f"offsets must be a mapping of TopicPartition to OffsetAndMetadata, got {offsets!r}")
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, om in offsets.items():
        topic, partition = getattr(tp, "topic", None), getattr(tp, "partition", None)
        if not isinstance(topic, str) or not isinstance(partition, int):
            raise TypeError(f"offsets keys must be TopicPartition(topic, partition), got {tp!r}")
        if isinstance(om, int):
            om = OffsetAndMetadata(om, "", -1)
        offset = getattr(om, "offset", None)
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset for {topic}-{partition} must be an int >= 0, got {om!r}")
        metadata = getattr(om, "metadata", "")
        leader_epoch = getattr(om, "leader_epoch", -1)
        if metadata is not None and not isinstance(metadata, str):
            raise TypeError(f"metadata for {topic}-{partition} must be a str or None, got {metadata!r}")
        if leader_epoch is not None and not isinstance(leader_epoch, int):
            raise TypeError(
                f"leader_epoch for {topic}-{partition} must be an int or None, got {leader_epoch!r}"
            )
        out[TopicPartition(topic, partition)] = OffsetAndMetadata(
            offset, metadata, -1 if leader_epoch is None else leader_epoch
        )
    return out


class AddOffsetsToTxnHandler(TxnRequestHandler):
    """TV1: adds the group's __consumer_offsets partition to the transaction, then commits offsets."""

    api_name = "AddOffsetsToTxn"

    def __init__(
        self,
        tm: TransactionManager,
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
            version=self._tm._version_for(AddOffsetsToTxnRequest),
            transactional_id=self._tm.transactional_id,
            producer_id=pid.producer_id,
            producer_epoch=pid.epoch,
            group_id=self.group_id,
        )

    def on_response(self, response: Any) -> None:
        code = int(response.error_code)
        if code == NONE:
            self._tm._offsets_added(self)
        elif code == GROUP_AUTHORIZATION_FAILED:
            self.fatal_error(self._tm._group_authorization_error(self.group_id))
        else:
            self.handle_common(code)


class TxnOffsetCommitHandler(TxnRequestHandler):
    """Stages the consumer offsets in the group coordinator as part of the transaction."""

    api_name = "TxnOffsetCommit"

    def __init__(
        self,
        tm: TransactionManager,
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
            version=self._tm._version_for(TxnOffsetCommitRequest),
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
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, int(p.partition_index))
                code = int(p.error_code)
                if code == NONE:
                    self.pending.pop(tp, None)
                elif code in _COORDINATOR_MOVED or code == REQUEST_TIMED_OUT:
                    if not rediscovered:
                        rediscovered = True
                        self._tm.lookup_coordinator("group", self.group_id)
                elif is_retriable(code):
                    continue  # e.g. UNKNOWN_TOPIC_OR_PARTITION, COORDINATOR_LOAD_IN_PROGRESS: retry
                elif code == GROUP_AUTHORIZATION_FAILED:
                    self.fatal_error(self._tm._group_authorization_error(self.group_id))
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
            self._tm._offsets_committed(self)
            self.result.set_success()
        else:
            self.reenqueue()


def _end_txn_request(tm: TransactionManager, producer_id: int, epoch: int, committed: bool) -> Any:
    """EndTxn for (producer id, epoch): the producer's own transaction or a recorded prepared one."""
    return EndTxnRequest(
        version=tm._version_for(EndTxnRequest),
        transactional_id=tm.transactional_id,
        producer_id=producer_id,
        producer_epoch=epoch,
        committed=committed,
    )


class EndTxnHandler(TxnRequestHandler):
    """Commits or aborts; under TV2 (v5) the answer carries the producer id/epoch to use next."""

    priority = Priority.END_TXN
    is_end_txn = True
    api_name = "EndTxn"

    def __init__(self, tm: TransactionManager, result: TransactionalRequestResult, committed: bool) -> None:
        super().__init__(tm, result)
        self.committed = committed
        pid = tm.producer_id_and_epoch
        # captured now: a TV2 retry must repeat the pre-bump epoch (the coordinator answers a
        # retried EndTxn with the bumped id/epoch - conformance errors.json case e)
        self.producer_id = pid.producer_id
        self.producer_epoch = pid.epoch
        # the identity of the prepared transaction this EndTxn completes (None: an ordinary one)
        self.prepared: tuple[int, int] | None = tm._prepared_identity()

    def build_request(self) -> Any:
        return _end_txn_request(self._tm, self.producer_id, self.producer_epoch, self.committed)

    def on_response(self, response: Any) -> None:
        code = int(response.error_code)
        if code == NONE:
            new_pid = int(getattr(response, "producer_id", -1))
            new_epoch = int(getattr(response, "producer_epoch", -1))
            self._tm._transaction_ended(self, new_pid, new_epoch)
            self.result.set_success()
        elif self.committed and self.prepared is not None and code in LOST_PREPARED_CODES:
            pid, epoch = self.prepared
            self.fatal_error(prepared_lost_error(self._tm.transactional_id, pid, epoch, code))
        else:
            self.handle_common(code)


# What the coordinator answers to a commit of a prepared transaction it no longer has open.
LOST_PREPARED_CODES = frozenset(
    {INVALID_TXN_STATE, PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING}
)


def prepared_lost_error(
    transactional_id: str, producer_id: int, epoch: int, code: int
) -> errors.PreparedTransactionLostError:
    """The error for a commit of a prepared transaction the coordinator already ended.

    The broker keeps no history, so the answer code is what tells why: INVALID_TXN_STATE (TV2) -
    the transaction was aborted; PRODUCER_FENCED / INVALID_PRODUCER_EPOCH - a newer epoch exists
    (the coordinator aborted it on timeout, or a producer initialized without keep_prepared_txn);
    INVALID_PRODUCER_ID_MAPPING - the transactional id now maps to another producer id (expired).
    """
    what = (
        f"prepared transaction of transactional_id {transactional_id!r} (producer id {producer_id},"
        f" epoch {epoch})"
    )
    if code == INVALID_TXN_STATE:
        why = (
            "the coordinator already aborted it (INVALID_TXN_STATE): it ran past transaction_timeout_ms"
            " or was aborted explicitly"
        )
    elif code == INVALID_PRODUCER_ID_MAPPING:
        why = (
            "the coordinator no longer maps the transactional id to that producer id"
            " (INVALID_PRODUCER_ID_MAPPING: the id expired or was re-created), so the transaction was aborted"
        )
    else:
        why = (
            f"the coordinator has moved past that epoch ({error_name(code)}): it aborted the transaction"
            " when it ran past transaction_timeout_ms, or when another producer with this"
            " transactional id called init_transactions() without keep_prepared_txn (or it was"
            " committed earlier and the transactional id has been used since)"
        )
    return errors.PreparedTransactionLostError(
        f"cannot commit the {what}: {why}. Its records were lost and will never become visible to"
        " read_committed consumers; the data must be written again",
        error_code=code,
    )


class CompletePreparedHandler(TxnRequestHandler):
    """Commits or aborts a prepared transaction recorded elsewhere, by its producer id/epoch.

    This is phase two of a two-phase commit on brokers without KIP-939 (or without it enabled): no
    InitProducerId - that would abort the transaction - just EndTxn with the recorded id/epoch to
    the coordinator. The producer's own state does not change. A repeated commit of a committed
    transaction succeeds (TV1: same epoch, CompleteCommit -> NONE; TV2: the pre-bump epoch is taken
    as a retry -> NONE), which makes phase two idempotent.
    """

    priority = Priority.END_TXN
    api_name = "EndTxn"

    def __init__(
        self, tm: TransactionManager, result: TransactionalRequestResult, producer_id: int, epoch: int,
        committed: bool,
    ) -> None:
        super().__init__(tm, result)
        self.producer_id = producer_id
        self.producer_epoch = epoch
        self.committed = committed

    def build_request(self) -> Any:
        return _end_txn_request(self._tm, self.producer_id, self.producer_epoch, self.committed)

    def on_response(self, response: Any) -> None:
        code = int(response.error_code)
        tm = self._tm
        if code == NONE:
            tm._log_debug("txn.prepared_completed", committed=self.committed,
                          prepared_producer_id=self.producer_id, prepared_epoch=self.producer_epoch)
            self.result.set_success()
        elif code in LOST_PREPARED_CODES and self.committed:
            self.result.set_error(
                prepared_lost_error(tm.transactional_id, self.producer_id, self.producer_epoch, code)
            )
        elif code == INVALID_TXN_STATE:
            self.result.set_error(
                errors.InvalidTxnStateError(
                    f"cannot abort the prepared transaction of transactional_id {tm.transactional_id!r}"
                    f" (producer id {self.producer_id}, epoch {self.producer_epoch}): the coordinator"
                    " answered INVALID_TXN_STATE - it was already committed",
                    error_code=code,
                )
            )
        elif code in LOST_PREPARED_CODES:
            # abort: the coordinator moved past this transaction, so nothing of it can still commit
            tm._log("info", "txn.prepared_already_ended", code=error_name(code),
                    prepared_producer_id=self.producer_id, prepared_epoch=self.producer_epoch)
            self.result.set_success()
        else:
            self.handle_common(code)
