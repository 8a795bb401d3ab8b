"""MockCluster brokers: ApiVersions, Metadata, FindCoordinator, CreateTopics and malformed input."""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable

import pytest
from kafka.protocol.admin.configs import DescribeConfigsRequest
from kafka.protocol.admin.topics import CreateTopicsRequest
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest

from txnproducer.testing import MockCluster
from txnproducer.testing.wire_client import WireClient

Wire = Callable[[int], WireClient]


def _versions(resp: object) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}  # type: ignore[attr-defined]


@pytest.mark.parametrize("mock_cluster", [1, 2], indirect=True)
def test_api_versions_advertise_tv2_versions_only_when_finalized(
    mock_cluster: MockCluster, wire: Wire
) -> None:
    resp = wire(1).send(ApiVersionsRequest[4](client_software_name="t", client_software_version="1"))
    assert resp.error_code == 0
    versions = _versions(resp)
    finalized = {f.name: f.max_version_level for f in resp.finalized_features}
    if mock_cluster.state.transaction_version == 2:
        assert versions[0] == (3, 13) and versions[26][1] == 5 and versions[28][1] == 5
        assert finalized["transaction.version"] == 2
    else:
        assert versions[0] == (3, 11) and versions[26][1] == 4 and versions[28][1] == 4
        assert versions[24][1] == 4
        assert finalized["transaction.version"] == 1
    assert versions[1] == (4, 18)
    supported = {f.name: (f.min_version, f.max_version) for f in resp.supported_features}
    assert supported["transaction.version"] == (0, 2)


def test_api_versions_v3_omits_features_with_minimum_zero(wire: Wire) -> None:
    resp = wire(1).send(ApiVersionsRequest[3](client_software_name="t", client_software_version="1"))
    assert [f.name for f in resp.supported_features] == ["metadata.version"]
    assert "transaction.version" in {f.name for f in resp.finalized_features}


def test_api_versions_unknown_version_answers_v0_unsupported_version(mock_cluster: MockCluster) -> None:
    host, port = mock_cluster.broker_address(2)
    with socket.create_connection((host, port), timeout=5) as sock:
        body = struct.pack(">hhih", 18, 99, 42, 1) + b"x" + b"\x00garbage-the-broker-cannot-parse"
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        payload = _recv_exact(sock, size)
    correlation_id, error_code = struct.unpack_from(">ih", payload, 0)
    assert (correlation_id, error_code) == (42, 35)
    from kafka.protocol.metadata import ApiVersionsResponse

    decoded = ApiVersionsResponse.decode(payload[4:], version=0)
    assert 18 in _versions(decoded)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        assert chunk, "connection closed"
        buf += chunk
    return buf


def test_metadata_spreads_leaders_and_reports_topic_ids(mock_cluster: MockCluster, wire: Wire) -> None:
    mock_cluster.create_topic("spread", partitions=6)
    resp = wire(3).send(MetadataRequest[12](topics=None, allow_auto_topic_creation=False))
    assert sorted(b.node_id for b in resp.brokers) == [1, 2, 3]
    assert resp.cluster_id == mock_cluster.state.cluster_id
    (topic,) = [t for t in resp.topics if t.name == "spread"]
    assert topic.topic_id == mock_cluster.state.topics["spread"].topic_id
    leaders = {p.partition_index: p.leader_id for p in topic.partitions}
    assert set(leaders.values()) == {1, 2, 3}
    assert all(leaders[p] == mock_cluster.leader_of("spread", p) for p in range(6))


def test_metadata_auto_creates_only_when_allowed(wire: Wire) -> None:
    client = wire(1)
    topic = MetadataRequest.MetadataRequestTopic
    denied = client.send(MetadataRequest[12](topics=[topic(name="nope")], allow_auto_topic_creation=False))
    assert denied.topics[0].error_code == 3
    created = client.send(MetadataRequest[12](topics=[topic(name="auto")], allow_auto_topic_creation=True))
    assert created.topics[0].error_code == 0 and len(created.topics[0].partitions) == 3


def test_find_coordinator_forms(mock_cluster: MockCluster, wire: Wire) -> None:
    client = wire(1)
    expected = mock_cluster.coordinator_for("txn-a")
    v3 = client.send(FindCoordinatorRequest[3](key="txn-a", key_type=1))
    assert (v3.error_code, v3.error_message, v3.node_id) == (0, "NONE", expected)
    assert v3.port == mock_cluster.broker_address(expected)[1]
    v0 = client.send(FindCoordinatorRequest[0](key="group-a"))
    assert v0.node_id == mock_cluster.coordinator_for("group-a", key_type="group")
    v6 = client.send(FindCoordinatorRequest[6](key_type=1, coordinator_keys=["txn-a", "txn-b"]))
    assert [c.key for c in v6.coordinators] == ["txn-a", "txn-b"]
    assert [(c.error_code, c.error_message) for c in v6.coordinators] == [(0, ""), (0, "")]
    assert v6.coordinators[0].node_id == expected
    bad = client.send(FindCoordinatorRequest[4](key_type=7, coordinator_keys=["x"]))
    assert bad.coordinators[0].error_code == 42


def test_create_topics_and_already_exists(mock_cluster: MockCluster, wire: Wire) -> None:
    topic = CreateTopicsRequest.CreatableTopic
    req = CreateTopicsRequest[7](
        topics=[topic(name="made", num_partitions=4, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=1000,
        validate_only=False,
    )
    first = wire(1).send(req)
    assert first.topics[0].error_code == 0 and first.topics[0].num_partitions == 4
    assert len(mock_cluster.state.topics["made"].partitions) == 4
    again = wire(2).send(req)
    assert again.topics[0].error_code == 36


def test_describe_configs_reports_transaction_settings(wire: Wire) -> None:
    res = DescribeConfigsRequest.DescribeConfigsResource
    resp = wire(1).send(
        DescribeConfigsRequest[4](
            resources=[
                res(resource_type=4, resource_name="1", configuration_keys=["transaction.max.timeout.ms"])
            ],
            include_synonyms=False,
            include_documentation=False,
        )
    )
    assert [(c.name, c.value) for c in resp.results[0].configs] == [("transaction.max.timeout.ms", "900000")]


def test_describe_configs_reports_the_configs_a_topic_was_created_with(wire: Wire) -> None:
    """What a client that asks for a compacted topic checks afterwards (the Spark sink's state topic)."""
    topic = CreateTopicsRequest.CreatableTopic
    config = topic.CreatableTopicConfig
    wire(1).send(CreateTopicsRequest[7](
        topics=[topic(name="compacted", num_partitions=2, replication_factor=1, assignments=[],
                      configs=[config(name="cleanup.policy", value="compact")]),
                topic(name="plain", num_partitions=1, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=1000, validate_only=False))
    res = DescribeConfigsRequest.DescribeConfigsResource
    resp = wire(1).send(DescribeConfigsRequest[4](
        resources=[res(resource_type=2, resource_name=name, configuration_keys=["cleanup.policy"])
                   for name in ("compacted", "plain")],
        include_synonyms=False, include_documentation=False))
    # a topic's own config has source 1 (TOPIC_CONFIG); an inherited default 5 (DEFAULT_CONFIG)
    assert [[(c.name, c.value, c.config_source) for c in r.configs] for r in resp.results] == [
        [("cleanup.policy", "compact", 1)], [("cleanup.policy", "delete", 5)]]


def test_garbage_closes_only_that_connection(mock_cluster: MockCluster, wire: Wire) -> None:
    bad = wire(1)
    bad.send_raw(struct.pack(">i", 6) + b"\x00\x03\x00\x0c\x00\x00")  # frame shorter than a header
    assert bad.is_closed_by_peer(timeout=5)
    unknown = wire(1)
    body = struct.pack(">hhih", 999, 0, 1, -1)
    unknown.send_raw(struct.pack(">i", len(body)) + body)
    assert unknown.is_closed_by_peer(timeout=5)
    truncated_body = wire(1)
    req = MetadataRequest[12](topics=None, allow_auto_topic_creation=False)
    req.with_header(correlation_id=1, client_id="x")
    data = bytes(req.encode(header=True, framed=False))[:-3]
    truncated_body.send_raw(struct.pack(">i", len(data)) + data)
    assert truncated_body.is_closed_by_peer(timeout=5)
    too_old = wire(1)
    produce_v2 = struct.pack(">hhih", 0, 2, 1, -1) + struct.pack(">hii", -1, 0, 0)
    too_old.send_raw(struct.pack(">i", len(produce_v2)) + produce_v2)
    assert too_old.is_closed_by_peer(timeout=5)
    negative = wire(1)
    negative.send_raw(struct.pack(">i", -5))
    assert negative.is_closed_by_peer(timeout=5)
    # the broker still serves new and existing connections
    ok = wire(1).send(MetadataRequest[12](topics=None, allow_auto_topic_creation=False))
    assert len(ok.brokers) == 3


def test_pipelined_requests_are_answered_in_order(wire: Wire) -> None:
    client = wire(1)
    ids = [client.send_nowait(MetadataRequest[v](topics=None)) for v in (1, 5, 9, 12)]
    for cid in ids:
        assert client.receive(cid) is not None


def test_every_advertised_data_path_version_round_trips(mock_cluster: MockCluster, wire: Wire) -> None:
    from kafka.protocol.consumer.fetch import FetchRequest
    from kafka.protocol.consumer.offsets import ListOffsetsRequest
    from kafka.protocol.producer import ProduceRequest

    from txnproducer.testing.handlers import advertised_versions
    from txnproducer.testing.wire_client import build_batch

    topic = mock_cluster.create_topic("versions", 1)
    client = wire(topic.partitions[0].leader_id)
    adv = {k: range(lo, hi + 1) for k, lo, hi in advertised_versions(2)}
    for v in adv[3]:
        meta = client.send(MetadataRequest[v](topics=[MetadataRequest.MetadataRequestTopic(name="versions")]))
        assert meta.topics[0].error_code == 0, v
    pt = ProduceRequest.TopicProduceData
    for v in adv[0]:
        part = pt.PartitionProduceData(index=0, records=build_batch([(None, b"x")]))
        data = pt(name="versions", topic_id=topic.topic_id, partition_data=[part])
        resp = client.send(ProduceRequest[v](acks=-1, timeout_ms=1000, topic_data=[data]))
        assert resp.responses[0].partition_responses[0].error_code == 0, v
    ft = FetchRequest.FetchTopic
    for v in adv[1]:
        fp = ft.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=100000)
        req = FetchRequest[v](
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1000000,
            isolation_level=1,
            topics=[ft(topic="versions", topic_id=topic.topic_id, partitions=[fp])],
        )
        fetched = client.send(req).responses[0].partitions[0]
        assert fetched.error_code == 0 and fetched.records, v
    lt = ListOffsetsRequest.ListOffsetsTopic
    for v in adv[2]:
        lp = lt.ListOffsetsPartition(partition_index=0, timestamp=-1)
        listed = client.send(
            ListOffsetsRequest[v](replica_id=-1, topics=[lt(name="versions", partitions=[lp])])
        )
        assert listed.topics[0].partitions[0].offset == len(adv[0]), v
    for v in adv[18]:
        assert (
            client.send(
                ApiVersionsRequest[v](client_software_name="a", client_software_version="1")
            ).error_code
            == 0
        )


def test_wait_for_request_sees_past_and_future_entries(mock_cluster: MockCluster, wire: Wire) -> None:
    client = wire(2)
    client.send(MetadataRequest[1](topics=None))
    past = mock_cluster.wait_for_request(lambda e: e.api == "Metadata", timeout=1)
    assert (past.broker_id, past.version, past.fields["topics"]) == (2, 1, None)
    since = mock_cluster.requests.next_seq()
    with pytest.raises(TimeoutError):
        mock_cluster.wait_for_request(lambda e: e.api == "Metadata", timeout=0.05, since=since)
    client.send(MetadataRequest[4](topics=None))
    later = mock_cluster.wait_for_request(lambda e: e.api == "Metadata", timeout=5, since=since)
    assert later.version == 4 and later.seq >= since
