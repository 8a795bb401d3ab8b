"""AsyncTransactionalProducer end to end against the MockCluster, on both transaction versions.

The async mirror of ``test_producer_txn.py``: committed records are visible to read_committed
consumers once and in order, aborted ones never; a newer instance fences an older one; dropped
connections are retried without duplicates; offsets commit with the transaction only; misuse raises
the sync producer's typed errors; and the wire order holds when commits are awaited back to back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.structs import TopicPartition

from tests._support.aio import AsyncProducerFactory, run
from tests._support.producers import committed_values, read_committed_via_kafka_python
from txnproducer import errors
from txnproducer.aio import AsyncTransactionalProducer
from txnproducer.testing import MockCluster

TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])


@pytest.fixture
def make_producer(mock_cluster: MockCluster) -> Iterator[AsyncProducerFactory]:
    factory = AsyncProducerFactory(mock_cluster, "tx-aio")
    yield factory
    factory.close_all(5)


@TVS
def test_committed_records_are_visible_once_and_in_order(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("orders", partitions=3)
    expected: dict[int, list[bytes]] = {0: [], 1: [], 2: []}

    async def main() -> None:
        producer = make_producer()
        await producer.init_transactions()
        for txn in range(3):
            async with producer.transaction():
                for i in range(30):
                    value = b"%d-%d" % (txn, i)
                    delivery = await producer.send("orders", value, partition=i % 3)
                    expected[i % 3].append(value)
            assert (await delivery).partition == 2 and delivery.done()
        assert producer.transaction_version == (2 if mock_cluster.state.transaction_version >= 2 else 1)

    run(main())
    values = read_committed_via_kafka_python(mock_cluster, "orders", 3, 90)
    assert sorted(values) == sorted(v for vs in expected.values() for v in vs)
    for p in range(3):
        assert committed_values(mock_cluster, "orders", p) == expected[p]


@TVS
def test_aborted_records_are_never_visible(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("aborts", partitions=1)

    async def main() -> None:
        producer = make_producer()
        await producer.init_transactions()
        producer.begin_transaction()
        futures = [await producer.send("aborts", b"gone-%d" % i, partition=0) for i in range(10)]
        await producer.flush(10)
        assert all(f.result().offset >= 0 for f in futures)  # written to the log, but uncommitted
        await producer.abort_transaction()
        with pytest.raises(RuntimeError):
            async with producer.transaction():
                await producer.send("aborts", b"also-gone", partition=0)
                raise RuntimeError("application failure inside the transaction")
        async with producer.transaction():
            await producer.send("aborts", b"kept", partition=0)

    run(main())
    assert committed_values(mock_cluster, "aborts", 0) == [b"kept"]


@TVS
def test_second_instance_fences_the_first(mock_cluster: MockCluster, make_producer: Any) -> None:
    mock_cluster.create_topic("fence", partitions=1)

    async def main() -> None:
        first = make_producer("tx-fence")
        await first.init_transactions()
        first.begin_transaction()
        await first.send("fence", b"zombie", partition=0)
        await first.flush(10)
        second = make_producer("tx-fence")
        await second.init_transactions()
        assert second.producer_id == first.producer_id and second.epoch > first.epoch
        with pytest.raises(errors.ProducerFencedError):
            await first.commit_transaction()
        with pytest.raises((errors.ProducerFencedError, errors.IllegalStateError)):
            first.begin_transaction()
        async with second.transaction():
            await second.send("fence", b"live", partition=0)

    run(main())
    assert committed_values(mock_cluster, "fence", 0) == [b"live"]


@TVS
@pytest.mark.parametrize("when", ["before", "after"])
def test_dropped_produce_connections_are_retried_without_duplicates(
        mock_cluster: MockCluster, make_producer: Any, when: str) -> None:
    mock_cluster.create_topic("drops", partitions=2)
    values = [b"r-%d" % i for i in range(40)]

    async def main() -> None:
        producer = make_producer(linger_ms=0, retry_backoff_ms=10)
        await producer.init_transactions()
        mock_cluster.drop_connection_after("Produce", count=2, when=when)
        async with producer.transaction():
            for i, value in enumerate(values):
                await producer.send("drops", value, partition=i % 2)

    run(main())
    assert committed_values(mock_cluster, "drops", 0) == values[0::2]
    assert committed_values(mock_cluster, "drops", 1) == values[1::2]
    assert any(e.dropped for e in mock_cluster.request_log if e.api == "Produce")


@TVS
def test_back_to_back_one_record_transactions_all_commit_in_wire_order(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    """The tightest async loop (begin; send 1; await commit): every EndTxn follows its
    transaction's Produce; TV2 bumps the epoch per transaction without Add* requests."""
    mock_cluster.create_topic("tight", partitions=1)
    total = 200

    async def main() -> AsyncTransactionalProducer:
        producer = make_producer()
        await producer.init_transactions()
        start_epoch = producer.epoch
        for i in range(total):
            producer.begin_transaction()
            await producer.send("tight", b"%d" % i, partition=0)
            await producer.commit_transaction(10)
        if mock_cluster.state.transaction_version >= 2:
            assert producer.epoch == start_epoch + total
        return producer

    run(main())
    assert committed_values(mock_cluster, "tight", 0) == [b"%d" % i for i in range(total)]
    log = mock_cluster.request_log
    assert not [e for e in log if e.api == "EndTxn" and e.error_codes]
    produces = [e for e in log if e.api == "Produce"]
    for end in (e for e in log if e.api == "EndTxn"):
        epoch = end.fields["producer_epoch"]
        assert any(p.seq < end.seq for p in produces if any(b[3] == epoch for b in p.fields["batches"]))
    if mock_cluster.state.transaction_version >= 2:
        assert not [e for e in log if e.api in ("AddPartitionsToTxn", "AddOffsetsToTxn")]
    else:
        assert [e for e in log if e.api == "AddPartitionsToTxn" and not e.error_codes]


@TVS
def test_send_offsets_commit_with_the_transaction_only(
        mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer()
        await producer.init_transactions()
        async with producer.transaction():
            await producer.send("out", b"a", partition=0)
            await producer.send_offsets_to_transaction({TopicPartition("in", 0): 5}, "g-off")
        producer.begin_transaction()
        await producer.send_offsets_to_transaction({TopicPartition("in", 0): 9}, "g-off")
        await producer.abort_transaction()

    run(main())
    assert mock_cluster.committed_offsets("g-off") == {("in", 0): 5}


def test_api_misuse_raises_typed_errors(mock_cluster: MockCluster, make_producer: Any) -> None:
    async def main() -> None:
        producer = make_producer(value_serializer=lambda v: v.encode())
        with pytest.raises(errors.IllegalStateError):
            producer.begin_transaction()  # before init_transactions
        await producer.init_transactions()
        with pytest.raises(errors.IllegalStateError):
            await producer.send("t", "x")  # no transaction open
        with pytest.raises(errors.IllegalStateError):
            await producer.commit_transaction()
        producer.begin_transaction()
        with pytest.raises(errors.SerializationError, match="could not serialize value"):
            await producer.send("t", 12345)  # the configured serializer fails
        with pytest.raises(errors.RecordTooLargeError):
            await producer.send("t", "x" * 2_000_000)
        bad_records: list[tuple[dict[str, Any], str]] = [
            ({"partition": 99}, "partition 99 does not exist"),
            ({"topic": "not a topic!"}, "invalid topic name"),
            ({"topic": ""}, "non-empty string"),
            ({"timestamp_ms": -5}, "timestamp_ms must be"),
            ({"headers": [("h", 5)]}, "value must be bytes"),
            ({"headers": [(7, b"v")]}, "header names must be str"),
        ]
        for bad, message in bad_records:
            args = {"topic": "t", "value": "x", **bad}
            with pytest.raises(errors.InvalidRecordError, match=message):
                await producer.send(**args)
        with pytest.raises(errors.ConfigError, match="group_metadata must be"):
            await producer.send_offsets_to_transaction({TopicPartition("in", 0): 1}, 42)
        with pytest.raises(errors.ConfigError, match="offsets values"):
            await producer.send_offsets_to_transaction({TopicPartition("in", 0): -1}, "g")
        # nothing was queued and the transaction is intact: a good record still commits
        await producer.send("t", "good", partition=0)
        await producer.commit_transaction(10)
        await producer.close()
        with pytest.raises(errors.ClosedError):
            producer.begin_transaction()
        with pytest.raises(errors.ClosedError):
            await producer.send("t", "x")

    run(main())
    assert committed_values(mock_cluster, "t", 0) == [b"good"]


def test_init_transactions_times_out_when_the_cluster_is_unreachable() -> None:
    async def main() -> None:
        producer = AsyncTransactionalProducer(
            bootstrap_servers="127.0.0.1:1", transactional_id="tx-nowhere", max_block_ms=300,
            request_timeout_ms=200, linger_ms=0, delivery_timeout_ms=1000)
        try:
            with pytest.raises(errors.TimeoutError, match=r"could not reach the cluster.*300 ms"):
                await producer.init_transactions()
            with pytest.raises(errors.TimeoutError, match="100 ms"):
                await producer.init_transactions(timeout=0.1)
        finally:
            await producer.close(1)
        assert producer.closed

    run(main())


def test_send_to_a_missing_topic_times_out_within_max_block() -> None:
    with MockCluster(num_brokers=1, auto_create_topics=False) as cluster:
        async def main() -> None:
            producer = AsyncTransactionalProducer(bootstrap_servers=cluster.bootstrap_servers,
                                                  transactional_id="tx-missing", max_block_ms=400)
            try:
                await producer.init_transactions(10)
                producer.begin_transaction()
                with pytest.raises(errors.TimeoutError, match="not present in metadata after 400 ms"):
                    await producer.send("does-not-exist", b"x")
                cluster.create_topic("exists-now", partitions=2)
                assert await producer.partitions_for("exists-now") == [0, 1]
                delivery = await producer.send("exists-now", b"y", partition=1)  # metadata known now
                await producer.commit_transaction()
                assert (await delivery).offset == 0
            finally:
                await producer.close(5)

        run(main())
        assert [r.value for r in cluster.partition_records("exists-now", 1, read_committed=True)] == [b"y"]


def test_a_send_waiting_for_metadata_goes_on_when_the_topic_appears() -> None:
    """The metadata wait is awaited, not failed: a topic created while send() waits is used."""
    with MockCluster(num_brokers=1, auto_create_topics=False) as cluster:
        async def main() -> None:
            producer = AsyncTransactionalProducer(bootstrap_servers=cluster.bootstrap_servers,
                                                  transactional_id="tx-appears", max_block_ms=10_000,
                                                  metadata_max_age_ms=200)
            try:
                await producer.init_transactions()
                producer.begin_transaction()
                sending = asyncio.ensure_future(producer.send("later", b"v", partition=0))
                await asyncio.sleep(0)
                assert not sending.done()
                since = cluster.requests.next_seq()
                await asyncio.to_thread(cluster.wait_for_request, lambda e: e.api == "Metadata", 5, since)
                cluster.create_topic("later", partitions=1)
                delivery = await sending
                await producer.commit_transaction()
                assert (await delivery).offset == 0
            finally:
                await producer.close(5)

        run(main())


def test_sends_yield_the_loop_every_millisecond_they_hold_it_and_a_waited_commit_restarts_the_count(
        mock_cluster: MockCluster, make_producer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of sends that never waits gives other tasks a turn once per millisecond; a commit that
    waited for its EndTxn gave the loop up, so the next transaction's first send does not yield
    again (it did, each transaction - an extra loop iteration per small transaction, which all take
    longer than a millisecond). The producer module's clock moves 2 ms per reading here, so that
    every send is "a millisecond later" whatever the machine's speed. Whether a commit waited is
    recorded, not assumed: on a loaded machine the Sender may finish a commit before the task looks,
    and then the loop was not given up and the next send yields, as it should."""
    import time as real_time
    import types

    from txnproducer.aio import producer as aio_producer

    mock_cluster.create_topic("turns", partitions=1)
    offset = [0.0]

    def monotonic() -> float:
        offset[0] += 0.002
        return real_time.monotonic() + offset[0]

    monkeypatch.setattr(aio_producer, "time", types.SimpleNamespace(monotonic=monotonic))
    yields = []
    sleep = asyncio.sleep
    tasks: list[asyncio.Task[Any] | None] = []

    async def counting_sleep(delay: float, *args: Any) -> Any:
        # this test's task only: asyncio.sleep is patched for the whole process meanwhile
        if delay == 0 and asyncio.current_task() in tasks:
            yields.append(delay)
        return await sleep(delay, *args)

    waited: list[bool] = []
    real_wait_result = aio_producer.wait_result

    async def recording_wait_result(*args: Any) -> Any:
        # the loop runs this callback only if the task gives the loop up while it waits
        ran: list[bool] = []
        handle = asyncio.get_running_loop().call_soon(ran.append, True)
        value = await real_wait_result(*args)
        handle.cancel()
        waited.append(bool(ran))
        return value

    monkeypatch.setattr(aio_producer, "wait_result", recording_wait_result)

    async def main() -> None:
        tasks.append(asyncio.current_task())
        producer = make_producer()
        await producer.init_transactions()
        waited.clear()
        monkeypatch.setattr(asyncio, "sleep", counting_sleep)
        for n in range(5):  # one record each: its send follows a commit (nearly always one that waited)
            producer.begin_transaction()
            await producer.send("turns", b"one-%d" % n)
            await producer.commit_transaction()
        single = len(yields)
        producer.begin_transaction()
        for n in range(5):  # a run of sends, each "2 ms" after the one before
            await producer.send("turns", b"run-%d" % n)
        await producer.commit_transaction()
        monkeypatch.setattr(asyncio, "sleep", sleep)
        # a send after a commit that did not wait yields: the first 4 commits precede single records,
        # the 5th the run's first send
        after_unwaited = [not w for w in waited[:5]]
        assert (single, len(yields) - single) == (sum(after_unwaited[:4]), 4 + after_unwaited[4])

    run(main())
    assert committed_values(mock_cluster, "turns", 0) == \
        [b"one-%d" % n for n in range(5)] + [b"run-%d" % n for n in range(5)]
