"""The MockCluster's transaction coordinator: Kafka 4.x ``TransactionCoordinator`` semantics.

It decides what InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
DescribeTransactions and ListTransactions do, and gives the Produce handler the partition-leader side
of KIP-890 (``verify_produce``: TV1 verification, TV2 implicit add). The wire side - placement checks,
fields and error codes per version - is the handler modules' (``handlers/end_txn.py`` and its siblings);
this module never imports them. The rules follow the broker's
``TransactionCoordinator``/``TransactionMetadata``; where the broker's behaviour is only visible in
the Kafka 4.1.0 conformance recordings (``shared/conformance/kafka-4.1.0``), the recordings win:

* a coordinator-side abort of an ongoing transaction (InitProducerId fencing, timeout) under TV2
  bumps the epoch once and remembers the old epoch as the "last" epoch, so that the fenced-out
  producer's KIP-360 InitProducerId(pid, old epoch) is answered as a retry (no second bump);
* TV2 EndTxn (v5) bumps the epoch at every transaction end, recognises retries of a lost answer by
  "request epoch + 1 == current epoch", and rotates to a new producer id when the epoch runs out
  (the marker still carries the old id at epoch 32767);
* TV1 keeps the epoch across transactions and refuses retries with a stale epoch.

Markers are written synchronously inside EndTxn unless held (``hold_markers``), so a test sees
CONCURRENT_TRANSACTIONS only when it asks for it. Every method runs with ``state.lock`` held (the
handlers are called that way; the public methods take the lock themselves, it is re-entrant).
"""

from __future__ import annotations

from collections.abc import Iterable

from txnproducer._internal.protocol import error_codes as ec

from .txn_coordinator_host import CoordinatorHost
from .txn_metadata import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    OFFSETS_TOPIC,
    PREPARE_STATES,
    TransactionMetadata,
    TxnState,
    is_epoch_exhausted,
    offsets_partition_for,
)

__all__ = ["FIRST_PRODUCER_ID", "CoordinatorHost", "TransactionCoordinator"]

FIRST_PRODUCER_ID = 1000


NOT_ADDED_MESSAGE = "Partition was not added to the transaction"


def _verification_error(error: int, tv2: bool) -> int:
    """How the partition leader passes a coordinator answer on to the producer (Kafka's ReplicaManager).

    PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH; an unreachable coordinator becomes
    NOT_ENOUGH_REPLICAS (retriable, no metadata refresh); CONCURRENT_TRANSACTIONS does too on the TV1
    verification path, while the TV2 add path (after ~100 ms of server-side retries) returns it as is.
    """
    if error == ec.PRODUCER_FENCED:
        return ec.INVALID_PRODUCER_EPOCH
    if error in (ec.NOT_COORDINATOR, ec.COORDINATOR_NOT_AVAILABLE):
        return ec.NOT_ENOUGH_REPLICAS
    if error == ec.CONCURRENT_TRANSACTIONS and not tv2:
        return ec.NOT_ENOUGH_REPLICAS
    return error


class TransactionCoordinator:
    """All transactional ids of the cluster (one coordinator object; placement is checked by handlers)."""

    def __init__(self, state: CoordinatorHost, first_producer_id: int = FIRST_PRODUCER_ID,
                 kafka_20090_fixed: bool = False) -> None:
        self._state = state
        # Kafka after KAFKA-20090: an abort the coordinator makes of its own at an exhausted epoch
        # (timeout, fencing) rotates the producer id. Kafka 4.0/4.1 (the default here) do not: the
        # fenced producer's retried abort gets the last epoch, 32767, and a transaction begun there
        # can never end (see ``_end_tv2_now``).
        self._rotate_fenced_exhausted = kafka_20090_fixed
        self._txns: dict[str, TransactionMetadata] = {}
        self._by_producer_id: dict[int, str] = {}
        self._next_producer_id = first_producer_id
        self._hold_all = False
        self._held_ids: set[str] = set()

    # ------------------------------------------------------------------ helpers
    def allocate_producer_id(self) -> int:
        """A fresh producer id (ids only grow, as the broker's ProducerIdManager hands them out)."""
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid

    def _now(self) -> int:
        return int(self._state.now_ms())

    def _set_producer(self, md: TransactionMetadata, producer_id: int, epoch: int) -> None:
        if md.producer_id != producer_id:
            self._by_producer_id.pop(md.producer_id, None)
        md.prev_producer_id = md.producer_id
        md.producer_id = producer_id
        md.producer_epoch = epoch
        self._by_producer_id[producer_id] = md.transactional_id

    def _changed(self) -> None:
        self._state.notify_all()

    def metadata(self, transactional_id: str) -> TransactionMetadata | None:
        """The raw metadata (tests and fault injection); None if the id was never initialised."""
        return self._txns.get(transactional_id)

    def _lookup(self, transactional_id: str | None, producer_id: int) -> TransactionMetadata | None:
        if transactional_id is not None:
            return self._txns.get(transactional_id)
        tid = self._by_producer_id.get(producer_id)
        return None if tid is None else self._txns.get(tid)

    # ------------------------------------------------------------ InitProducerId
    def init_producer_id(self, transactional_id: str | None, timeout_ms: int, producer_id: int,
                         producer_epoch: int, enable_2pc: bool = False,
                         keep_prepared_txn: bool = False) -> tuple[int, int, int]:
        """InitProducerId: returns (error, producer id, epoch); see the module docstring for the rules."""
        return self.init_producer_id_v6(transactional_id, timeout_ms, producer_id, producer_epoch,
                                        enable_2pc, keep_prepared_txn)[:3]

    def init_producer_id_v6(self, transactional_id: str | None, timeout_ms: int, producer_id: int,
                            producer_epoch: int, enable_2pc: bool = False,
                            keep_prepared_txn: bool = False) -> tuple[int, int, int, int, int]:
        """InitProducerId with the KIP-939 fields: (error, producer id, epoch, ongoing producer id,
        ongoing epoch); the last two are -1 unless ``keep_prepared_txn`` kept an ongoing transaction.

        2PC (``enable_2pc``) is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED unless the cluster
        enables it (``MockCluster(enable_2pc=True)``, Kafka's ``transaction.two.phase.commit.enable``)
        - the broker answers that, not an UNSUPPORTED_* code, so a client cannot probe the setting.
        A 2PC transaction is never aborted by the transaction timeout (Kafka uses Int.MaxValue).
        ``keep_prepared_txn`` keeps an ongoing transaction: the epoch is bumped (fencing the old
        instance) but the transaction stays Ongoing with its partitions, and the answer names the
        producer id/epoch it was started with, so the new instance can commit or abort it.
        """
        none = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        with self._state.lock:
            if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
                return (ec.INVALID_REQUEST, *none, *none)
            expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
            if transactional_id is None:
                # idempotent producer: always a brand-new id (even when it asks for a KIP-360 bump)
                return (ec.NONE, self.allocate_producer_id(), 0, *none)
            if transactional_id == "":
                return (ec.INVALID_REQUEST, *none, *none)
            if enable_2pc or keep_prepared_txn:
                if not getattr(self._state, "settings", {}).get("enable_2pc", False):
                    # the recorded broker (2PC off) refuses enable_2pc this way
                    return (ec.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, *none, *none)
                if keep_prepared_txn and not enable_2pc:
                    return (ec.INVALID_REQUEST, *none, *none)
            elif not 0 < timeout_ms <= self._state.transaction_max_timeout_ms:
                return (ec.INVALID_TRANSACTION_TIMEOUT, *none, *none)
            md = self._txns.get(transactional_id)
            if md is None:
                md = TransactionMetadata(transactional_id, self.allocate_producer_id(), timeout_ms=timeout_ms,
                                         last_update_ms=self._now())
                self._txns[transactional_id] = md
                self._by_producer_id[md.producer_id] = transactional_id
            if keep_prepared_txn and md.state == TxnState.ONGOING:
                return self._keep_ongoing(md, timeout_ms, expected)
            error, pid, epoch = self._init_existing(md, timeout_ms, expected)
            if error == ec.NONE:
                md.two_phase = enable_2pc
            return (error, pid, epoch, *none)

    def _keep_ongoing(self, md: TransactionMetadata, timeout_ms: int,
                      expected: tuple[int, int] | None) -> tuple[int, int, int, int, int]:
        """KIP-939 recovery: fence the old instance (epoch + 1) but keep its transaction open."""
        none = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if expected is not None and expected[0] != md.producer_id:
            return (ec.PRODUCER_FENCED, *none, *none)
        if is_epoch_exhausted(md.producer_epoch):
            # the kept transaction's markers must carry its producer id: no room for a rotation here
            return (ec.CONCURRENT_TRANSACTIONS, *none, *none)
        ongoing_pid, ongoing_epoch = md.producer_id, md.producer_epoch
        md.last_producer_epoch = ongoing_epoch
        md.producer_epoch = ongoing_epoch + 1
        md.two_phase = True
        md.timeout_ms = timeout_ms
        md.last_update_ms = self._now()
        self._changed()
        return ec.NONE, md.producer_id, md.producer_epoch, ongoing_pid, ongoing_epoch

    def _init_existing(self, md: TransactionMetadata, timeout_ms: int,
                       expected: tuple[int, int] | None) -> tuple[int, int, int]:
        fenced = (ec.PRODUCER_FENCED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        if expected is not None:
            exp_pid, exp_epoch = expected
            valid = (md.producer_epoch == NO_PRODUCER_EPOCH or exp_pid == md.producer_id
                     or (exp_pid == md.prev_producer_id and is_epoch_exhausted(exp_epoch)))
            if not valid:
                return fenced
        if md.state in PREPARE_STATES:
            return ec.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if md.state == TxnState.ONGOING:
            # abort the ongoing transaction first; the client retries and then gets its epoch
            if not self._abort_by_coordinator(md, tv2=self._state.transaction_version >= 2):
                return ec.UNKNOWN_SERVER_ERROR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
            return ec.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        now = self._now()
        if is_epoch_exhausted(md.producer_epoch):
            # no epoch left to hand out: a new producer id (also for the retry of a bump that fenced an
            # ongoing transaction at the last epoch - the broker would otherwise have to give out 32767)
            if expected is not None and expected[1] not in (md.producer_epoch, md.last_producer_epoch):
                return fenced
            last = expected[1] if expected is not None else NO_PRODUCER_EPOCH
            self._set_producer(md, self.allocate_producer_id(), 0)
            md.last_producer_epoch = last
        else:
            bumped = md.producer_epoch + 1
            if expected is None:
                new_epoch, last = bumped, NO_PRODUCER_EPOCH
            elif md.producer_epoch == NO_PRODUCER_EPOCH or expected[1] == md.producer_epoch:
                new_epoch, last = bumped, md.producer_epoch
            elif expected[1] == md.last_producer_epoch:
                # a retry of a bump whose answer was lost: same answer again
                new_epoch, last = md.producer_epoch, md.last_producer_epoch
            else:
                return fenced
            self._set_producer(md, md.producer_id, new_epoch)
            md.last_producer_epoch = last
        md.state = TxnState.EMPTY
        md.timeout_ms = timeout_ms
        md.partitions.clear()
        md.groups.clear()
        md.start_time_ms = -1
        md.last_update_ms = now
        self._changed()
        return ec.NONE, md.producer_id, md.producer_epoch

    # ------------------------------------------------------------ adding partitions
    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[tuple[str, int]], client_tv: int = 1) -> int:
        """AddPartitionsToTxn / AddOffsetsToTxn / TV2 implicit add: one error for all partitions."""
        with self._state.lock:
            md = self._txns.get(transactional_id)
            if md is None or md.producer_id != producer_id:
                return ec.INVALID_PRODUCER_ID_MAPPING
            if md.producer_epoch != producer_epoch:
                return ec.PRODUCER_FENCED
            if md.state in PREPARE_STATES:
                return ec.CONCURRENT_TRANSACTIONS
            parts = list(partitions)
            if md.state == TxnState.ONGOING and all(tp in md.partitions for tp in parts):
                return ec.NONE
            md.begin_if_idle(self._now(), client_tv)
            md.add_partitions(parts)
            self._changed()
            return ec.NONE

    def verify_partitions(self, transactional_id: str | None, producer_id: int, producer_epoch: int,
                          partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """TV1 verification (AddPartitionsToTxn verify_only): is each partition in the ongoing transaction?"""
        with self._state.lock:
            parts = list(partitions)
            md = self._lookup(transactional_id, producer_id)
            error = ec.NONE
            if not transactional_id and transactional_id is not None:
                error = ec.INVALID_REQUEST
            elif md is None or md.producer_id != producer_id:
                error = ec.INVALID_PRODUCER_ID_MAPPING
            elif md.producer_epoch != producer_epoch:
                error = ec.PRODUCER_FENCED
            elif md.state in PREPARE_STATES:
                error = ec.CONCURRENT_TRANSACTIONS
            if error != ec.NONE or md is None:
                return dict.fromkeys(parts, error)
            return {tp: ec.NONE if tp in md.partitions else ec.TRANSACTION_ABORTABLE for tp in parts}

    def verify_produce(self, producer_id: int, producer_epoch: int, topic: str, partition: int,
                       api_version: int, transactional_id: str | None = None) -> tuple[int, str | None]:
        """The partition leader's check before appending a transactional batch.

        TV1 (cluster transaction.version < 2 or Produce < v12): the partition must already be in the
        ongoing transaction; otherwise TRANSACTION_ABORTABLE (Produce v11+) or INVALID_TXN_STATE with
        the broker's message (<= v10). TV2 (Produce v12+): the partition is added implicitly, which
        starts a transaction if none is ongoing. A wrong epoch is INVALID_PRODUCER_EPOCH, an unknown
        producer INVALID_PRODUCER_ID_MAPPING; while the previous transaction's markers are in flight
        TV1 answers NOT_ENOUGH_REPLICAS and TV2 CONCURRENT_TRANSACTIONS (the broker retries that for
        ~100 ms first; markers here are only ever in flight when a test holds them).
        ``transactional_id`` (from the Produce request) is optional; without it the producer id decides.
        """
        with self._state.lock:
            tp = (topic, partition)
            tv2 = self._state.transaction_version >= 2 and api_version >= 12
            if tv2:
                md = self._lookup(transactional_id, producer_id)
                if md is None:
                    return ec.INVALID_PRODUCER_ID_MAPPING, None
                error = self.add_partitions(md.transactional_id, producer_id, producer_epoch, [tp],
                                            client_tv=2)
            else:
                error = self.verify_partitions(transactional_id, producer_id, producer_epoch, [tp])[tp]
            error = _verification_error(error, tv2)
            if error == ec.TRANSACTION_ABORTABLE and api_version <= 10:
                return ec.INVALID_TXN_STATE, NOT_ADDED_MESSAGE
            return error, None

    # ------------------------------------------------------------------ EndTxn
    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                tv2: bool) -> tuple[int, int, int]:
        """EndTxn: returns (error, producer id, epoch); id/epoch are -1 unless TV2 succeeded."""
        with self._state.lock:
            fail = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
            if not transactional_id:
                return (ec.INVALID_REQUEST, *fail)
            md = self._txns.get(transactional_id)
            if md is None:
                return (ec.INVALID_PRODUCER_ID_MAPPING, *fail)
            if not tv2:
                return self._end_txn_tv1(md, producer_id, producer_epoch, commit)
            return self._end_txn_tv2(md, producer_id, producer_epoch, commit)

    def _end_txn_tv1(self, md: TransactionMetadata, producer_id: int, producer_epoch: int,
                     commit: bool) -> tuple[int, int, int]:
        fail = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if md.producer_id != producer_id:
            return (ec.INVALID_PRODUCER_ID_MAPPING, *fail)
        if producer_epoch != md.producer_epoch:
            return (ec.PRODUCER_FENCED, *fail)
        state = md.state
        if state == TxnState.ONGOING:
            self._prepare_end(md, commit, bump=False, no_partition_added=False,
                              next_producer_id=NO_PRODUCER_ID)
            return (ec.NONE, *fail)
        same = (state == TxnState.COMPLETE_COMMIT) == commit
        if state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            return (ec.NONE if same else ec.INVALID_TXN_STATE, *fail)
        if state in PREPARE_STATES:
            same = (state == TxnState.PREPARE_COMMIT) == commit
            return (ec.CONCURRENT_TRANSACTIONS if same else ec.INVALID_TXN_STATE, *fail)
        return (ec.INVALID_TXN_STATE, *fail)

    def _end_txn_tv2(self, md: TransactionMetadata, producer_id: int, producer_epoch: int,
                     commit: bool) -> tuple[int, int, int]:
        fail = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        retry_on_overflow = (md.prev_producer_id == producer_id and producer_epoch == MAX_EPOCH - 1
                             and md.producer_epoch == 0)
        retry_on_bump = md.producer_epoch == producer_epoch + 1
        state = md.state
        if state in PREPARE_STATES:
            valid_epoch = retry_on_bump
        elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == md.producer_epoch
        else:
            valid_epoch = producer_epoch == md.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if md.producer_id != producer_id and not retry_on_overflow:
            return (ec.INVALID_PRODUCER_ID_MAPPING, *fail)
        if not valid_epoch:
            return (ec.PRODUCER_FENCED, *fail)
        current = (md.producer_id, md.producer_epoch)
        if state == TxnState.ONGOING:
            return self._end_tv2_now(md, commit, no_partition_added=False)
        if state == TxnState.COMPLETE_COMMIT:
            if commit:
                return (ec.NONE, *current) if is_retry else (ec.INVALID_TXN_STATE, *fail)
            return (ec.INVALID_TXN_STATE, *fail) if is_retry else self._end_tv2_now(md, False, True)
        if state == TxnState.COMPLETE_ABORT:
            if not commit:
                return (ec.NONE, *current) if is_retry else self._end_tv2_now(md, False, True)
            return (ec.INVALID_TXN_STATE, *fail)
        if state in PREPARE_STATES:
            same = (state == TxnState.PREPARE_COMMIT) == commit
            return (ec.CONCURRENT_TRANSACTIONS if same else ec.INVALID_TXN_STATE, *fail)
        if state == TxnState.EMPTY and not commit:
            return self._end_tv2_now(md, False, True)
        return (ec.INVALID_TXN_STATE, *fail)

    def _end_tv2_now(self, md: TransactionMetadata, commit: bool,
                     no_partition_added: bool) -> tuple[int, int, int]:
        if md.producer_epoch >= MAX_EPOCH:
            # KAFKA-20090 (Kafka 4.0/4.1, fixed later only on the coordinator's own path): a TV2 end
            # bumps the epoch, and 32767 + 1 does not exist. The broker throws ("Illegal new producer
            # epoch -32768"), answers UNKNOWN_SERVER_ERROR and the transaction stays Ongoing.
            return ec.UNKNOWN_SERVER_ERROR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        next_pid = self.allocate_producer_id() if is_epoch_exhausted(md.producer_epoch) else NO_PRODUCER_ID
        self._prepare_end(md, commit, bump=True, no_partition_added=no_partition_added,
                          next_producer_id=next_pid)
        if next_pid != NO_PRODUCER_ID:
            return ec.NONE, next_pid, 0
        return ec.NONE, md.producer_id, md.producer_epoch

    def _prepare_end(self, md: TransactionMetadata, commit: bool, bump: bool, no_partition_added: bool,
                     next_producer_id: int) -> None:
        """Move to PrepareCommit/PrepareAbort and write the markers now unless they are held."""
        now = self._now()
        if bump:
            md.last_producer_epoch = md.producer_epoch
            md.producer_epoch += 1
        md.prev_producer_id = md.producer_id
        md.marker_producer_id = md.producer_id
        md.marker_producer_epoch = md.producer_epoch
        md.next_producer_id = next_producer_id
        if no_partition_added:
            md.start_time_ms = now
            md.partitions.clear()
            md.groups.clear()
        md.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        md.last_update_ms = now
        md.markers_held = self._hold_all or md.transactional_id in self._held_ids
        if not md.markers_held:
            self._write_markers(md)
        self._changed()

    def _abort_by_coordinator(self, md: TransactionMetadata, tv2: bool) -> bool:
        """Abort an ongoing transaction on the coordinator's own initiative (fencing, timeout).

        The epoch goes up by one and the ABORT marker carries it. TV2 remembers the previous epoch as
        the last epoch (the recordings show the old producer's InitProducerId(pid, old epoch) and
        EndTxn abort retries answered as retries); TV1 fences like the broker's PrepareEpochFence:
        the last epoch is forgotten. At an exhausted epoch Kafka 4.1 keeps the producer id, so the
        fenced producer's retried abort is answered with epoch 32767; with KAFKA-20090's fix
        (``kafka_20090_fixed``) the id rotates when the markers are written, and that retry gets the
        new id at epoch 0.

        False when the transaction cannot be fenced: it runs at 32767 already, and the broker throws
        ("Cannot fence producer with epoch equal to Short.MaxValue"); nothing changes.
        """
        # The broker passes through PrepareEpochFence here without ever persisting it; so does this.
        old_epoch = md.producer_epoch
        if old_epoch >= MAX_EPOCH:
            return False
        md.producer_epoch = old_epoch + 1
        md.last_producer_epoch = old_epoch if tv2 else NO_PRODUCER_EPOCH
        rotate = tv2 and self._rotate_fenced_exhausted and is_epoch_exhausted(old_epoch)
        self._prepare_end(md, commit=False, bump=False, no_partition_added=False,
                          next_producer_id=self.allocate_producer_id() if rotate else NO_PRODUCER_ID)
        return True

    def _write_markers(self, md: TransactionMetadata) -> None:
        commit = md.state == TxnState.PREPARE_COMMIT
        for topic, partition in md.partitions:
            if topic == OFFSETS_TOPIC:
                continue
            log = self._state.partition_log(topic, partition)
            if log is not None:
                log.write_marker(md.marker_producer_id, md.marker_producer_epoch, commit, 0)
        groups = getattr(self._state, "groups", None)
        if groups is not None:
            for group_id in md.groups:
                groups.complete_txn_offsets(group_id, md.marker_producer_id, commit)
        md.partitions.clear()
        md.groups.clear()
        md.state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        md.markers_held = False
        if md.next_producer_id != NO_PRODUCER_ID:
            # TV2 epoch overflow: continue under the new producer id (last epoch stays MAX-1, what the
            # client last saw), the old id stays recognisable for retries
            self._set_producer(md, md.next_producer_id, 0)
            md.next_producer_id = NO_PRODUCER_ID
        else:
            md.prev_producer_id = md.producer_id
        md.last_update_ms = self._now()

    # ----------------------------------------------------------- TxnOffsetCommit
    def txn_offset_commit(self, transactional_id: str, group_id: str, producer_id: int, producer_epoch: int,
                          generation_id: int, member_id: str, group_instance_id: str | None,
                          offsets: dict[tuple[str, int], tuple[int, int, str | None]],
                          api_version: int) -> int:
        """TxnOffsetCommit minus the coordinator-placement check: one error for every partition."""
        with self._state.lock:
            offsets_tp = (OFFSETS_TOPIC, offsets_partition_for(group_id))
            if self._state.transaction_version >= 2 and api_version >= 5:
                error = self.add_partitions(transactional_id, producer_id, producer_epoch, [offsets_tp],
                                            client_tv=2)
                if error == ec.NONE:
                    self._txns[transactional_id].groups.setdefault(group_id, None)
            else:
                verified = self.verify_partitions(transactional_id, producer_id, producer_epoch, [offsets_tp])
                error = verified[offsets_tp]
            # the verification answer as the group coordinator passes it on (PRODUCER_FENCED is
            # mapped like for Produce; CONCURRENT_TRANSACTIONS goes through unchanged)
            if error == ec.PRODUCER_FENCED:
                error = ec.INVALID_PRODUCER_EPOCH
            elif error == ec.TRANSACTION_ABORTABLE and api_version < 4:
                error = ec.INVALID_TXN_STATE
            if error != ec.NONE:
                return error
            error = int(self._state.groups.validate_txn_offset_commit(group_id, generation_id, member_id,
                                                                       group_instance_id))
            if error != ec.NONE:
                return error
            self._state.groups.stage_txn_offsets(group_id, producer_id, offsets)
            return ec.NONE

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> int:
        """AddOffsetsToTxn: add the group's __consumer_offsets partition to the transaction."""
        with self._state.lock:
            offsets_tp = (OFFSETS_TOPIC, offsets_partition_for(group_id))
            error = self.add_partitions(transactional_id, producer_id, producer_epoch, [offsets_tp],
                                        client_tv=1)
            if error == ec.NONE:
                self._txns[transactional_id].groups.setdefault(group_id, None)
            return error

    # ------------------------------------------------------------ time, faults
    def tick(self, now_ms: int) -> None:
        """Abort every ongoing transaction older than its timeout (the broker's periodic check).

        As on Kafka 4.1, a transaction that cannot be fenced (Ongoing at epoch 32767, KAFKA-20090)
        ends the pass: the broker's task throws there, and the timed-out transactions it would have
        visited after that one are not aborted either - on every pass, for good.
        """
        with self._state.lock:
            for md in list(self._txns.values()):
                timed_out = (md.state == TxnState.ONGOING and md.start_time_ms >= 0 and not md.two_phase
                             and md.start_time_ms + md.timeout_ms < now_ms)
                if timed_out and not self._abort_by_coordinator(md, tv2=md.client_tv >= 2):
                    return

    def expire_transaction(self, transactional_id: str) -> None:
        """Fault injection: time the ongoing transaction of ``transactional_id`` out now."""
        with self._state.lock:
            md = self._txns.get(transactional_id)
            if md is not None and md.state == TxnState.ONGOING:
                self._abort_by_coordinator(md, tv2=md.client_tv >= 2)

    def hold_markers(self, transactional_id: str | None = None) -> None:
        """Fault injection: EndTxn leaves the transaction in PrepareCommit/PrepareAbort until released.

        ``None`` holds the markers of every transactional id. Holds last until ``release_markers``.
        """
        with self._state.lock:
            if transactional_id is None:
                self._hold_all = True
            else:
                self._held_ids.add(transactional_id)

    def release_markers(self) -> None:
        """Write every held marker (transactions complete) and stop holding."""
        with self._state.lock:
            self._hold_all = False
            self._held_ids.clear()
            for md in self._txns.values():
                if md.state in PREPARE_STATES:
                    self._write_markers(md)
            self._changed()

    def describe(self, transactional_id: str) -> dict[str, object] | None:
        """A snapshot for tests: state name, producer id/epoch, timeout, partitions, groups."""
        with self._state.lock:
            md = self._txns.get(transactional_id)
            if md is None:
                return None
            return {
                "transactional_id": md.transactional_id,
                "state": md.state.value,
                "producer_id": md.producer_id,
                "producer_epoch": md.producer_epoch,
                "last_producer_epoch": md.last_producer_epoch,
                "timeout_ms": md.timeout_ms,
                "start_time_ms": md.start_time_ms,
                "partitions": sorted(tp for tp in md.partitions if tp[0] != OFFSETS_TOPIC),
                "groups": sorted(md.groups),
                "markers_held": md.markers_held,
                "two_phase": md.two_phase,
            }

    def transactional_ids(self) -> list[str]:
        with self._state.lock:
            return list(self._txns)

