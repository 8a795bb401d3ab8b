"""Consumer offsets and group metadata as ``send_offsets_to_transaction`` receives them.

Why validate here, in the application thread: a bad value must raise where it was passed, not
later inside the Sender thread where the caller cannot see it. ``group_fields`` reads the four
KIP-447 fields from a consumer's ``group_metadata()`` (or a bare group id string).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka.structs import OffsetAndMetadata, TopicPartition

__all__ = ["group_fields", "normalize_offsets"]


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
