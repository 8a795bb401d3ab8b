"""Partition choice as the Java client makes it: murmur2 for keys, KIP-794 for keyless records."""

from __future__ import annotations

import random

from kafka.structs import TopicPartition

from txnproducer._internal.partitioner import StickyPartitioner, key_partition, known_partition


def test_contiguous_ids() -> None:
    parts = list(range(1000))
    assert known_partition(parts, 0) and known_partition(parts, 999)
    assert not known_partition(parts, 1000)
    assert not known_partition(parts, -1)  # a negative index must not wrap around


def test_ids_with_gaps_fall_back_to_membership() -> None:
    parts = [0, 2, 5]
    assert known_partition(parts, 2) and known_partition(parts, 5)
    assert not known_partition(parts, 1)
    assert not known_partition(parts, 3)


# murmur2 values of Apache Kafka's own test (clients UtilsTest.testMurmur2)
JAVA_MURMUR2 = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
                b"a-little-bit-longer-string": -1486304829, b"abc": 479470107}


def test_keys_land_where_the_java_client_puts_them() -> None:
    for key, java in JAVA_MURMUR2.items():
        for partitions in (1, 3, 7, 100):
            # Java: Utils.toPositive(murmur2(key)) % numPartitions
            assert key_partition(key, partitions) == (java & 0x7FFFFFFF) % partitions, key
    assert key_partition(bytearray(b"abc"), 3) == key_partition(b"abc", 3)


def _partitioner(batch_size: int, available: list[int]) -> StickyPartitioner:
    return StickyPartitioner(batch_size, lambda _topic: available, TopicPartition)


def test_keyless_records_switch_after_batch_size_bytes_once_the_last_batch_is_full() -> None:
    random.seed(7)
    parts = [0, 1, 2]
    sp = _partitioner(1000, parts)
    sticky = sp.current("t", parts)
    first = sticky.tp
    for _ in range(9):  # 900 bytes: not enough
        sp.appended("t", sticky, 100, lambda: True)
    assert sp.current("t", parts) is sticky
    sp.appended("t", sticky, 100, lambda: False)  # 1000 bytes, but the last batch still takes records
    assert sp.current("t", parts) is sticky
    sp.appended("t", sticky, 100, lambda: True)  # 1100 bytes and the batch is full: switch
    switched = sp.current("t", parts)
    assert switched is not sticky and switched.produced == 0 and first.topic == "t"


def test_keyless_records_switch_at_twice_batch_size_whatever_the_batches() -> None:
    parts = [0, 1]
    sp = _partitioner(1000, parts)
    sticky = sp.current("t", parts)
    for _ in range(19):
        sp.appended("t", sticky, 100, lambda: False)
    assert sp.current("t", parts) is sticky
    sp.appended("t", sticky, 100, lambda: False)  # 2000 bytes
    assert sp.current("t", parts) is not sticky


def test_the_next_partition_is_random_among_those_with_a_leader() -> None:
    random.seed(3)
    parts = [0, 1, 2, 3]
    sp = _partitioner(1, [1, 3])  # 0 and 2 have no leader
    chosen = set()
    for _ in range(200):
        sticky = sp.current("t", parts)
        chosen.add(sticky.tp.partition)
        sp.appended("t", sticky, 2, lambda: True)
    assert chosen == {1, 3}  # as Java: the current partition may be chosen again


def test_new_metadata_keeps_the_partition_while_it_exists() -> None:
    parts = [0, 1, 2]
    sp = _partitioner(1000, parts)
    sticky = sp.current("t", parts)
    same = sp.current("t", list(parts))  # a new list from a metadata update, same partitions
    assert same is sticky
    shrunk = [p for p in parts if p != sticky.tp.partition]
    assert sp.current("t", shrunk).tp.partition in shrunk
