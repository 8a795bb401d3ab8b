"""One partition's log: record batches as received, producer state, last stable offset, aborted index.

The broker keeps batches as the producer sent them (only the base offset and partition leader epoch
are rewritten, and the CRC recomputed, as Kafka does), so a Fetch returns exactly the bytes a real
broker would. Only batch headers are parsed (``struct``), never the records: this keeps the Produce
path cheap enough for a batched producer at full speed.

Producer state follows Kafka's ``ProducerStateManager``: per producer id the current epoch, the
metadata of its last five batches (duplicate detection), and the first offset of its ongoing
transaction (which pins the last stable offset). Markers end transactions and, for aborts, feed the
aborted-transactions index that read_committed fetches return.
"""

from __future__ import annotations

import bisect
import struct
import time
from collections import deque

import attrs
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from txnproducer._internal.protocol import error_codes as ec

# Batch header layout (magic v2): see kafka.record.default_records.DefaultRecordBase.HEADER_STRUCT
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
_LENGTH_OFFSET = 8
_EPOCH_OFFSET = 12
_MAGIC_OFFSET = 16
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_MAX_SEQ = 2**31 - 1
DUPLICATE_WINDOW = 5



@attrs.define
class BatchMetadata:
    """What duplicate detection remembers of an appended batch."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@attrs.define
class ProducerStateEntry:
    """A producer id's state on one partition (Kafka's ProducerStateEntry)."""

    producer_id: int
    producer_epoch: int
    batches: deque[BatchMetadata] = attrs.field(factory=lambda: deque(maxlen=DUPLICATE_WINDOW))
    current_txn_first_offset: int | None = None
    coordinator_epoch: int = -1
    last_timestamp: int = -1

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@attrs.define
class StoredBatch:
    base_offset: int
    last_offset: int
    data: bytes
    producer_id: int
    max_timestamp: int


@attrs.frozen
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # offset of the ABORT marker


@attrs.frozen
class ParsedBatch:
    """Header fields of one batch of a Produce request, plus its slice of the request bytes."""

    data: memoryview
    attributes: int
    last_offset_delta: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (_MAX_SEQ + 1)


class InvalidRecordsError(ValueError):
    """The records of a Produce partition are not well-formed magic-v2 batches (CORRUPT_MESSAGE)."""


def parse_batches(records: bytes | memoryview, validate_crc: bool = True) -> list[ParsedBatch]:
    """Split ``records`` into magic-v2 batches, validating framing, magic and (optionally) CRC-32C."""
    view = memoryview(records)
    pos = 0
    out: list[ParsedBatch] = []
    total = len(view)
    if total == 0:
        raise InvalidRecordsError("no record batches")
    while pos < total:
        if total - pos < HEADER_SIZE:
            raise InvalidRecordsError("truncated batch header")
        (_, length, _, magic, crc, attributes, last_offset_delta, _, max_ts, pid, epoch, base_seq, count) = (
            HEADER.unpack_from(view, pos)
        )
        end = pos + _LENGTH_OFFSET + 4 + length
        if length < HEADER_SIZE - 12 or end > total:
            raise InvalidRecordsError("batch length exceeds the records")
        if magic != 2:
            raise InvalidRecordsError(f"unsupported magic {magic}")
        if attributes & _CONTROL:
            raise InvalidRecordsError("clients may not write control batches")
        batch = view[pos:end]
        if validate_crc and calc_crc32c(batch[_ATTRIBUTES_OFFSET:]) != crc:
            raise InvalidRecordsError("batch CRC mismatch")
        out.append(ParsedBatch(batch, attributes, last_offset_delta, max_ts, pid, epoch, base_seq, count))
        pos = end
    return out


@attrs.frozen
class AppendResult:
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    error_message: str | None = None


class PartitionLog:
    """The log of one partition (single replica: high watermark = log end offset)."""

    def __init__(self, topic: str, partition: int, leader_id: int, leader_epoch: int = 0) -> None:
        self.topic = topic
        self.partition = partition
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        # no replica can lead (MockCluster.set_partition_offline): leader -1 until it is back
        self.offline = False
        self.log_start_offset = 0
        self.high_watermark = 0
        self._batches: list[StoredBatch] = []
        self._base_offsets: list[int] = []
        self._producers: dict[int, ProducerStateEntry] = {}
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._aborted: list[AbortedTxn] = []
        # the leader epoch cache: (epoch, start offset), as Kafka's LeaderEpochFileCache
        self._epochs: list[tuple[int, int]] = [(leader_epoch, 0)]

    # ------------------------------------------------------------------ reads
    @property
    def last_stable_offset(self) -> int:
        if self._ongoing:
            return min(self._ongoing.values())
        return self.high_watermark

    def producer_state(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        """Whether ``producer_id`` has an open transaction here (the leader's KIP-890 check is done)."""
        return producer_id in self._ongoing

    def producer_states(self) -> list[ProducerStateEntry]:
        return list(self._producers.values())

    def batch_count(self) -> int:
        return len(self._batches)

    def read(self, fetch_offset: int, max_bytes: int, upper_bound: int, min_one: bool) -> tuple[bytes, int]:
        """Batches from the one containing ``fetch_offset`` whose last offset is below ``upper_bound``.

        Returns (bytes, next offset after the last batch returned). At most ``max_bytes`` unless
        ``min_one`` and the first batch alone is bigger (KIP-74: a fetch always makes progress).
        """
        idx = bisect.bisect_right(self._base_offsets, fetch_offset) - 1
        if idx < 0:
            idx = 0
        chunks: list[bytes] = []
        size = 0
        end = fetch_offset
        while idx < len(self._batches):
            batch = self._batches[idx]
            if batch.last_offset >= upper_bound:
                break
            if batch.last_offset < fetch_offset:
                idx += 1
                continue
            n = len(batch.data)
            if size + n > max_bytes and not (min_one and not chunks):
                break
            chunks.append(batch.data)
            size += n
            end = batch.last_offset + 1
            idx += 1
        return b"".join(chunks), end

    def aborted_transactions(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping offsets [start, end) (what read_committed consumers filter)."""
        return [a for a in self._aborted if a.last_offset >= start and a.first_offset < end]

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """First offset of the first batch whose max timestamp is >= ``timestamp`` (approximate)."""
        for batch in self._batches:
            if batch.max_timestamp >= timestamp:
                return batch.base_offset
        return None

    def max_timestamp_offset(self) -> tuple[int, int]:
        best = (-1, -1)
        for batch in self._batches:
            if batch.max_timestamp > best[0]:
                best = (batch.max_timestamp, batch.last_offset)
        return best

    # ----------------------------------------------------------------- writes
    def delete_before(self, offset: int) -> None:
        """Move the log start to ``offset`` (DeleteRecords, or retention): whole batches below it go,
        and so does the state of every producer whose last batch went with them (Kafka's
        ``ProducerStateManager.truncateHead``). Open transactions and markers are not touched."""
        offset = min(max(offset, self.log_start_offset), self.high_watermark)
        keep = [b for b in self._batches if b.last_offset >= offset]
        self._batches = keep
        self._base_offsets = [b.base_offset for b in keep]
        self.log_start_offset = offset
        # the epoch cache loses the epochs that ended below the log start, and the epoch the log start
        # falls in starts there (Kafka's LeaderEpochFileCache.truncateFromStart)
        below = [i for i, (_, start) in enumerate(self._epochs) if start <= offset]
        if below:
            first = below[-1]
            self._epochs = [(self._epochs[first][0], offset), *self._epochs[first + 1 :]]
        for pid, entry in list(self._producers.items()):
            if entry.batches and entry.batches[-1].last_offset < offset and pid not in self._ongoing:
                del self._producers[pid]

    def append(self, batches: list[ParsedBatch], strict_first_sequence: bool) -> AppendResult:
        """Validate producer state for every batch, then append them all (or none).

        ``strict_first_sequence``: the TV2 path (transactional Produce v12+ with TV2 finalized), where
        a producer unknown to this partition must start at sequence 0; otherwise any first sequence is
        accepted, as Kafka does for a producer whose state it does not know.
        """
        # duplicates are answered before any other check (Kafka's findDuplicateBatch), single-batch case
        if len(batches) == 1 and batches[0].producer_id >= 0:
            dup = self._find_duplicate(batches[0])
            if dup is not None:
                return AppendResult(ec.NONE, dup.first_offset, dup.max_timestamp)
        for batch in batches:
            err = self._check_producer(batch, strict_first_sequence)
            if err is not None:
                return err
        first = self.high_watermark
        for batch in batches:
            self._append_one(batch)
        return AppendResult(ec.NONE, first, -1)

    def _find_duplicate(self, batch: ParsedBatch) -> BatchMetadata | None:
        entry = self._producers.get(batch.producer_id)
        if entry is None or entry.producer_epoch != batch.producer_epoch or batch.base_sequence < 0:
            return None
        for meta in entry.batches:
            if meta.first_seq == batch.base_sequence and meta.last_seq == batch.last_sequence:
                return meta
        return None

    def _check_producer(self, batch: ParsedBatch, strict_first_sequence: bool) -> AppendResult | None:
        if batch.producer_id < 0:
            return None
        entry = self._producers.get(batch.producer_id)
        seq = batch.base_sequence
        if entry is None:
            if strict_first_sequence and seq != 0:
                return self._out_of_order(batch, 0)
            return None
        if batch.producer_epoch < entry.producer_epoch:
            return AppendResult(
                ec.INVALID_PRODUCER_EPOCH,
                error_message=(
                    f"Epoch of producer {batch.producer_id} at offset {self.high_watermark} in "
                    f"{self.topic}-{self.partition} is {batch.producer_epoch}, which is smaller than the "
                    f"last seen epoch {entry.producer_epoch}"
                ),
            )
        if batch.producer_epoch > entry.producer_epoch:
            if seq != 0:
                return self._out_of_order(batch, 0)
            return None
        last = entry.last_sequence
        if last < 0:
            # state kept but no batches (a marker bumped the epoch): the sequence restarts at 0
            if seq != 0:
                return self._out_of_order(batch, 0)
            return None
        expected = 0 if last == _MAX_SEQ else last + 1
        if seq != expected:
            return self._out_of_order(batch, expected)
        return None

    def _out_of_order(self, batch: ParsedBatch, expected: int) -> AppendResult:
        return AppendResult(
            ec.OUT_OF_ORDER_SEQUENCE_NUMBER,
            error_message=(
                f"Out of order sequence number for producer {batch.producer_id} at offset "
                f"{self.high_watermark} in partition {self.topic}-{self.partition}: "
                f"{batch.base_sequence} (incoming seq. number), {expected - 1} (current end sequence number)"
            ),
        )

    def _store(self, data: bytearray, base_offset: int, last_offset: int, pid: int, max_ts: int) -> None:
        struct.pack_into(">q", data, 0, base_offset)
        struct.pack_into(">i", data, _EPOCH_OFFSET, self.leader_epoch)
        # base offset and leader epoch are outside the CRC's range: the client's CRC stays valid
        self._batches.append(StoredBatch(base_offset, last_offset, bytes(data), pid, max_ts))
        self._base_offsets.append(base_offset)
        self.high_watermark = last_offset + 1

    def _append_one(self, batch: ParsedBatch) -> None:
        base = self.high_watermark
        last = base + batch.last_offset_delta
        self._store(bytearray(batch.data), base, last, batch.producer_id, batch.max_timestamp)
        pid = batch.producer_id
        if pid < 0:
            return
        entry = self._producers.get(pid)
        if entry is None:
            entry = ProducerStateEntry(pid, batch.producer_epoch)
            self._producers[pid] = entry
        elif batch.producer_epoch != entry.producer_epoch:
            entry.producer_epoch = batch.producer_epoch
            entry.batches.clear()
        entry.batches.append(
            BatchMetadata(batch.base_sequence, batch.last_sequence, base, last, batch.max_timestamp)
        )
        entry.last_timestamp = batch.max_timestamp
        if batch.transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = base
            self._ongoing[pid] = base

    def check_marker(self, producer_id: int, producer_epoch: int,
                     coordinator_epoch: int) -> AppendResult | None:
        """Why the leader would refuse a COMMIT/ABORT marker from WriteTxnMarkers, or None (Kafka's
        ``ProducerAppendInfo.appendEndTxnMarker``): an epoch below the producer's epoch here is
        INVALID_PRODUCER_EPOCH, a coordinator epoch below the one of its last marker
        TRANSACTION_COORDINATOR_FENCED. A producer unknown here, or without an open transaction, is
        no reason: Kafka appends the marker anyway (it changes nothing for readers)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return None
        where = f"producer {producer_id} at offset {self.high_watermark} in {self.topic}-{self.partition}"
        if producer_epoch < entry.producer_epoch:
            return AppendResult(
                ec.INVALID_PRODUCER_EPOCH,
                error_message=(f"Epoch of {where} is {producer_epoch}, which is smaller than the last seen"
                               f" epoch {entry.producer_epoch}"))
        if coordinator_epoch < entry.coordinator_epoch:
            return AppendResult(
                ec.TRANSACTION_COORDINATOR_FENCED,
                error_message=(f"Invalid coordinator epoch for {where}: {coordinator_epoch} (zombie),"
                               f" {entry.coordinator_epoch} (current)"))
        return None

    def write_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> None:
        """Append a COMMIT/ABORT control batch and end the producer's transaction on this partition."""
        now = int(time.time() * 1000)
        builder = DefaultRecordBatchBuilder(2, 0, True, producer_id, producer_epoch, -1, 2**31 - 1)
        builder.append(
            0, now, struct.pack(">hh", 0, 1 if commit else 0), struct.pack(">hi", 0, coordinator_epoch), []
        )
        data = builder.build()
        attributes = struct.unpack_from(">h", data, _ATTRIBUTES_OFFSET)[0] | _CONTROL
        struct.pack_into(">h", data, _ATTRIBUTES_OFFSET, attributes)
        struct.pack_into(">I", data, _CRC_OFFSET, calc_crc32c(memoryview(data)[_ATTRIBUTES_OFFSET:]))
        offset = self.high_watermark
        self._store(data, offset, offset, producer_id, now)
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = ProducerStateEntry(producer_id, producer_epoch)
            self._producers[producer_id] = entry
        elif entry.producer_epoch != producer_epoch:
            entry.producer_epoch = producer_epoch
            entry.batches.clear()
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = now
        first = entry.current_txn_first_offset
        entry.current_txn_first_offset = None
        self._ongoing.pop(producer_id, None)
        if not commit and first is not None:
            self._aborted.append(AbortedTxn(producer_id, first, offset))

    def corrupt(self, offset: int) -> int:
        """Flip a bit in the last byte of the stored batch holding ``offset`` (inside its CRC's range): a
        disk or network fault a consumer must report. Returns the batch's base offset."""
        idx = bisect.bisect_right(self._base_offsets, offset) - 1
        if idx < 0 or self._batches[idx].last_offset < offset:
            raise ValueError(f"no batch holds offset {offset} of {self.topic}-{self.partition}")
        batch = self._batches[idx]
        data = bytearray(batch.data)
        data[-1] ^= 0x01
        batch.data = bytes(data)
        return batch.base_offset

    def truncate_to(self, offset: int) -> None:
        """Cut the log at ``offset``: what an unclean leader election does to a log whose new leader never
        had the records from there on. Batches, aborted-index entries and open transactions starting at or
        after ``offset`` go, and so do the leader epochs that started there (the epoch cache is truncated
        as Kafka's ``LeaderEpochFileCache.truncateFromEnd``). Simplification: producer states keep their
        last sequences (the truncation test reads the log; it does not write after it)."""
        offset = max(self.log_start_offset, min(offset, self.high_watermark))
        keep = [b for b in self._batches if b.base_offset < offset]
        self._batches = keep
        self._base_offsets = [b.base_offset for b in keep]
        self.high_watermark = keep[-1].last_offset + 1 if keep else offset
        self._aborted = [a for a in self._aborted if a.last_offset < self.high_watermark]
        self._ongoing = {pid: first for pid, first in self._ongoing.items() if first < self.high_watermark}
        for entry in self._producers.values():
            first = entry.current_txn_first_offset
            if first is not None and first >= self.high_watermark:
                entry.current_txn_first_offset = None
        kept = [(e, start) for e, start in self._epochs if start < self.high_watermark]
        self._epochs = kept or [self._epochs[0]]

    def set_leader(self, leader_id: int, leader_epoch: int) -> None:
        """A new leader starts its epoch at the log end, as Kafka's ``LeaderEpochFileCache.assign``: an
        epoch that started there too (no record was written in it) is replaced, not kept. An epoch
        without a leader (-1) enters no cache: no replica became leader in it."""
        self.leader_id = leader_id
        if leader_id >= 0 and leader_epoch > self._epochs[-1][0]:
            end = self.high_watermark
            self._epochs = [(e, start) for e, start in self._epochs if start < end]
            self._epochs.append((leader_epoch, end))
        self.leader_epoch = leader_epoch

    def earliest_epoch(self) -> int:
        """The leader epoch ListOffsets answers with the log start offset (EARLIEST): the first cached
        epoch when it covers the log start, else -1 (Kafka's ``UnifiedLog.fetchOffsetByTimestamp``)."""
        epoch, start = self._epochs[0]
        return epoch if start <= self.log_start_offset else -1

    def end_offset_for_epoch(self, requested: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as Kafka's ``LeaderEpochFileCache.endOffsetFor``:
        the current epoch ends at the log end; an earlier one where the next epoch starts, answered
        with the largest epoch not above it; an unknown one (-1, -1)."""
        if requested < 0:
            return -1, -1
        if requested == self._epochs[-1][0]:
            return requested, self.high_watermark
        higher = next(((e, start) for e, start in self._epochs if e > requested), None)
        if higher is None:
            return -1, -1
        floor = [e for e, _ in self._epochs if e <= requested]
        return (floor[-1] if floor else requested), higher[1]
