"""Bootstrap servers as addresses: ``host:port`` parsing (IPv6 too) and ``client_dns_lookup``.

Why apart: both are pure functions of the settings, testable without a socket, and both are the Java
client's rules (``ClientUtils.parseAndValidateAddresses``):

* ``host:port``, ``[v6-literal]:port``, a bare ``v6-literal`` (its last colon is not a port), an optional
  ``PROTOCOL://`` prefix ignored; no port means 9092;
* ``client_dns_lookup="use_all_dns_ips"`` (the default): each server is one bootstrap address, and a
  connection tries every address its name resolves to, in order, until one answers
  (:mod:`.connection_setup`);
* ``"resolve_canonical_bootstrap_servers_only"``: each server name is resolved once, now, and every
  canonical name it has becomes a bootstrap address of its own (Kerberos deployments behind a round-robin
  DNS alias, where the principal must match each broker's own name). A name that does not resolve is kept
  as it is, as in the Java client, and fails when it is connected to.
"""

from __future__ import annotations

import socket
from typing import NamedTuple

__all__ = ["DNS_LOOKUPS", "ServerAddress", "bootstrap_addresses", "parse_server"]

DEFAULT_PORT = 9092
USE_ALL_DNS_IPS = "use_all_dns_ips"
CANONICAL_BOOTSTRAP = "resolve_canonical_bootstrap_servers_only"
DNS_LOOKUPS = (USE_ALL_DNS_IPS, CANONICAL_BOOTSTRAP)


class ServerAddress(NamedTuple):
    host: str
    port: int


def parse_server(text: str) -> ServerAddress:
    """``host:port`` in any of the forms of the module docstring; ValueError when it is none of them."""
    value = text.strip()
    if "://" in value:
        value = value.split("://", 1)[1]
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            raise ValueError(f"bad bootstrap server {text!r}")
    elif value.count(":") > 1:  # a bare IPv6 literal
        host, port = value, ""
    else:
        host, _, port = value.partition(":")
    if not host:
        raise ValueError(f"bad bootstrap server {text!r}: no host")
    try:
        number = int(port) if port else DEFAULT_PORT
    except ValueError:
        raise ValueError(f"bad bootstrap server {text!r}: port {port!r} is not a number") from None
    if not 0 < number < 65536:
        raise ValueError(f"bad bootstrap server {text!r}: port {number} out of range")
    return ServerAddress(host, number)


def bootstrap_addresses(servers: list[str], dns_lookup: str = USE_ALL_DNS_IPS) -> list[ServerAddress]:
    """The addresses to bootstrap from (see the module docstring)."""
    parsed = [parse_server(s) for s in servers]
    if dns_lookup != CANONICAL_BOOTSTRAP:
        return parsed
    expanded: list[ServerAddress] = []
    for address in parsed:
        try:
            infos = socket.getaddrinfo(address.host, address.port, 0, socket.SOCK_STREAM, 0,
                                       socket.AI_CANONNAME)
        except OSError:
            expanded.append(address)
            continue
        names = dict.fromkeys(info[3] or address.host for info in infos)
        expanded.extend(ServerAddress(name, address.port) for name in names if
                        ServerAddress(name, address.port) not in expanded)
    return expanded
