"""The network adapter puts a request on the wire when it is sent, not in a later poll.

Why it matters: the Sender sends a request and then blocks in the network poll until the answer
arrives. If the bytes only left in that poll (kafka-python's transport queues them behind a
write-readiness wait), every Produce and EndTxn would reach the broker one or two poll rounds
late, which on a one-record transaction was a measurable share of the commit latency. Our
connections must keep this, whatever API the request is.
"""

from __future__ import annotations

import time

from kafka.protocol.metadata import MetadataRequest

from txnproducer._internal.network.client import NetworkClient
from txnproducer.config import ProducerConfig
from txnproducer.testing import MockCluster


def _ready_client(cluster: MockCluster) -> tuple[NetworkClient, int]:
    """A bootstrapped adapter with a ready connection to broker 1 (this test plays the Sender)."""
    net = NetworkClient(ProducerConfig(bootstrap_servers=cluster.bootstrap_servers,
                                       transactional_id="net-adapter"))
    deadline = time.monotonic() + 10
    node = 1
    while not (net.features is not None and net.is_ready(node)):
        assert time.monotonic() < deadline, "the adapter did not connect to broker 1 within 10 s"
        net.maintain()
        if net.bootstrapped:
            net.ensure_connecting(node)
        net.poll(0.05)
    return net, node


def test_a_sent_request_reaches_the_broker_before_the_next_poll(
        mock_cluster: MockCluster) -> None:
    net, node = _ready_client(mock_cluster)
    try:
        since = mock_cluster.requests.next_seq()
        future = net.send(node, MetadataRequest(version=1, topics=[]))
        # no poll between send and the broker seeing the request
        entry = mock_cluster.wait_for_request(lambda e: e.api == "Metadata" and e.broker_id == node,
                                              timeout=5.0, since=since)
        assert entry.version == 1
        deadline = time.monotonic() + 5
        while not future.is_done:  # the answer is still read by the poll, as before
            assert time.monotonic() < deadline, "no Metadata answer within 5 s"
            net.poll(0.05)
        assert future.succeeded()
    finally:
        net.close()


def test_requests_sent_back_to_back_arrive_in_order(mock_cluster: MockCluster) -> None:
    net, node = _ready_client(mock_cluster)
    try:
        since = mock_cluster.requests.next_seq()
        futures = [net.send(node, MetadataRequest(version=v, topics=[])) for v in (0, 1, 2, 3, 4)]
        last = mock_cluster.wait_for_request(lambda e: e.api == "Metadata" and e.version == 4,
                                             timeout=5.0, since=since)
        seen = [e.version for e in mock_cluster.request_log[since:last.seq + 1]
                if e.api == "Metadata" and e.broker_id == node]
        assert seen == [0, 1, 2, 3, 4]
        deadline = time.monotonic() + 5
        while not all(f.is_done for f in futures):
            assert time.monotonic() < deadline, "not every Metadata answer arrived within 5 s"
            net.poll(0.05)
        assert all(f.succeeded() for f in futures)
    finally:
        net.close()
