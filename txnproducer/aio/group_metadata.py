"""KIP-447 group metadata of an aiokafka consumer, for ``send_offsets_to_transaction``.

Why this exists: zombie fencing (KIP-447) needs the consumer's group id, generation, member id and
group instance id in the TxnOffsetCommit, so that the group coordinator refuses offsets from an
instance the group has moved on from. kafka-python and the Java client expose them as
``consumer.group_metadata()``; aiokafka 0.14's ``AIOKafkaConsumer`` has no such method (its own
producer sends a bare group id, so it cannot fence). Its group coordinator object holds all four,
and this module reads them from there - attribute names checked against aiokafka 0.14
(``consumer._group_id``, ``consumer._coordinator.generation`` / ``.member_id`` /
``._group_instance_id``), with a clear error if another version has moved them. aiokafka is not a
dependency: the consumer is duck-typed.
"""

from __future__ import annotations

from typing import Any

from kafka.structs import ConsumerGroupMetadata

from txnproducer import errors

__all__ = ["aiokafka_group_metadata", "as_group_metadata"]


def aiokafka_group_metadata(consumer: Any) -> ConsumerGroupMetadata:
    """The group metadata of a started ``aiokafka.AIOKafkaConsumer`` with a ``group_id``, read now.

    Read it when you send the offsets (as the Java client's ``consumer.groupMetadata()``): after
    a rebalance the generation changes, and offsets sent with an old generation are refused
    (CommitFailedError: abort and reprocess from the committed offsets).

    Raises ConfigError when the consumer has no group (``group_id=None``), was not started
    (``await consumer.start()``), or is an aiokafka version whose group state this does not know.
    """
    group_id = getattr(consumer, "_group_id", None)
    if not isinstance(group_id, str) or not group_id:
        raise errors.ConfigError(
            f"{type(consumer).__name__} has no group_id: offsets can only be committed for a consumer "
            "group; create the AIOKafkaConsumer with group_id=...")
    coordinator = getattr(consumer, "_coordinator", None)
    if coordinator is None:
        raise errors.ConfigError(
            "the aiokafka consumer was not started: call `await consumer.start()` before sending its "
            "offsets")
    generation = getattr(coordinator, "generation", None)
    member_id = getattr(coordinator, "member_id", None)
    if not isinstance(generation, int) or not isinstance(member_id, str):
        raise errors.ConfigError(
            f"cannot read the group generation and member id of this aiokafka consumer "
            f"({type(coordinator).__name__}); txnproducer knows aiokafka 0.14's layout. Pass "
            "ConsumerGroupMetadata(group_id, generation_id, member_id, group_instance_id) instead")
    instance = getattr(coordinator, "_group_instance_id", None)
    return ConsumerGroupMetadata(group_id, generation, member_id,
                                 instance if isinstance(instance, str) else None)


def as_group_metadata(value: Any) -> Any:
    """What ``send_offsets_to_transaction`` accepts: an aiokafka consumer, read now with
    :func:`aiokafka_group_metadata`; every other shape is the sync producer's (a consumer's group
    metadata, the consumer itself, confluent-kafka's serialized metadata, a group id), which the
    core checks."""
    if hasattr(value, "_coordinator") and hasattr(value, "_group_id"):
        return aiokafka_group_metadata(value)
    return value
