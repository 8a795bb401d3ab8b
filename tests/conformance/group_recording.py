"""The recorder and the request builders of ``record_consumer_group.py`` (the KIP-848 recording).

Kept apart from the scenarios so that each file reads as one thing: here, how a request of the recording is
built and recorded (the read path's recorder with several connections, client-chosen member ids, polls);
there, what the recording asks a real Kafka 4.1.0 and in which order.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from typing import Any

from kafka.protocol.admin.groups import DescribeGroupsRequest
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.producer.transaction import TxnOffsetCommitRequest

from tests.conformance.record_epoch_exhaustion import TxnRecorder
from tests.conformance.record_read_path import Broker, create_topic, until
from txnproducer._internal.protocol.consumer_group_describe import ConsumerGroupDescribeRequest
from txnproducer._internal.protocol.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from txnproducer._internal.protocol.consumer_protocol import encode_assignment, encode_subscription
from txnproducer.testing.wire_client import WireClient

SESSION_TIMEOUT_MS = 10000
GROUP_MAX_SIZE = 3
#: the APIs whose advertised versions the recording keeps (the replay checks the mock's)
VERSIONED_APIS = {
    8: "OffsetCommit",
    9: "OffsetFetch",
    11: "JoinGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    28: "TxnOffsetCommit",
    68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe",
}


class ConsumerGroupBroker(Broker):
    def adjust_properties(self, lines: dict[str, str]) -> dict[str, str]:
        lines = super().adjust_properties(lines)
        lines["group.consumer.max.size"] = str(GROUP_MAX_SIZE)
        lines["group.consumer.min.session.timeout.ms"] = "6000"
        lines["group.consumer.session.timeout.ms"] = str(SESSION_TIMEOUT_MS)
        return lines


def member_id(name: str) -> str:
    """A fixed member id of the form the Java client makes (``Uuid.toString()``), from ``name``."""
    raw = uuid.uuid5(uuid.NAMESPACE_URL, f"txnproducer-conformance-member-{name}").bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class GroupRecorder(TxnRecorder):
    """The epoch exhaustion recorder (the read path's, with ``$PIDn``), plus: several connections (a
    JoinGroup blocks its own), broker-made member ids of ConsumerGroupHeartbeat v0 as ``$MEMBERn``, polls."""

    def __init__(self, broker: Broker, run: str, scenario: str) -> None:
        super().__init__(broker, run, scenario)
        self.clients: dict[str, WireClient] = {}

    def client_for(self, name: str) -> WireClient:
        if name not in self.clients:
            self.clients[name] = WireClient(
                "127.0.0.1", self.broker.port, client_id=f"conformance-{self.run}", timeout=60.0
            )
        return self.clients[name]

    def send(
        self, request: Any, note: str, *, setup: bool = False, produce: bool = False, on: str | None = None
    ) -> Any:
        main = self.client
        if on is not None:
            self.client = self.client_for(on)
        started = time.monotonic()
        try:
            response = super().send(request, note, setup=setup, produce=produce)
        finally:
            self.client = main
        step = self.steps[-1]
        print(
            f"{step['step']:3} {step['api']} v{step['version']} {time.monotonic() - started:5.2f}s "
            f"{step.get('errors', '')} {note}"
        )
        if isinstance(request, ConsumerGroupHeartbeatRequest) and not request.member_id:
            made = response.member_id
            if made and made not in self.members:
                self.members.append(made)
        return response

    def poll(
        self,
        make: Callable[[], Any],
        done: Callable[[Any], bool],
        note: str,
        *,
        on: str | None = None,
        attempts: int = 300,
    ) -> Any:
        """Send ``make()`` until ``done(answer)``, 0.1 s apart; only the last exchange is recorded, with how
        long the asking took (``waited_ms``: the replay asks the same while the mock's clock moves as far)."""
        started = time.monotonic()
        for tries in range(attempts):
            answer = self.send(make(), note, on=on)
            if done(answer):
                self.steps[-1]["polled"] = True
                self.steps[-1]["waited_ms"] = int((time.monotonic() - started) * 1000) // 100 * 100
                self.steps[-1]["note"] += f" (polled: {tries} unrecorded asks before)"
                return answer
            self.steps.pop()
            time.sleep(0.1)
        raise RuntimeError(f"the broker never answered as expected: {note}")

    def sleep(self, seconds: float, note: str) -> None:
        time.sleep(seconds)
        self.action("sleep", note, seconds=seconds)

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
        self.client.close()


# -- request builders -----------------------------------------------------------------------------------


def owned(topic_id: Any, partitions: list[int]) -> list[Any]:
    tp = ConsumerGroupHeartbeatRequest.TopicPartitions
    return [tp(topic_id=topic_id, partitions=partitions)] if partitions else []


def heartbeat(
    group: str,
    member: str,
    epoch: int,
    *,
    version: int = 1,
    topics: list[str] | None = None,
    regex: str | None = None,
    assignor: str | None = None,
    instance: str | None = None,
    rack: str | None = None,
    rebalance_timeout_ms: int = -1,
    owned_partitions: list[Any] | None = None,
) -> Any:
    fields: dict[str, Any] = dict(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        instance_id=instance,
        rack_id=rack,
        rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=topics,
        server_assignor=assignor,
        topic_partitions=owned_partitions,
    )
    if version >= 1:
        fields["subscribed_topic_regex"] = regex
    return ConsumerGroupHeartbeatRequest[version](**fields)


def join(
    group: str,
    member: str,
    topics: list[str] | None,
    *,
    regex: str | None = None,
    assignor: str | None = None,
    instance: str | None = None,
    rebalance_timeout_ms: int = 30000,
    version: int = 1,
) -> Any:
    """A first heartbeat: epoch 0, every field set, nothing owned."""
    return heartbeat(
        group,
        member,
        0,
        version=version,
        topics=topics,
        regex=regex,
        assignor=assignor,
        instance=instance,
        rebalance_timeout_ms=rebalance_timeout_ms,
        owned_partitions=[],
    )


def describe(groups: list[str]) -> Any:
    return ConsumerGroupDescribeRequest[1](group_ids=groups, include_authorized_operations=False)


def offset_commit(
    group: str,
    member: str,
    epoch: int,
    topic: str,
    offsets: dict[int, int],
    *,
    version: int = 9,
    instance: str | None = None,
) -> Any:
    t = OffsetCommitRequest.OffsetCommitRequestTopic
    return OffsetCommitRequest[version](
        group_id=group,
        generation_id_or_member_epoch=epoch,
        member_id=member,
        group_instance_id=instance,
        retention_time_ms=-1,
        topics=[
            t(
                name=topic,
                partitions=[
                    t.OffsetCommitRequestPartition(
                        partition_index=p,
                        committed_offset=o,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                    for p, o in offsets.items()
                ],
            )
        ],
    )


def offset_fetch(
    group: str,
    member: str | None,
    epoch: int,
    topic: str,
    partitions: list[int],
    *,
    require_stable: bool = False,
) -> Any:
    g = OffsetFetchRequest.OffsetFetchRequestGroup
    return OffsetFetchRequest[9](
        groups=[
            g(
                group_id=group,
                member_id=member,
                member_epoch=epoch,
                topics=[g.OffsetFetchRequestTopics(name=topic, partition_indexes=partitions)],
            )
        ],
        require_stable=require_stable,
    )


def txn_offset_commit(
    tid: str,
    pid: int,
    epoch: int,
    group: str,
    member: str,
    generation: int,
    topic: str,
    offsets: dict[int, int],
    instance: str | None = None,
) -> Any:
    t = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    return TxnOffsetCommitRequest[5](
        transactional_id=tid,
        group_id=group,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=generation,
        member_id=member,
        group_instance_id=instance,
        topics=[
            t(
                name=topic,
                partitions=[
                    t.TxnOffsetCommitRequestPartition(
                        partition_index=p,
                        committed_offset=o,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                    for p, o in offsets.items()
                ],
            )
        ],
    )


def classic_join(
    group: str, member: str, topic: str, note: str, rec: GroupRecorder, on: str, instance: str | None = None
) -> Any:
    protocols = [
        JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=encode_subscription([topic]))
    ]
    return rec.send(
        JoinGroupRequest[9](
            group_id=group,
            session_timeout_ms=45000,
            rebalance_timeout_ms=30000,
            member_id=member,
            group_instance_id=instance,
            protocol_type="consumer",
            protocols=protocols,
            reason=None,
        ),
        note,
        on=on,
    )


def classic_sync(
    group: str,
    generation: int,
    member: str,
    assignment: list[tuple[str, int]] | None,
    note: str,
    rec: GroupRecorder,
    on: str,
) -> Any:
    a = SyncGroupRequest.SyncGroupRequestAssignment
    assignments = (
        [] if assignment is None else [a(member_id=member, assignment=encode_assignment(assignment))]
    )
    return rec.send(
        SyncGroupRequest[5](
            group_id=group,
            generation_id=generation,
            member_id=member,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=assignments,
        ),
        note,
        on=on,
    )


def classic_beat(group: str, generation: int, member: str, note: str, rec: GroupRecorder, on: str) -> Any:
    return rec.send(
        HeartbeatRequest[4](
            group_id=group, generation_id=generation, member_id=member, group_instance_id=None
        ),
        note,
        on=on,
    )


def assigned(answer: Any) -> list[int]:
    """The partitions of a heartbeat answer's assignment (all topics), or [] when it carries none."""
    if answer.assignment is None:
        return []
    return sorted(p for t in answer.assignment.topic_partitions for p in t.partitions)


# -- scenarios --------------------------------------------------------------------------------------------


class Scenario:
    """Names, topic ids and the recorder shared by the scenarios of one recording."""

    def __init__(self, broker: Broker, run: str) -> None:
        self.run = run
        self.rec = GroupRecorder(broker, run, "consumer_group")
        self.names: dict[str, str] = {}
        self.topic_ids: dict[str, Any] = {}

    def name(self, key: str, value: str) -> str:
        self.names[key] = value.replace(self.run, "$RUN")
        return value

    def topic(self, key: str, partitions: int) -> str:
        name = self.name(key, f"conformance-cg-{key}-{self.run}")
        create_topic(self.rec, name, partitions)
        self.topic_ids[name] = self.rec.steps[-1]["response"]["topics"][0]["topic_id"]
        return name

    def tid(self, topic: str) -> uuid.UUID:
        return uuid.UUID(str(self.topic_ids[topic]))


def api_versions(s: Scenario) -> None:
    answer = s.rec.client.send(
        ApiVersionsRequest[3](client_software_name="conformance", client_software_version="1")
    )
    versions = {
        str(k.api_key): [k.min_version, k.max_version] for k in answer.api_keys if k.api_key in VERSIONED_APIS
    }
    s.rec.action(
        "api_versions",
        "ApiVersions v3 (not recorded in full): the versions the node advertises for the group APIs",
        versions=versions,
        apis={str(k): v for k, v in VERSIONED_APIS.items()},
    )


def wait_for_coordinator(s: Scenario, groups: list[str]) -> None:
    """The group coordinator runs once ``__consumer_offsets`` is loaded (polls not recorded)."""

    def coordinating() -> bool:
        found = s.rec.client.send(FindCoordinatorRequest[6](key_type=0, coordinator_keys=groups))
        probes = [
            s.rec.client.send(
                HeartbeatRequest[4](group_id=g, generation_id=1, member_id="probe", group_instance_id=None)
            )
            for g in groups
        ]
        return all(c.error_code == 0 for c in found.coordinators) and all(
            p.error_code not in (14, 15, 16) for p in probes
        )

    until(coordinating, "the group coordinator runs", attempts=600)


def describe_groups(group: str, version: int) -> Any:
    return DescribeGroupsRequest[version](groups=[group], include_authorized_operations=False)
