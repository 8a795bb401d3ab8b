"""Record what a real Kafka 4.1.0 answers to the read path's requests: the conformance recordings in
``tests/conformance/kafka-4.1.0/`` (``read_offsets``, ``fetch_sessions``, ``classic_group``), in the format
of the team's shared recordings (``shared/conformance/kafka-4.1.0/README.md``), which
``tests/mock/test_conformance.py`` replays against MockCluster.

Run by hand, not by the suite (it starts a broker)::

    KAFKA_HOME=/work/kafka/kafka_2.13-4.1.0 .venv/bin/python -m tests.conformance.record_read_path

It formats and starts one KRaft node (broker + controller, node id 1) on loopback ports in a temporary
directory (``tests/_support/kafka_home.py``; Kafka's defaults otherwise - ``group.initial.rebalance.delay.ms``
stays 3000), sends each request with kafka-python's request classes for an explicit version
(``txnproducer.testing.wire_client.WireClient``), and writes every exchange. ``read_offsets`` restarts the
node once (the leader epoch changes: a single node has no other way to a new epoch). The node is stopped
at the end, by the process group it was started in.

Normalization, as the shared recordings: ``$RUN`` (the run id in names), ``$TOPIC_IDn``, ``$TS`` (wall-clock
timestamps), ``$CLUSTER_ID``, port 9092 for the node's; and two more for values the broker makes up:
``$MEMBERn`` (member ids handed out by JoinGroup) and ``$SESSIONn`` (fetch session ids). Binary fields of
requests (a consumer's subscription, an assignment) are ``{"latin1": ...}`` - their bytes as Latin-1 text,
``$RUN`` replaced like anywhere else (a run id has a fixed length, so the replay's own run id keeps the
encoded lengths right); responses are kafka-python's ``to_dict()``, Fetch records decoded as in the shared
recordings.

After CreateTopics, Metadata is polled until every partition has a leader and Fetch until every partition
answers NONE (a fresh topic answers NOT_LEADER_OR_FOLLOWER for a moment even after Metadata shows its
leader); on a fresh node FindCoordinator and a probe Heartbeat are polled until the group coordinator
runs. None of these polls is recorded (timing noise), as in the shared recordings.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka.protocol.admin.topics import CreateTopicsRequest, DeleteRecordsRequest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.producer.produce import ProduceRequest

from tests._support.kafka_home import KafkaHomeBroker
from txnproducer._internal.protocol.consumer_protocol import encode_assignment, encode_subscription
from txnproducer.testing.wire_client import WireClient, build_batch, decode_batches

OUT = Path(__file__).resolve().parent / "kafka-4.1.0"
BROKER = (
    "Apache Kafka 4.1.0, KRaft combined broker+controller, single node 1 at 127.0.0.1:9092 (Kafka's defaults)"
)
RECORDED_WITH = (
    "tests/conformance/record_read_path.py: kafka-python's request classes for an explicit version over "
    "txnproducer.testing.wire_client.WireClient (one connection, one request at a time)"
)
NORMALIZATION = (
    "as the shared recordings ($RUN, $TOPIC_IDn, $TS, $CLUSTER_ID, port 9092), plus $MEMBERn (member ids) "
    'and $SESSIONn (fetch session ids); request bytes as {"latin1": ...}'
)


class Broker(KafkaHomeBroker):
    def adjust_properties(self, lines: dict[str, str]) -> dict[str, str]:
        lines.pop("group.initial.rebalance.delay.ms", None)  # Kafka's default (3000), as a real cluster
        return lines


def jsonable(value: Any) -> Any:
    """A request's ``to_dict(json=False)`` as JSON: bytes as {"latin1": ...}, UUIDs as strings."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"latin1": bytes(value).decode("latin-1")}
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def decoded_batches(data: Any) -> list[dict[str, Any]]:
    """Fetched (or produced) batches in the shared recordings' decoded form."""
    out = []
    for batch in decode_batches(bytes(data) if data else None):
        attributes = {
            "compression": batch.compression_type,
            "timestamp_type": "LogAppendTime" if batch.timestamp_type else "CreateTime",
            "transactional": batch.is_transactional,
            "control": batch.is_control_batch,
        }
        records = []
        for record in batch:
            records.append(
                {
                    "offset": record.offset,
                    "timestamp": record.timestamp,
                    "key": None if record.key is None else bytes(record.key).decode("utf-8", "replace"),
                    "value": None if record.value is None else bytes(record.value).decode("utf-8", "replace"),
                    "headers": [list(h) for h in record.headers],
                }
            )
        out.append(
            {
                "base_offset": batch.base_offset,
                "last_offset_delta": batch.last_offset_delta,
                "partition_leader_epoch": batch.leader_epoch,
                "magic": batch.magic,
                "attributes": attributes,
                "producer_id": batch.producer_id,
                "producer_epoch": batch.producer_epoch,
                "base_sequence": batch.base_sequence,
                "first_timestamp": batch.first_timestamp,
                "max_timestamp": batch.max_timestamp,
                "record_count": batch.records_count,
                "size_in_bytes": batch.size_in_bytes,
                "records": records[:3],
            }
        )
    return out


def error_codes(value: Any, key: str = "") -> list[int]:
    if isinstance(value, dict):
        return [c for k, v in value.items() for c in error_codes(v, k)]
    if isinstance(value, list):
        return [c for v in value for c in error_codes(v, key)]
    return [value] if key.endswith("error_code") and isinstance(value, int) and value else []


class Recorder:
    """One recording: the exchanges of one scenario, normalized when written."""

    def __init__(self, broker: Broker, run: str, scenario: str) -> None:
        self.broker = broker
        self.run = run
        self.scenario = scenario
        self.steps: list[dict[str, Any]] = []
        self.client = WireClient("127.0.0.1", broker.port, client_id=f"conformance-{run}", timeout=60.0)
        self.members: list[str] = []
        self.sessions: list[int] = []

    def reconnect(self) -> None:
        self.client.close()
        self.client = WireClient(
            "127.0.0.1", self.broker.port, client_id=f"conformance-{self.run}", timeout=60.0
        )

    def send(self, request: Any, note: str, *, setup: bool = False, produce: bool = False) -> Any:
        response = self.client.send(request)
        req = jsonable(request.to_dict(json=False))
        if produce:
            for topic, sent in zip(req["topic_data"], request.topic_data, strict=True):
                for part, raw in zip(topic["partition_data"], sent.partition_data, strict=True):
                    part["records"] = decoded_batches(raw.records)
        if isinstance(request, FetchRequest):
            resp = response.to_dict(json=False)
            for topic in resp["responses"]:
                for part in topic["partitions"]:
                    part["records"] = decoded_batches(part["records"])
            resp = jsonable(resp)
            if resp.get("session_id") and resp["session_id"] not in self.sessions:
                self.sessions.append(resp["session_id"])
        else:
            resp = response.to_dict()
        if isinstance(request, JoinGroupRequest):
            for member_id in [resp.get("member_id"), resp.get("leader")] + [
                m["member_id"] for m in resp["members"]
            ]:
                if member_id and member_id not in self.members:
                    self.members.append(member_id)
        step: dict[str, Any] = {
            "step": len(self.steps) + 1,
            "api": type(request).__name__.removesuffix("Request"),
            "api_key": request.API_KEY,
            "version": request.API_VERSION,
        }
        if setup:
            step["setup"] = True
        step.update(note=note, request=req, response=resp)
        codes = error_codes(resp)
        if codes:
            step["errors"] = [f"error_code = {c}" for c in codes]
        self.steps.append(step)
        return response

    def action(self, action: str, note: str, **fields: Any) -> None:
        self.steps.append({"step": len(self.steps) + 1, "action": action, "note": note, **fields})

    def write(self, what: str, names: dict[str, str]) -> None:
        data = {
            "scenario": self.scenario,
            "broker": BROKER,
            "recorded_with": RECORDED_WITH,
            "normalization": NORMALIZATION,
            "names": names,
            "what_this_shows": what,
            "steps": self.steps,
        }
        OUT.mkdir(parents=True, exist_ok=True)
        path = OUT / f"{self.scenario}.json"
        path.write_text(json.dumps(self.normalized(data), indent=1) + "\n")
        print(f"wrote {path} ({len(self.steps)} steps)")

    def normalized(self, data: Any) -> Any:
        topic_ids: dict[str, str] = {}
        members = {m: f"$MEMBER{i + 1}" for i, m in enumerate(self.members)}
        sessions = {s: f"$SESSION{i + 1}" for i, s in enumerate(self.sessions)}
        port = self.broker.port

        def walk(value: Any, key: str = "") -> Any:
            if isinstance(value, dict):
                return {k: walk(v, k) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v, key) for v in value]
            if isinstance(value, str):
                if key == "topic_id" and value != "00000000-0000-0000-0000-000000000000":
                    return topic_ids.setdefault(value, f"$TOPIC_ID{len(topic_ids) + 1}")
                if key == "cluster_id":
                    return "$CLUSTER_ID"
                if value in members:
                    return members[value]
                return value.replace(self.run, "$RUN")
            if isinstance(value, int) and not isinstance(value, bool):
                if key == "port" and value == port:
                    return 9092
                if key == "session_id" and value in sessions:
                    return sessions[value]
                if key in ("timestamp", "first_timestamp", "max_timestamp") and value > 0:
                    return "$TS"
            return value

        return walk(data)


# -- request builders -----------------------------------------------------------------------------------


def create_topic(rec: Recorder, name: str, partitions: int) -> None:
    rec.send(
        CreateTopicsRequest[7](
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]
                )
            ],
            timeout_ms=30000,
            validate_only=False,
        ),
        "create a fresh topic",
        setup=True,
    )

    def led() -> bool:
        parts = rec.client.send(metadata_request([name])).topics[0].partitions
        return len(parts) == partitions and all(p.leader_id >= 0 for p in parts)

    until(led, f"every partition of {name} has a leader")
    ready = fetch_request(12, name, None, [(p, 0) for p in range(partitions)], session_id=0, epoch=-1)
    until(lambda: all(p.error_code == 0 for t in rec.client.send(ready).responses for p in t.partitions),
          f"every partition of {name} answers a fetch")


def until(check: Callable[[], bool], what: str, attempts: int = 100) -> None:
    """Ask the broker again, 0.1 s apart, until ``check()`` holds: a fresh topic's leaders, a restarted
    node's partitions, a new node's group coordinator. A real broker offers no event to wait on, and
    these answers are not recorded (timing noise). RuntimeError naming ``what`` when it never does."""
    for _ in range(attempts):
        if check():
            return
        time.sleep(0.1)
    raise RuntimeError(f"the broker never reached this: {what}")


def metadata_request(topics: list[str]) -> Any:
    return MetadataRequest[12](
        topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=t) for t in topics],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def produce(rec: Recorder, topic: str, partition: int, values: list[bytes], note: str) -> None:
    batch = build_batch([(b"k", v) for v in values])
    rec.send(
        ProduceRequest[9](
            transactional_id=None,
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=topic,
                    partition_data=[
                        ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=batch)
                    ],
                )
            ],
        ),
        note,
        produce=True,
    )


def list_offsets(
    rec: Recorder,
    topic: str,
    timestamp: int,
    note: str,
    *,
    current_leader_epoch: int = -1,
    isolation_level: int = 1,
) -> Any:
    t = ListOffsetsRequest.ListOffsetsTopic
    return rec.send(
        ListOffsetsRequest[9](
            replica_id=-1,
            isolation_level=isolation_level,
            topics=[
                t(
                    name=topic,
                    partitions=[
                        t.ListOffsetsPartition(
                            partition_index=0, current_leader_epoch=current_leader_epoch, timestamp=timestamp
                        )
                    ],
                )
            ],
        ),
        note,
    )


def epoch_end(rec: Recorder, topic: str, epoch: int, note: str, *, current_leader_epoch: int = -1) -> Any:
    t = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    return rec.send(
        OffsetForLeaderEpochRequest[4](
            replica_id=-1,
            topics=[
                t(
                    topic=topic,
                    partitions=[
                        t.OffsetForLeaderPartition(
                            partition=0, current_leader_epoch=current_leader_epoch, leader_epoch=epoch
                        )
                    ],
                )
            ],
        ),
        note,
    )


def leader_epoch(rec: Recorder, topic: str, note: str) -> int:
    meta = rec.send(metadata_request([topic]), note)
    return int(meta.topics[0].partitions[0].leader_epoch)


# -- scenarios ------------------------------------------------------------------------------------------


def read_offsets(broker: Broker, run: str) -> None:
    rec = Recorder(broker, run, "read_offsets")
    a, b = f"conformance-read-offsets-a-{run}", f"conformance-read-offsets-b-{run}"
    create_topic(rec, a, 1)
    create_topic(rec, b, 1)
    list_offsets(rec, a, -2, "empty topic, EARLIEST (read_committed): offset 0 and the leader epoch")
    list_offsets(rec, a, -1, "empty topic, LATEST")
    produce(rec, a, 0, [b"a0", b"a1"], "two records in epoch 0: offsets 0-1")
    list_offsets(rec, a, -2, "EARLIEST")
    list_offsets(rec, a, -1, "LATEST read_committed")
    list_offsets(rec, a, -1, "LATEST read_uncommitted", isolation_level=0)
    list_offsets(rec, a, -1, "LATEST with the current leader epoch", current_leader_epoch=0)
    list_offsets(
        rec, a, -1, "LATEST with a newer current leader epoch than the broker's", current_leader_epoch=1
    )
    epoch_end(rec, a, 0, "the current epoch ends at the log end")
    epoch_end(rec, a, 0, "the same, current_leader_epoch given", current_leader_epoch=0)
    epoch_end(rec, a, 3, "an epoch the log never had (higher than any)")
    epoch_end(rec, a, -1, "epoch -1 (undefined)")
    epoch_end(rec, a, 0, "a newer current_leader_epoch than the broker's", current_leader_epoch=1)
    rec.action(
        "restart_broker",
        "stop the node (SIGTERM: controlled shutdown) and start it again: the "
        "partitions' leader epoch changes",
    )
    broker.stop()
    broker.launch()
    broker.wait_ready()
    rec.reconnect()
    until(lambda: all(p.leader_id >= 0 for t in rec.client.send(metadata_request([a, b])).topics
                      for p in t.partitions), "the partitions have their leader back after the restart")
    epoch = leader_epoch(rec, a, "the leader epoch after the restart")
    list_offsets(rec, a, -2, "EARLIEST after the restart: the first cached epoch")
    list_offsets(rec, a, -1, "LATEST after the restart: the current epoch")
    list_offsets(rec, b, -2, "EARLIEST of a topic that never had a record, after the restart")
    list_offsets(rec, a, -1, "LATEST with the old current_leader_epoch 0", current_leader_epoch=0)
    produce(rec, a, 0, [b"a2"], "one record in the new epoch: offset 2")
    epoch_end(rec, a, 0, "epoch 0 ends where the next cached epoch starts")
    if epoch > 1:
        epoch_end(rec, a, epoch - 1, "an epoch between (never led with records)")
    epoch_end(rec, a, epoch, "the current epoch ends at the log end")
    epoch_end(rec, a, epoch, "current_leader_epoch 0: the asker is behind", current_leader_epoch=0)
    delete = DeleteRecordsRequest[2](
        topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(
                name=a,
                partitions=[
                    DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(
                        partition_index=0, offset=1
                    )
                ],
            )
        ],
        timeout_ms=30000,
    )
    response = rec.client.send(delete)
    rec.action(
        "delete_records",
        "DeleteRecords v2 below offset 1 (the mock has no DeleteRecords handler: "
        "the replay deletes through MockCluster.delete_records)",
        topic=a,
        partition=0,
        offset=1,
        request=jsonable(delete.to_dict(json=False)),
        response=response.to_dict(),
    )
    list_offsets(rec, a, -2, "EARLIEST after the log start moved to 1 (inside epoch 0)")
    epoch_end(rec, a, 0, "epoch 0 after the log start moved")
    rec.write(
        "ListOffsets v9 (EARLIEST, LATEST; read_committed and read_uncommitted) and OffsetForLeaderEpoch v4 "
        "on a fresh topic, after records, after a restart of the node (a new leader epoch), and after "
        "DeleteRecords: which leader epoch each answer carries, and the errors for a current_leader_epoch "
        "the broker does not have.",
        {"topic_a": a.replace(run, "$RUN"), "topic_b": b.replace(run, "$RUN")},
    )


def fetch_request(
    version: int,
    topic: str,
    topic_id: Any,
    parts: list[tuple[int, int]],
    *,
    session_id: int,
    epoch: int,
    forgotten: list[int] | None = None,
) -> Any:
    t = FetchRequest.FetchTopic
    partitions = [
        t.FetchPartition(
            partition=p,
            current_leader_epoch=-1,
            fetch_offset=o,
            last_fetched_epoch=-1,
            log_start_offset=-1,
            partition_max_bytes=1 << 20,
        )
        for p, o in parts
    ]
    topics = [t(topic=topic, topic_id=topic_id, partitions=partitions)] if parts else []
    gone = (
        [FetchRequest.ForgottenTopic(topic=topic, topic_id=topic_id, partitions=forgotten)]
        if forgotten
        else []
    )
    return FetchRequest[version](
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=1,
        session_id=session_id,
        session_epoch=epoch,
        topics=topics,
        forgotten_topics_data=gone,
        rack_id="",
    )


def fetch_sessions(broker: Broker, run: str) -> None:
    rec = Recorder(broker, run, "fetch_sessions")
    topic = f"conformance-fetch-sessions-{run}"
    create_topic(rec, topic, 2)
    topic_id = rec.client.send(metadata_request([topic])).topics[0].topic_id
    produce(rec, topic, 0, [b"p0-0", b"p0-1"], "two records in partition 0")
    opened = rec.send(
        fetch_request(12, topic, None, [(0, 0), (1, 0)], session_id=0, epoch=0),
        "a full fetch (epoch 0) opens a session: both partitions answered",
    )
    sid = int(opened.session_id)
    rec.send(
        fetch_request(12, topic, None, [(0, 2)], session_id=sid, epoch=1),
        "incremental (epoch 1) naming partition 0 at its end: nothing to say",
    )
    produce(rec, topic, 1, [b"p1-0"], "a record in partition 1")
    rec.send(
        fetch_request(12, topic, None, [], session_id=sid, epoch=2),
        "incremental naming nothing: partition 1 has a record and a new high watermark",
    )
    rec.send(fetch_request(12, topic, None, [(1, 1)], session_id=sid, epoch=3), "partition 1 moved on")
    rec.send(fetch_request(12, topic, None, [], session_id=sid, epoch=3), "the same epoch again")
    rec.send(
        fetch_request(12, topic, None, [], session_id=sid, epoch=4), "the next epoch after the refused one"
    )
    rec.send(fetch_request(12, topic, None, [], session_id=sid, epoch=5, forgotten=[1]), "forget partition 1")
    produce(rec, topic, 1, [b"p1-1"], "another record in the forgotten partition 1")
    rec.send(
        fetch_request(12, topic, None, [], session_id=sid, epoch=6), "partition 1 is no longer in the session"
    )
    rec.send(
        fetch_request(13, topic, topic_id, [], session_id=sid, epoch=7),
        "v13 (topics by id) in a session opened naming topics by name",
    )
    rec.send(fetch_request(12, topic, None, [], session_id=sid, epoch=7), "the session after that")
    rec.send(fetch_request(12, topic, None, [], session_id=sid + 1000, epoch=1), "an unknown session id")
    rec.send(
        fetch_request(12, topic, None, [(0, 0)], session_id=sid, epoch=-1),
        "epoch -1 (final): close the session, a sessionless fetch",
    )
    rec.send(fetch_request(12, topic, None, [], session_id=sid, epoch=8), "the closed session")
    rec.write(
        "Incremental fetch sessions (KIP-227) with Fetch v12/v13, read_committed: which partitions an "
        "incremental answer carries, the top-level errors of a wrong epoch, an unknown or closed session, "
        "and a session used with topic ids after it was opened with names.",
        {"topic": topic.replace(run, "$RUN")},
    )


def classic_group(broker: Broker, run: str) -> None:
    rec = Recorder(broker, run, "classic_group")
    topic = f"conformance-classic-group-{run}"
    group, static_group = f"conformance-classic-group-{run}", f"conformance-classic-group-static-{run}"
    create_topic(rec, topic, 2)
    # the group coordinator runs on the fresh node once __consumer_offsets is created and its shards
    # loaded: before, FindCoordinator answers COORDINATOR_NOT_AVAILABLE and the group requests
    # NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS
    def coordinating() -> bool:
        found = rec.client.send(FindCoordinatorRequest[6](key_type=0, coordinator_keys=[group, static_group]))
        probes = [
            rec.client.send(
                HeartbeatRequest[4](group_id=g, generation_id=1, member_id="probe", group_instance_id=None)
            )
            for g in (group, static_group)
        ]
        return all(c.error_code == 0 for c in found.coordinators) and all(
            p.error_code not in (14, 15, 16) for p in probes
        )

    until(coordinating, "the group coordinator runs", attempts=600)
    rec.send(FindCoordinatorRequest[6](key_type=0, coordinator_keys=[group]), "the group's coordinator")
    subscription = encode_subscription([topic])
    protocols = [JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription)]

    def join(group_id: str, member_id: str, note: str, instance: str | None = None) -> Any:
        return rec.send(
            JoinGroupRequest[9](
                group_id=group_id,
                session_timeout_ms=45000,
                rebalance_timeout_ms=60000,
                member_id=member_id,
                group_instance_id=instance,
                protocol_type="consumer",
                protocols=protocols,
                reason=None,
            ),
            note,
        )

    def sync(group_id: str, generation: int, member_id: str, note: str, instance: str | None = None) -> Any:
        assignment = encode_assignment([(topic, 0), (topic, 1)])
        return rec.send(
            SyncGroupRequest[5](
                group_id=group_id,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
                protocol_type="consumer",
                protocol_name="range",
                assignments=[
                    SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id, assignment=assignment)
                ],
            ),
            note,
        )

    def beat(group_id: str, generation: int, member_id: str, note: str) -> Any:
        return rec.send(
            HeartbeatRequest[4](
                group_id=group_id, generation_id=generation, member_id=member_id, group_instance_id=None
            ),
            note,
        )

    first = join(group, "", "a new member without a member id (v4+): MEMBER_ID_REQUIRED")
    member = first.member_id
    joined = join(
        group,
        member,
        "again with the member id it was given: the first generation, after group.initial.rebalance.delay.ms",
    )
    generation = int(joined.generation_id)
    sync(group, generation, member, "the leader's SyncGroup with its assignment")
    beat(group, generation, member, "a heartbeat in the generation")
    beat(group, generation - 1, member, "a heartbeat of an older generation")
    beat(group, generation, "unknown-member", "a heartbeat of an unknown member")
    beat(f"conformance-no-such-group-{run}", 1, member, "a heartbeat to a group that does not exist")
    rejoined = join(group, member, "the member rejoins the stable group: a new generation")
    beat(group, int(rejoined.generation_id), member, "a heartbeat between JoinGroup and SyncGroup")
    sync(group, int(rejoined.generation_id), member, "SyncGroup of the new generation")
    rec.send(
        LeaveGroupRequest[5](
            group_id=group,
            members=[LeaveGroupRequest.MemberIdentity(member_id=member, group_instance_id=None, reason=None)],
        ),
        "the member leaves",
    )
    beat(group, int(rejoined.generation_id), member, "a heartbeat after leaving")
    static = join(
        static_group,
        "",
        "a static member (group_instance_id): no MEMBER_ID_REQUIRED",
        instance=f"static-{run}",
    )
    sync(static_group, int(static.generation_id), static.member_id, "its SyncGroup", instance=f"static-{run}")
    join(
        static_group,
        "",
        "the same group_instance_id joins again with no member id (a restart): it takes "
        "the place, a new member id",
        instance=f"static-{run}",
    )
    beat(static_group, int(static.generation_id), static.member_id, "the old member id's heartbeat")
    rec.write(
        "The classic group protocol on the 4.1 group coordinator: JoinGroup v9 (MEMBER_ID_REQUIRED, the "
        "first generation, a rejoin), SyncGroup v5, Heartbeat v4 (in the generation, an older generation, an"
        " unknown member, an unknown group, between JoinGroup and SyncGroup, after LeaveGroup v5), and a "
        "static member replaced by a restart of its instance.",
        {
            "topic": topic.replace(run, "$RUN"),
            "group": group.replace(run, "$RUN"),
            "static_group": static_group.replace(run, "$RUN"),
        },
    )


def main() -> None:
    home = Path(os.environ.get("KAFKA_HOME", "/work/kafka/kafka_2.13-4.1.0"))
    os.environ.setdefault("KAFKA_JMX_OPTS", "-Djava.awt.headless=true")
    run = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="txnproducer-conformance-") as tmp:
        broker = Broker(home, Path(tmp))
        broker.start()
        try:
            fetch_sessions(broker, run)
            classic_group(broker, run)
            read_offsets(broker, run)  # last: it restarts the node
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
