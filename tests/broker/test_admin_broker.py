"""The admin tools against a real Apache Kafka 4.1 (``KAFKA_HOME``): hanging transactions found and ended,
the ACLs each command needs as the broker checks them, and ``kafka-transactions.sh`` side by side.

The broker is this module's own (``tests/_support/kafka_secure.py``: StandardAuthorizer, a plaintext
``INTERNAL`` listener whose anonymous user is a super user - the operator with every right - and
SCRAM-SHA-512 users on ``SASL_PLAINTEXT`` for the ACL checks).

A hanging transaction is made the way KIP-664 describes them arising: a transactional batch the
coordinator never heard of. A Kafka 4.1 leader refuses one while ``transaction.partition.verification.enable``
is on (it asks the coordinator), so the test turns that dynamic broker setting off for the one Produce
(v9, a pre-KIP-890 client) that plants the batch - with a producer id from an idempotent InitProducerId,
which no transactional id maps to - and on again before anything else runs (TV2 producers need it: with
it off their partitions are never added). The batch is time-stamped 20 minutes ago, past Kafka's
default ``transaction.max.timeout.ms``, as ``find-hanging`` needs.

Needs ``KAFKA_HOME`` (and ``java``); skipped with a one-line reason otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.producer import ProduceRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest, WriteTxnMarkersRequest

from tests._support.readers import CommittedReader
from txnproducer import TransactionalProducer
from txnproducer._internal.protocol import error_codes as ec
from txnproducer.admin import AdminAuthorizationError, TopicPartition, TransactionsAdmin
from txnproducer.cli import main
from txnproducer.testing.wire_client import WireClient, build_batch

pytest.importorskip("trustme")

USERS = {"alice": "alice-Adm1n-pw", "bob": "bob-Adm1n-pw"}
AGE_MS = 20 * 60_000
VERIFICATION = "transaction.partition.verification.enable"


@pytest.fixture(scope="module")
def broker() -> Iterator[Any]:
    from tests._support.authorization import KafkaAcls
    from tests._support.kafka_secure import SecuredKafkaHomeBroker

    kafka_home = os.environ.get("KAFKA_HOME")
    if not kafka_home:
        pytest.skip("the admin tools' broker tier starts its own broker: set KAFKA_HOME")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("KAFKA_HOME is set but no java on PATH (or JAVA_HOME)")
    workdir = Path(tempfile.mkdtemp(prefix="txnproducer-kafka-admin-"))
    node = SecuredKafkaHomeBroker(Path(kafka_home), workdir, USERS)
    try:
        node.start()
        node.acls = KafkaAcls(node.bootstrap)
        try:
            yield node
        finally:
            node.acls.close()
    finally:
        node.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def topic(broker: Any) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"admin-{uuid.uuid4().hex[:8]}"
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="tests-topic-admin")
    try:
        client.create_topics([NewTopic(name, 2, 1)])
    finally:
        client.close()
    return name


def operator(broker: Any) -> TransactionsAdmin:
    """The tools as a super user (the INTERNAL listener's anonymous principal)."""
    return TransactionsAdmin(bootstrap_servers=broker.bootstrap, **{"default.api.timeout.ms": 30_000})


def as_user(broker: Any, user: str) -> TransactionsAdmin:
    return TransactionsAdmin(
        {
            "bootstrap.servers": broker.bootstrap_of("SASL_PLAINTEXT"),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.plain.username": user,
            "sasl.plain.password": USERS[user],
            "default.api.timeout.ms": "15000",
        }
    )


def producer(broker: Any, transactional_id: str) -> TransactionalProducer:
    p = TransactionalProducer(bootstrap_servers=broker.bootstrap, transactional_id=transactional_id)
    p.init_transactions()
    return p


def commit(broker: Any, topic: str, partition: int, value: bytes) -> None:
    with producer(broker, f"{topic}-writer") as p, p.transaction():
        p.send(topic, value, partition=partition).get(30)


def _set_verification(broker: Any, enabled: bool) -> None:
    """Change the dynamic broker setting and wait until the broker reports it (bounded)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="tests-config-admin")
    try:
        value = "true" if enabled else "false"
        client.alter_configs(
            [ConfigResource(ConfigResourceType.BROKER, "1", {VERIFICATION: value})], raise_on_unknown=False
        )
        deadline = time.monotonic() + 30
        while True:
            answer = client.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1", [VERIFICATION])])
            if value in repr(answer):
                return
            assert time.monotonic() < deadline, f"{VERIFICATION} did not become {value}: {answer}"
            time.sleep(
                0.1
            )  # a dynamic config reaches the broker through its metadata log: nothing to wait on
    finally:
        client.close()


@contextmanager
def verification_off(broker: Any) -> Iterator[None]:
    _set_verification(broker, False)
    try:
        yield
    finally:
        _set_verification(broker, True)


def plant_hanging(broker: Any, topic: str, partition: int, epoch: int = 0) -> tuple[int, int]:
    """A transaction the coordinator never heard of on ``topic-partition`` (module docstring):
    returns its producer id and start offset."""
    with WireClient("127.0.0.1", broker.port, timeout=30) as wire:
        init = wire.send(
            InitProducerIdRequest[4](
                transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
            )
        )
        assert init.error_code == 0
        batch = build_batch(
            [(b"held", b"by a forgotten transaction")],
            producer_id=init.producer_id,
            producer_epoch=epoch,
            base_sequence=0,
            transactional=True,
            timestamp=int(time.time() * 1000) - AGE_MS,
        )
        t = ProduceRequest.TopicProduceData
        request = ProduceRequest[9](
            transactional_id=f"ghost-{uuid.uuid4().hex[:8]}",
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                t(name=topic, partition_data=[t.PartitionProduceData(index=partition, records=batch)])
            ],
        )
        with verification_off(broker):
            deadline = time.monotonic() + 30
            while True:
                answer = wire.send(request).responses[0].partition_responses[0]
                if answer.error_code == 0:
                    return int(init.producer_id), int(answer.base_offset)
                # INVALID_TXN_STATE until the setting reached the leader's ReplicaManager
                assert answer.error_code == ec.INVALID_TXN_STATE and time.monotonic() < deadline, answer
                time.sleep(0.1)  # as above: polling the broker's configuration


def test_a_forgotten_transaction_is_found_aborted_and_the_consumer_moves_on(broker: Any, topic: str) -> None:
    commit(broker, topic, 0, b"before")
    pid, start = plant_hanging(broker, topic, 0)
    commit(broker, topic, 0, b"after")
    reader = CommittedReader(broker.bootstrap, topic, 0)
    live = producer(broker, f"{topic}-live")
    try:
        live.begin_transaction()
        live.send(topic, b"open", partition=1).get(30)
        assert reader.read_to_end() == start and reader.values == [b"before"]
        with operator(broker) as admin:
            # with no age limit, the live transaction is a candidate too - and is not hanging
            everything = admin.find_hanging(topic=topic, max_transaction_timeout_ms=0)
            assert [(h.partition.partition, h.producer_id) for h in everything] == [(0, pid)]
            (hanging,) = admin.find_hanging(topic=topic)
            assert hanging.start_offset == start and hanging.duration_ms >= AGE_MS
            plan = admin.plan_abort(topic=topic, partition=0, start_offset=start)
            result = admin.abort(plan)
            ((lso, hw),) = result.offsets.values()
            assert lso == hw
            assert admin.find_hanging(topic=topic) == []
        assert reader.end() == hw and reader.read_to_end() == hw
        assert reader.values == [b"before", b"after"]
        live.commit_transaction()
    finally:
        live.close()
        reader.close()


def test_write_txn_markers_answers_as_the_mock_says(broker: Any, topic: str) -> None:
    """What the MockCluster's WriteTxnMarkers handler claims, on the real leader (not in the recordings)."""
    pid, _ = plant_hanging(broker, topic, 1, epoch=1)
    m = WriteTxnMarkersRequest.WritableTxnMarker

    def marker(epoch: int, coordinator_epoch: int) -> int:
        request = WriteTxnMarkersRequest[1](
            markers=[
                m(
                    producer_id=pid,
                    producer_epoch=epoch,
                    transaction_result=False,
                    coordinator_epoch=coordinator_epoch,
                    topics=[m.WritableTxnMarkerTopic(name=topic, partition_indexes=[1])],
                )
            ]
        )
        with WireClient("127.0.0.1", broker.port, timeout=30) as wire:
            return int(wire.send(request).markers[0].topics[0].partitions[0].error_code)

    assert marker(0, 5) == ec.INVALID_PRODUCER_EPOCH  # below the producer's epoch on the partition
    assert marker(1, 5) == ec.NONE
    assert marker(1, 4) == ec.TRANSACTION_COORDINATOR_FENCED  # below its last marker's coordinator epoch
    assert marker(1, 5) == ec.NONE  # the same epochs pass again (no KIP-1228 strict check in 4.1)


def test_each_command_needs_the_acls_the_readme_names(broker: Any, topic: str) -> None:
    acls = broker.acls
    live = producer(broker, f"{topic}-app")
    try:
        live.begin_transaction()
        live.send(topic, b"x", partition=0).get(30)
        with as_user(broker, "alice") as alice:
            assert alice.list_transactions(prefix=f"{topic}-").listings == ()  # filtered, not refused
            with pytest.raises(AdminAuthorizationError, match=f"Describe on TransactionalId '{topic}-app'"):
                alice.describe_transactions([f"{topic}-app"])
            with pytest.raises(AdminAuthorizationError, match=f"Describe on Topic '{topic}'"):
                alice.describe_producers([TopicPartition(topic, 0)])
            acls.add_acl("User:alice", "topic", topic, "describe")
            with pytest.raises(AdminAuthorizationError, match=f"Read on Topic '{topic}'"):
                alice.describe_producers([TopicPartition(topic, 0)])
            acls.add_acl("User:alice", "topic", topic, "read")
            acls.add_acl("User:alice", "transactional_id", f"{topic}-", "describe", pattern="prefixed")
            assert [t.transactional_id for t in alice.list_transactions(prefix=f"{topic}-").listings] == [
                f"{topic}-app"
            ]
            assert alice.describe_transactions([f"{topic}-app"])[f"{topic}-app"].state == "Ongoing"
            plan = alice.plan_abort(transactional_id=f"{topic}-app")
            with pytest.raises(AdminAuthorizationError, match=f"Write on TransactionalId '{topic}-app'"):
                alice.abort(plan)
            _, start = plant_hanging(broker, topic, 1)
            assert [h.start_offset for h in alice.find_hanging(topic=topic)] == [start]
            marker_plan = alice.plan_abort(topic=topic, partition=1, start_offset=start)
            with pytest.raises(AdminAuthorizationError, match="Alter or ClusterAction on the Cluster"):
                alice.abort(marker_plan)
            acls.add_acl("User:alice", "cluster", "kafka-cluster", "cluster_action")
            alice.abort(marker_plan)
            acls.add_acl("User:alice", "transactional_id", f"{topic}-app", "write")
            alice.abort(plan)
        # Alter on the cluster is the other way in (KafkaApis checks it first)
        _, start = plant_hanging(broker, topic, 1)
        acls.add_acl("User:bob", "topic", topic, "read")
        acls.add_acl("User:bob", "transactional_id", "*", "describe")
        acls.add_acl("User:bob", "cluster", "kafka-cluster", "alter")
        with as_user(broker, "bob") as bob:
            bob.abort(bob.plan_abort(topic=topic, partition=1, start_offset=start))
            assert bob.find_hanging(topic=topic) == []
    finally:
        live.close(0)


def _java_list(broker: Any) -> set[tuple[str, int, int, str]]:
    """``kafka-transactions.sh list`` on the same cluster: (id, coordinator, producer id, state) rows."""
    tool = Path(os.environ["KAFKA_HOME"]) / "bin" / "kafka-transactions.sh"
    env = {
        **os.environ,
        "KAFKA_JMX_OPTS": "-Djava.rmi.server.hostname=127.0.0.1",
        "KAFKA_HEAP_OPTS": "-Xmx256M",
        "LOG_DIR": str(Path(tempfile.gettempdir()) / "txnproducer-java-tool"),
    }
    done = subprocess.run(
        [str(tool), "--bootstrap-server", broker.bootstrap, "list"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line.split() for line in done.stdout.strip().splitlines()]
    assert lines[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], lines[0]
    return {(row[0], int(row[1]), int(row[2]), row[3]) for row in lines[1:]}


def test_the_java_tool_and_ours_list_the_same_transactions(
    broker: Any, topic: str, capsys: pytest.CaptureFixture[str]
) -> None:
    commit(broker, topic, 0, b"x")
    live = producer(broker, f"{topic}-open")
    try:
        live.begin_transaction()
        live.send(topic, b"y", partition=1).get(30)
        java = _java_list(broker)
        assert main(["transactions", "list", "--bootstrap-server", broker.bootstrap]) == 0
        rows = [line.split() for line in capsys.readouterr().out.strip().splitlines()]
        ours = {(r[0], int(r[1]), int(r[2]), r[3]) for r in rows[1:]}
        assert rows[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
        assert ours == java
        mine = {r[0]: (r[2], r[3]) for r in ours if r[0].startswith(topic)}
        assert mine[f"{topic}-open"] == (live.producer_id, "Ongoing")
        assert mine[f"{topic}-writer"][1] == "CompleteCommit"
        live.commit_transaction()
    finally:
        live.close()


def test_the_java_tool_finds_the_same_hanging_transaction(broker: Any, topic: str) -> None:
    pid, start = plant_hanging(broker, topic, 0)
    tool = Path(os.environ["KAFKA_HOME"]) / "bin" / "kafka-transactions.sh"
    env = {
        **os.environ,
        "KAFKA_JMX_OPTS": "-Djava.rmi.server.hostname=127.0.0.1",
        "KAFKA_HEAP_OPTS": "-Xmx256M",
    }
    done = subprocess.run(
        [str(tool), "--bootstrap-server", broker.bootstrap, "find-hanging", "--topic", topic],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [re.split(r"\s+", line.strip()) for line in done.stdout.strip().splitlines()[1:]]
    with operator(broker) as admin:
        ours = admin.find_hanging(topic=topic)
        assert (
            [(r[0], int(r[1]), int(r[2]), int(r[5])) for r in rows]
            == [(h.partition.topic, h.partition.partition, h.producer_id, h.start_offset) for h in ours]
            == [(topic, 0, pid, start)]
        )
        admin.abort(admin.plan_abort(topic=topic, partition=0, start_offset=start))


def test_spark_status_shows_a_stopped_drivers_prepared_batch(broker: Any, topic: str) -> None:
    """The Spark view on the real cluster: tasks prepared, the driver gone before its decision."""
    pytest.importorskip("pyspark.sql.datasource", reason="pyspark>=4.1 not installed (the [spark] extra)")
    import types

    import attrs

    from tests._support import sink_protocol as protocol
    from txnproducer.admin.spark_view import spark_sink_status
    from txnproducer.spark.sink.state_topic import close_shared_state_topic

    prefix = f"{topic}-q"
    cluster: Any = types.SimpleNamespace(bootstrap_servers=broker.bootstrap)  # what sink_options reads
    options = attrs.evolve(protocol.sink_options(cluster, topic), transactional_id_prefix=prefix)
    try:
        done = [protocol.attempt(options, 0, p, 0, [b"b0-%d" % p], kafka_partition=p) for p in (0, 1)]
        with protocol.committer(options) as driver:
            driver.commit(done, 0)
        prepared = [protocol.attempt(options, 1, p, 0, [b"b1-%d" % p], kafka_partition=p) for p in (0, 1)]
        with operator(broker) as admin:
            status = spark_sink_status(admin, prefix, now_ms=int(time.time() * 1000) + 12 * 60_000)
            assert status.verdict.startswith(
                "batch 1 prepared 2 of 2 transactions, driver has not decided for 12 min: the driver is down?"
            )
            assert status.verdict.endswith(f"They hold the last stable offset of {topic}-0, {topic}-1.")
            with protocol.committer(options) as driver:  # the restarted driver decides
                driver.commit(prepared, 1)
            after = spark_sink_status(admin, prefix)
            assert after.verdict.startswith("idle: batch 1 was committed and finished")
    finally:
        close_shared_state_topic()
