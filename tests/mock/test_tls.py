"""TLS listeners of the MockCluster (``testing/security/tls.py`` and the server's handshake): a client that
trusts the cluster's CA gets in; one trusting another CA, dialling a host the certificate does not name, or
without a certificate where one is required, fails the handshake - with plain ``ssl`` sockets and with
kafka-python."""

from __future__ import annotations

import os
import socket
import ssl
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.errors import KafkaError

from tests.mock._secure_wire import api_versions, client_context, connect, metadata
from txnproducer.testing import MockCluster
from txnproducer.testing.wire_client import WireClient, WireClosedError

trustme = pytest.importorskip("trustme")


@pytest.fixture
def tls_cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1, tls=True) as cluster:
        yield cluster


def test_a_client_trusting_the_cluster_ca_speaks_kafka_over_tls(tls_cluster: MockCluster) -> None:
    assert tls_cluster.security_protocol == "SSL"
    with connect(tls_cluster) as client:
        assert api_versions(client).error_code == 0
        assert metadata(client).brokers[0].node_id == 1
    entry = tls_cluster.wait_for_request(lambda e: e.api == "Metadata")
    assert entry.principal == "User:ANONYMOUS"  # no client certificate, no SASL


@pytest.mark.parametrize("hostname", ["127.0.0.1", "localhost"])
def test_the_broker_certificate_names_the_loopback_host_and_address(
        tls_cluster: MockCluster, hostname: str) -> None:
    with connect_with(tls_cluster, client_context(tls_cluster.ca_file), hostname) as sock:
        assert sock.version() in ("TLSv1.2", "TLSv1.3")


def test_a_client_trusting_another_ca_fails_the_handshake(tls_cluster: MockCluster) -> None:
    other = trustme.CA()
    with other.cert_pem.tempfile() as cafile, pytest.raises(ssl.SSLCertVerificationError) as failed:
        connect(tls_cluster, cafile=cafile)
    assert failed.value.verify_message == "unable to get local issuer certificate"


def test_a_certificate_for_another_host_fails_hostname_verification() -> None:
    with MockCluster(num_brokers=1, tls=True, tls_hostnames=("example.invalid",)) as cluster, \
            pytest.raises(ssl.SSLCertVerificationError) as failed:
        connect(cluster)
    # "IP address mismatch, certificate is not valid for '127.0.0.1'"
    assert "127.0.0.1" in failed.value.verify_message


def test_tls_1_2_and_1_3_are_spoken_and_nothing_older(tls_cluster: MockCluster) -> None:
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        ctx = client_context(tls_cluster.ca_file)
        ctx.minimum_version = ctx.maximum_version = version
        with connect_with(tls_cluster, ctx) as sock:
            assert sock.version() == version.name.replace("v1_", "v1.")
    # this OpenSSL would refuse TLS 1.1 on the client side already: check the broker's own floor
    assert tls_cluster.listener.tls is not None
    assert tls_cluster.listener.tls.server_context().minimum_version == ssl.TLSVersion.TLSv1_2


def connect_with(cluster: MockCluster, ctx: ssl.SSLContext, hostname: str | None = None) -> ssl.SSLSocket:
    """A TLS socket to broker 1 (handshake done), checking the certificate against ``hostname``."""
    host, port = cluster.broker_address(1)
    sock = socket.create_connection((host, port), timeout=5)
    return ctx.wrap_socket(sock, server_hostname=hostname or host)


def test_a_plaintext_client_is_disconnected(tls_cluster: MockCluster) -> None:
    host, port = tls_cluster.broker_address(1)
    with WireClient(host, port) as client, pytest.raises(WireClosedError):
        api_versions(client)


@pytest.fixture
def mtls_cluster() -> Iterator[MockCluster]:
    with MockCluster(num_brokers=1, tls=True, tls_client_auth="required") as cluster:
        yield cluster


def test_mutual_tls_principal_is_the_certificate_cn(mtls_cluster: MockCluster) -> None:
    with connect(mtls_cluster, certificate=mtls_cluster.client_certificate("alice")) as client:
        assert metadata(client).brokers
    entry = mtls_cluster.wait_for_request(lambda e: e.api == "Metadata")
    assert entry.principal == "User:alice"


def test_mutual_tls_without_a_client_certificate_is_refused(mtls_cluster: MockCluster) -> None:
    # TLS 1.3 finishes the client's side of the handshake before the broker checks the certificate:
    # the broker's alert (or the closed connection) arrives with the first read
    with pytest.raises((ssl.SSLError, WireClosedError)), connect(mtls_cluster) as client:
        api_versions(client)


def test_a_certificate_from_another_ca_is_refused(mtls_cluster: MockCluster) -> None:
    other = trustme.CA().issue_cert("mallory.clients.invalid", common_name="mallory")
    with other.cert_chain_pems[0].tempfile() as certfile, other.private_key_pem.tempfile() as keyfile, \
            pytest.raises((ssl.SSLError, WireClosedError)), \
            connect(mtls_cluster, certificate=(certfile, keyfile)) as client:
        api_versions(client)


def test_requested_client_auth_takes_a_certificate_when_offered() -> None:
    with MockCluster(num_brokers=1, tls=True, tls_client_auth="requested") as cluster:
        with connect(cluster, certificate=cluster.client_certificate("bob")) as client:
            metadata(client)
        with connect(cluster) as client:
            metadata(client)
        principals = [e.principal for e in cluster.request_log if e.api == "Metadata"]
    assert principals == ["User:bob", "User:ANONYMOUS"]


def test_kafka_python_connects_with_the_ca(tls_cluster: MockCluster) -> None:
    tls_cluster.create_topic("tls-topic", 1)
    consumer = KafkaConsumer(bootstrap_servers=tls_cluster.bootstrap_servers, security_protocol="SSL",
                             ssl_cafile=tls_cluster.ca_file, request_timeout_ms=5000)
    try:
        assert consumer.partitions_for_topic("tls-topic") == {0}
    finally:
        consumer.close()


@pytest.mark.parametrize("failure", ["another CA", "another host", "no client certificate"])
def test_kafka_python_fails_the_classic_tls_failures(failure: str) -> None:
    options: dict[str, Any] = {
        "another host": {"tls_hostnames": ("example.invalid",)},
        "no client certificate": {"tls_client_auth": "required"},
    }.get(failure, {})
    with MockCluster(num_brokers=1, tls=True, **options) as cluster, \
            trustme.CA().cert_pem.tempfile() as other:
        cafile = other if failure == "another CA" else cluster.ca_file
        # kafka-python retries the bootstrap until api_version_auto_timeout_ms, then gives up
        with pytest.raises(KafkaError):
            KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, security_protocol="SSL",
                          ssl_cafile=cafile, api_version_auto_timeout_ms=1000, request_timeout_ms=1000)


def test_certificate_files_are_removed_on_close() -> None:
    cluster = MockCluster(num_brokers=1, tls=True)
    files = [cluster.ca_file, *cluster.client_certificate("carol")]
    assert all(os.path.exists(f) for f in files)
    assert oct(os.stat(files[-1]).st_mode & 0o777) == "0o600"  # the private key
    cluster.start()
    cluster.close()
    assert not any(os.path.exists(f) for f in files)
    assert not os.path.exists(os.path.dirname(files[0]))


def test_tls_options_need_tls_and_certificates_need_a_tls_cluster() -> None:
    with pytest.raises(ValueError, match="need tls=True"):
        MockCluster(tls_client_auth="required")
    with pytest.raises(ValueError, match="needs a TLS cluster"):
        MockCluster(num_brokers=1).client_certificate("alice")
    with pytest.raises(ValueError, match="tls_client_auth must be one of"):
        MockCluster(tls=True, tls_client_auth="sometimes")


def test_a_missing_trustme_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "trustme", None)
    with pytest.raises(ImportError, match=r"txnproducer\[testing\]"):
        MockCluster(tls=True)


def test_a_connection_dropped_while_its_tls_socket_is_made_closes_only_its_own_descriptor(
        tls_cluster: MockCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """``drop_connections`` from another thread can land while the broker moves an accepted socket's
    descriptor into its TLS socket (``SSLContext.wrap_socket`` reads ``fileno()``, then detaches the plain
    socket). The mock used to close the descriptor there, and then close it again through the TLS socket:
    by then the number could be a new socket's - in a parallel suite another test's listener or client,
    which failed at once."""
    made: dict[str, socket.socket] = {}
    wrapped = threading.Event()
    detach = socket.socket.detach

    def dropped_mid_wrap(sock: socket.socket) -> int:
        if "victim" not in made and not isinstance(sock, ssl.SSLSocket):
            tls_cluster.drop_connections()  # what a cluster closing at the end of a test does
            made["victim"] = socket.socket()  # the lowest free descriptor: the one just closed, if it was
            wrapped.set()
        return detach(sock)

    monkeypatch.setattr(socket.socket, "detach", dropped_mid_wrap)
    with socket.create_connection(tls_cluster.broker_address(1), timeout=5) as client:
        assert client.recv(1) == b""  # the broker dropped it, before any TLS byte
        assert wrapped.wait(5)
    monkeypatch.undo()
    tls_cluster.close()  # the broker's connection threads are done with their sockets
    with made["victim"] as victim:
        victim.bind(("127.0.0.1", 0))  # still its own descriptor: EBADF, or another socket's, if closed again
        assert victim.getsockname()[0] == "127.0.0.1"
