"""Per-partition sequence bookkeeping for the idempotent/transactional producer.

Why it exists: the broker accepts a batch only if its base sequence follows the last one it
appended for (producer id, epoch, partition). The client therefore tracks, per partition, the next
sequence to assign, the batches in flight (so a failed batch can pull the later ones back), and
the last acknowledged sequence (so an OUT_OF_ORDER_SEQUENCE_NUMBER can be told apart from the
collateral failure of a batch behind a failed one). Sequences are 31-bit and wrap to 0 after
2**31 - 1, as in the broker. The class is not thread-safe: the transaction manager's lock guards it.
"""

from __future__ import annotations

from kafka.structs import TopicPartition

from txnproducer._internal.protocol.record_batch import SEQUENCE_MODULUS, add_sequence

__all__ = ["NO_SEQUENCE", "SequenceBook"]

NO_SEQUENCE = -1


class _PartitionEntry:
    """One partition's sequences. A plain slotted class, not attrs: under TV2 every transaction
    starts every partition's entry again (the epoch moves), so one is made per partition per
    transaction on the Sender thread, where attrs' generated ``__init__`` with a dict factory cost
    about twice as much."""

    __slots__ = ("in_flight", "last_acked_offset", "last_acked_sequence", "next_sequence")

    def __init__(self) -> None:
        self.next_sequence = 0
        self.last_acked_sequence = NO_SEQUENCE
        self.last_acked_offset = -1
        # base sequence -> record count of each batch sent and not yet completed
        self.in_flight: dict[int, int] = {}

    def __repr__(self) -> str:
        return (f"_PartitionEntry(next_sequence={self.next_sequence}, last_acked_sequence="
                f"{self.last_acked_sequence}, last_acked_offset={self.last_acked_offset}, "
                f"in_flight={self.in_flight})")


class SequenceBook:
    """Sequence state of every partition written under the current producer id and epoch."""

    def __init__(self) -> None:
        self._entries: dict[TopicPartition, _PartitionEntry] = {}

    def _entry(self, tp: TopicPartition) -> _PartitionEntry:
        entry = self._entries.get(tp)
        if entry is None:
            entry = self._entries[tp] = _PartitionEntry()
        return entry

    def next_sequence(self, tp: TopicPartition) -> int:
        return self._entry(tp).next_sequence

    def assign(self, tp: TopicPartition, record_count: int) -> int:
        """Advance the partition's next sequence by ``record_count``; the batch is now in flight.

        Returns the base sequence the batch was given (the next sequence before the call).
        """
        entry = self._entries.get(tp)  # (_entry() inlined: once per batch on the Sender)
        if entry is None:
            entry = self._entries[tp] = _PartitionEntry()
        base = entry.next_sequence
        entry.in_flight[base] = record_count
        entry.next_sequence = (base + record_count) % SEQUENCE_MODULUS
        return base

    def completed(self, tp: TopicPartition, base_sequence: int, record_count: int, base_offset: int) -> None:
        entry = self._entries.get(tp)  # (_entry() inlined: once per batch on the Sender)
        if entry is None:
            entry = self._entries[tp] = _PartitionEntry()
        entry.in_flight.pop(base_sequence, None)
        if base_sequence >= 0 and record_count > 0:
            entry.last_acked_sequence = (base_sequence + record_count - 1) % SEQUENCE_MODULUS
        if base_offset >= 0:
            last_offset = base_offset + record_count - 1
            if last_offset > entry.last_acked_offset:
                entry.last_acked_offset = last_offset

    def split(self, tp: TopicPartition, base_sequence: int, record_counts: list[int]) -> None:
        """An in-flight batch became consecutive parts with the same sequence range."""
        entry = self._entries.get(tp)
        if entry is None or entry.in_flight.pop(base_sequence, None) is None:
            return
        sequence = base_sequence
        for count in record_counts:
            entry.in_flight[sequence] = count
            sequence = add_sequence(sequence, count)

    def failed(self, tp: TopicPartition, base_sequence: int, record_count: int, adjust: bool) -> None:
        """Forget a failed batch; with ``adjust`` pull it out of the sequence space.

        Adjusting is only safe when the broker cannot have appended the batch: later in-flight
        batches then move down by ``record_count`` and so does the next sequence, so that the
        partition's sequences stay gap-free (the Java client's adjustSequencesDueToFailedBatch).
        """
        entry = self._entries.get(tp)
        if entry is None or base_sequence < 0:
            return
        if entry.in_flight.pop(base_sequence, None) is None or not adjust:
            return
        moved: dict[int, int] = {}
        for base, count in entry.in_flight.items():
            if _sequence_after(base, base_sequence):
                moved[add_sequence(base, -record_count)] = count
            else:
                moved[base] = count
        entry.in_flight = moved
        entry.next_sequence = add_sequence(entry.next_sequence, -record_count)

    def is_next_sequence(self, tp: TopicPartition, sequence: int) -> bool:
        """True if ``sequence`` directly follows the last acknowledged one (nothing acked: 0)."""
        entry = self._entries.get(tp)
        last = entry.last_acked_sequence if entry is not None else NO_SEQUENCE
        expected = 0 if last == NO_SEQUENCE else add_sequence(last, 1)
        return sequence == expected

    def has_in_flight(self, tp: TopicPartition) -> bool:
        entry = self._entries.get(tp)
        return bool(entry and entry.in_flight)

    def in_flight_sequences(self, tp: TopicPartition) -> list[int]:
        entry = self._entries.get(tp)
        return sorted(entry.in_flight) if entry else []

    def last_acked_sequence(self, tp: TopicPartition) -> int:
        entry = self._entries.get(tp)
        return entry.last_acked_sequence if entry else NO_SEQUENCE

    def last_acked_offset(self, tp: TopicPartition) -> int:
        entry = self._entries.get(tp)
        return entry.last_acked_offset if entry else -1

    def restart(self, tp: TopicPartition, record_counts: list[int]) -> list[int]:
        """The partition's in-flight batches (``record_counts``, in sequence order) get sequences
        from 0 again: the broker lost this producer's state (retention). Returns their new bases."""
        entry = self._entries[tp] = _PartitionEntry()
        bases = []
        sequence = 0
        for count in record_counts:
            bases.append(sequence)
            entry.in_flight[sequence] = count
            sequence = add_sequence(sequence, count)
        entry.next_sequence = sequence
        return bases

    def reset_partition(self, tp: TopicPartition) -> None:
        self._entries.pop(tp, None)

    def reset(self) -> None:
        """New producer id or epoch: every partition starts again at sequence 0."""
        self._entries.clear()


def _sequence_after(a: int, b: int) -> bool:
    """True if sequence ``a`` comes after ``b`` allowing for one wrap (half the space apart)."""
    return 0 < (a - b) % SEQUENCE_MODULUS < SEQUENCE_MODULUS // 2
