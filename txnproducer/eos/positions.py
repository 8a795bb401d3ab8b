"""The input offsets a consume-transform-produce transaction commits: the consumer's positions.

Why positions and not "the last record's offset + 1": input written in transactions ends each of
them with a COMMIT or ABORT marker, and an aborted transaction leaves records a read_committed
consumer never returns. "Last + 1" stops in front of them, so the group stays one offset (or a whole
aborted transaction) behind the log end for good, and every lag monitor - ``kafka-consumer-groups.sh``
included - reports a lag that never goes away. The consumer's position is already past them once it
has fetched them (the decoder moves it over control batches and aborted data), and all records
before it were returned by polls this transaction consumed, so committing it is exactly as safe.

Two cases: a transaction commits each partition it consumed from at its position (and any other
assigned partition whose position moved past data no poll returned); and once the loop is caught
up, a partition whose position moved although the group's committed offset did not - markers or an
aborted transaction only - is committed by a transaction of offsets alone
(:meth:`InputPositions.behind`), so that an idle pipeline shows no lag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka.structs import MemberState, OffsetAndMetadata, TopicPartition

from txnproducer import errors

__all__ = ["InputPositions", "caught_up"]


class InputPositions:
    """What the group has committed for each assigned partition, as far as this loop knows, and
    what to commit next. Used on the loop's thread only."""

    def __init__(self) -> None:
        # the group's committed offset per partition: from our own commits, or read once when a
        # partition's position is first compared
        self._committed: dict[TopicPartition, int] = {}

    def to_commit(self, consumer: Any, consumed: Mapping[TopicPartition, OffsetAndMetadata]
                  ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The offsets a transaction that consumed ``consumed`` (last record + 1, with its leader
        epoch) commits: each of those partitions' position - past the markers and aborted records
        after its last record - and the position of any other assigned partition that moved past
        its known committed offset without a record."""
        offsets = dict(consumed)
        for tp in consumer.assignment():
            position = _position(consumer, tp)
            if position is None:
                continue
            known = offsets.get(tp)
            if known is not None:
                if position > known.offset:  # the leader epoch of the last record: KIP-320 validates
                    offsets[tp] = OffsetAndMetadata(position, known.metadata, known.leader_epoch)
            elif position > self._committed.get(tp, position):
                offsets[tp] = OffsetAndMetadata(position, "", -1)
        return offsets

    def committed(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """A transaction with ``offsets`` committed."""
        for tp, offset in offsets.items():
            self._committed[tp] = offset.offset

    def forget(self, partitions: set[TopicPartition]) -> None:
        """Partitions left this member: another may commit them now."""
        for tp in partitions:
            self._committed.pop(tp, None)

    def behind(self, consumer: Any, timeout_s: float) -> bool:
        """True if some assigned partition's position is past the group's committed offset - with
        every record before it committed, as when the loop is caught up: only markers or aborted
        records lie between. Reads the committed offsets it does not know yet (one OffsetFetch);
        False if that read fails (the next idle period asks again)."""
        positions = {tp: p for tp in consumer.assignment() if (p := _position(consumer, tp)) is not None}
        unknown = [tp for tp in positions if tp not in self._committed]
        if unknown:
            try:
                found = consumer.committed(unknown, timeout=timeout_s)
            except (errors.TimeoutError, errors.RetriableError):
                return False
            for tp in unknown:
                offset = found.get(tp)
                # nothing committed: the position came from auto_offset_reset; committing it is
                # worth a transaction only once markers or aborted data moved it past the log's start
                self._committed[tp] = 0 if offset is None else int(getattr(offset, "offset", offset))
        return any(position > self._committed[tp] for tp, position in positions.items())


def caught_up(consumer: Any) -> bool:
    """The group is stable and every assigned partition has a position (it is being fetched): an
    empty poll then means the input is caught up, not that the member is still joining."""
    if getattr(consumer.group_metadata(), "state", MemberState.STABLE) != MemberState.STABLE:
        return False
    return all(_position(consumer, tp) is not None for tp in consumer.assignment())


def _position(consumer: Any, tp: TopicPartition) -> int | None:
    try:
        return int(consumer.position(tp, timeout=0))
    except errors.TimeoutError:  # not fetched yet: no position to commit or compare
        return None
