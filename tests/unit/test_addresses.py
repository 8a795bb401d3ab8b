"""Bootstrap servers as addresses (``network/addresses.py``): the forms the Java client accepts, and
``client_dns_lookup``.

What a user relies on: ``host:port``, ``[v6]:port``, a bare IPv6 literal and a ``PROTOCOL://`` prefix all
work, a missing port is 9092, a bad entry is an error naming it; with
``resolve_canonical_bootstrap_servers_only`` each name becomes its canonical names (a Kerberos alias),
and a name that does not resolve is kept rather than dropped.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from txnproducer import errors
from txnproducer._internal.network.addresses import ServerAddress, bootstrap_addresses, parse_server
from txnproducer._internal.network.client import NetworkClient
from txnproducer.config import ProducerConfig


@pytest.mark.parametrize(("text", "expected"), [
    ("broker-1:9093", ("broker-1", 9093)),
    ("broker-1", ("broker-1", 9092)),
    ("[::1]:9094", ("::1", 9094)),
    ("[fe80::1]", ("fe80::1", 9092)),
    ("::1", ("::1", 9092)),
    ("SASL_SSL://broker-2:9095", ("broker-2", 9095)),
    (" 127.0.0.1:9092 ", ("127.0.0.1", 9092)),
])
def test_the_forms_of_a_server(text: str, expected: tuple[str, int]) -> None:
    assert parse_server(text) == ServerAddress(*expected)


@pytest.mark.parametrize("text", ["", ":9092", "host:port", "host:0", "host:70000", "[::1]x"])
def test_a_bad_server_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="bootstrap server"):
        parse_server(text)


def test_a_bad_server_is_a_config_error_when_the_client_is_made() -> None:
    with pytest.raises(errors.ConfigError, match=r"bootstrap_servers.*'b:x'"):
        NetworkClient(ProducerConfig(bootstrap_servers="b:x", transactional_id="t"))


def test_canonical_lookup_makes_each_canonical_name_a_bootstrap_server(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def getaddrinfo(host: str, port: int, *args: Any) -> list[Any]:
        if host == "kafka.example":  # a round-robin alias of two brokers
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "b1.example", ("10.0.0.1", port)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "b2.example", ("10.0.0.2", port)),
                    (socket.AF_INET6, socket.SOCK_STREAM, 6, "b1.example", ("fd00::1", port, 0, 0))]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    servers = ["kafka.example:9093", "gone.example:9092"]
    assert bootstrap_addresses(servers, "resolve_canonical_bootstrap_servers_only") == [
        ServerAddress("b1.example", 9093), ServerAddress("b2.example", 9093),
        ServerAddress("gone.example", 9092)]
    # the default resolves nothing up front: each connection tries every address of its name
    assert bootstrap_addresses(servers) == [ServerAddress("kafka.example", 9093),
                                            ServerAddress("gone.example", 9092)]
    net = NetworkClient(ProducerConfig(bootstrap_servers=servers, transactional_id="t",
                                       client_dns_lookup="resolve_canonical_bootstrap_servers_only"))
    try:
        hosts = [b.host for b in net.cluster.bootstrap_brokers()]
        assert hosts == ["b1.example", "b2.example", "gone.example"]
    finally:
        net.close()
