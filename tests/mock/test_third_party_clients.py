"""Third-party transactional producers validate the MockCluster (TV1 and TV2 clusters).

kafka-python 3.0.12's KafkaProducer and confluent-kafka 2.16's Producer (librdkafka) run the same
two scenarios a user relies on:

* commit 10 / abort 10 / commit 3: a read_committed KafkaConsumer sees exactly the 13 committed
  records, in order per partition; a read_uncommitted one sees all 23;
* fencing: a second producer with the same transactional.id fences the first, whose commit fails
  with the client's fenced error, and nothing the first wrote in or after that transaction is
  visible to read_committed consumers.

Each client's producer is wrapped in a small adapter so both scenarios are written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError
from kafka.errors import ProducerFencedError as KafkaPythonFenced
from kafka.structs import TopicPartition

from txnproducer.testing import MockCluster

TOPIC = "third-party"
PARTITIONS = 3
TIMEOUT_S = 10


class TxnClient(Protocol):
    fenced_error: type[BaseException]  # what commit raises when fenced (checked by assert_fenced)

    def init(self) -> None: ...
    def begin(self) -> None: ...
    def send(self, value: bytes, partition: int) -> None: ...
    def flush(self) -> None: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...
    def close(self) -> None: ...
    def assert_fenced(self, exc: BaseException) -> None: ...


class KafkaPythonClient:
    """kafka-python 3.0.12's transactional KafkaProducer."""

    fenced_error: type[BaseException] = KafkaError

    def __init__(self, cluster: MockCluster, transactional_id: str) -> None:
        self._producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                                       transactional_id=transactional_id, linger_ms=5,
                                       max_block_ms=TIMEOUT_S * 1000, request_timeout_ms=5000)

    def init(self) -> None:
        self._producer.init_transactions()

    def begin(self) -> None:
        self._producer.begin_transaction()

    def send(self, value: bytes, partition: int) -> None:
        self._producer.send(TOPIC, value=value, partition=partition)

    def flush(self) -> None:
        self._producer.flush(timeout=TIMEOUT_S)

    def commit(self) -> None:
        self._producer.commit_transaction()

    def abort(self) -> None:
        self._producer.abort_transaction()

    def close(self) -> None:
        self._producer.close(timeout=5)

    def assert_fenced(self, exc: BaseException) -> None:
        assert isinstance(exc, KafkaPythonFenced), repr(exc)


class ConfluentClient:
    """confluent-kafka 2.16's Producer (librdkafka)."""

    fenced_error: type[BaseException] = Exception

    def __init__(self, cluster: MockCluster, transactional_id: str) -> None:
        self._ck = pytest.importorskip("confluent_kafka")
        self.fenced_error = self._ck.KafkaException
        self._producer = self._ck.Producer({
            "bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id,
            "linger.ms": 5, "log_level": 3})
        self._failed: list[Any] = []

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self._failed.append(err)

    def init(self) -> None:
        self._producer.init_transactions(TIMEOUT_S)

    def begin(self) -> None:
        self._producer.begin_transaction()

    def send(self, value: bytes, partition: int) -> None:
        self._producer.produce(TOPIC, value=value, partition=partition, on_delivery=self._on_delivery)

    def flush(self) -> None:
        assert self._producer.flush(TIMEOUT_S) == 0
        assert not self._failed, self._failed

    def commit(self) -> None:
        self._producer.commit_transaction(TIMEOUT_S)

    def abort(self) -> None:
        self._producer.abort_transaction(TIMEOUT_S)

    def close(self) -> None:
        self._producer.flush(1)
        del self._producer  # the last reference: librdkafka's threads stop before the cluster does

    def assert_fenced(self, exc: BaseException) -> None:
        assert isinstance(exc, self._ck.KafkaException), repr(exc)
        error = exc.args[0]
        # librdkafka reports a fencing as the fatal local error _FENCED (from PRODUCER_FENCED /
        # INVALID_PRODUCER_EPOCH answers)
        assert error.fatal(), error
        assert error.code() in (self._ck.KafkaError._FENCED, self._ck.KafkaError.PRODUCER_FENCED,
                                self._ck.KafkaError.INVALID_PRODUCER_EPOCH), error


CLIENTS: dict[str, Callable[[MockCluster, str], TxnClient]] = {
    "kafka-python": KafkaPythonClient, "confluent-kafka": ConfluentClient}


@pytest.fixture(params=sorted(CLIENTS))
def make_client(request: pytest.FixtureRequest, mock_cluster: MockCluster) -> Iterator[Any]:
    made: list[TxnClient] = []

    def make(transactional_id: str) -> TxnClient:
        client: TxnClient = CLIENTS[request.param](mock_cluster, transactional_id)
        made.append(client)
        return client

    mock_cluster.create_topic(TOPIC, partitions=PARTITIONS)
    yield make
    for client in made:
        client.close()


TVS = pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True, ids=["tv1", "tv2"])


def consume(cluster: MockCluster, isolation_level: str, expected: int) -> dict[int, list[bytes]]:
    """Values per partition as a KafkaConsumer with ``isolation_level`` reads them from the start.

    Stops after ``expected`` records, then polls once more so that extra (wrongly visible) records
    would show up too.
    """
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, isolation_level=isolation_level,
                             enable_auto_commit=False, consumer_timeout_ms=TIMEOUT_S * 1000)
    seen: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        for count, message in enumerate(consumer, start=1):
            seen[message.partition].append(message.value)
            if count == expected:
                break
        for records in consumer.poll(timeout_ms=300).values():
            for message in records:
                seen[message.partition].append(message.value)
        # the consumer is at the end of what it may read: the log end (read_uncommitted) or the
        # last stable offset, which here is the log end too since no transaction is open
        for p in range(PARTITIONS):
            tp = TopicPartition(TOPIC, p)
            assert consumer.position(tp) == cluster.state.partition_log(TOPIC, p).high_watermark  # type: ignore[union-attr]
    finally:
        consumer.close()
    return seen


def _transaction(client: TxnClient, label: str, count: int, commit: bool,
                 expected: dict[int, list[bytes]]) -> None:
    client.begin()
    for i in range(count):
        value = b"%s-%d" % (label.encode(), i)
        client.send(value, i % PARTITIONS)
        expected[i % PARTITIONS].append(value)
    if commit:
        client.commit()
    else:
        client.flush()  # the records reach the log before the abort marker
        client.abort()


@TVS
def test_commit_abort_commit_is_seen_exactly_by_read_committed(
        mock_cluster: MockCluster, make_client: Any) -> None:
    client = make_client("tp-sequence")
    client.init()
    committed: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    everything: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    aborted: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    _transaction(client, "commit-a", 10, True, committed)
    _transaction(client, "abort", 10, False, aborted)
    _transaction(client, "commit-b", 3, True, committed)
    for p in range(PARTITIONS):  # log order: commit-a, abort, commit-b
        everything[p] = [v for v in committed[p] if v.startswith(b"commit-a")] + aborted[p] + [
            v for v in committed[p] if v.startswith(b"commit-b")]

    assert consume(mock_cluster, "read_committed", 13) == committed
    assert consume(mock_cluster, "read_uncommitted", 23) == everything
    state = mock_cluster.describe_transaction("tp-sequence")
    assert state is not None and state["state"] == "CompleteCommit"


@TVS
def test_second_producer_fences_the_first(mock_cluster: MockCluster, make_client: Any) -> None:
    first = make_client("tp-fence")
    first.init()
    first.begin()
    for i in range(3):
        first.send(b"zombie-%d" % i, i % PARTITIONS)
    first.flush()  # in the log, in an open transaction

    second = make_client("tp-fence")
    second.init()  # bumps the epoch and aborts the first one's transaction
    first.send(b"zombie-late", 0)  # sent after the fence: the client may queue it or fail it
    with pytest.raises(first.fenced_error) as raised:
        first.commit()
    first.assert_fenced(raised.value)

    second.begin()
    second.send(b"live", 0)
    second.commit()

    assert consume(mock_cluster, "read_committed", 1) == {0: [b"live"], 1: [], 2: []}
    log_values = sorted(r.value for p in range(PARTITIONS)
                        for r in mock_cluster.partition_records(TOPIC, p))
    # the zombie's records before the fence are in the log (aborted); the late one never got in
    assert log_values == [b"live", b"zombie-0", b"zombie-1", b"zombie-2"]
