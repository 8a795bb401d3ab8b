"""Speak TLS and SASL to a MockCluster on a bare protocol connection (``WireClient``), for the security tests.

Why a helper: the SASL tests must say exactly what crosses the wire (which SaslHandshake version, which
token, what happens to the next request), which a client library hides; the token formats are written
once here. SCRAM's client side is kafka-python's own ``ScramClient``, an implementation independent of the
mock's server side.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

from kafka.net.sasl.scram import ScramClient
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from txnproducer.testing import MockCluster
from txnproducer.testing.wire_client import WireClient

__all__ = ["authenticate", "client_context", "connect", "metadata", "oauth_token", "plain_token"]


def client_context(cafile: str | None, certificate: tuple[str, str] | None = None,
                   check_hostname: bool = True) -> ssl.SSLContext:
    """A client SSLContext trusting ``cafile`` (TLS 1.2+), presenting ``certificate`` (certfile, keyfile)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = check_hostname
    if cafile is not None:
        ctx.load_verify_locations(cafile)
    if certificate is not None:
        ctx.load_cert_chain(*certificate)
    return ctx


def connect(cluster: MockCluster, broker_id: int = 1, *, certificate: tuple[str, str] | None = None,
            cafile: str | None = None, timeout: float = 5.0) -> WireClient:
    """A WireClient to ``broker_id``, over TLS trusting the cluster's CA when the cluster speaks TLS."""
    host, port = cluster.broker_address(broker_id)
    ctx = None
    if cluster.security_protocol in ("SSL", "SASL_SSL"):
        ctx = client_context(cafile or cluster.ca_file, certificate)
    return WireClient(host, port, ssl_context=ctx, timeout=timeout)


def plain_token(user: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\x00{user}\x00{password}".encode()


def oauth_token(token: str, extensions: Mapping[str, str] | None = None, authzid: str = "") -> bytes:
    """RFC 7628 client initial response, as kafka-python and Kafka's Java client write it."""
    pairs = "".join(f"{k}={v}\x01" for k, v in (extensions or {}).items())
    gs2 = f"n,a={authzid}," if authzid else "n,,"
    return f"{gs2}\x01auth=Bearer {token}\x01{pairs}\x01".encode()


def authenticate(client: WireClient, mechanism: str, *, user: str = "", password: str = "",
                 token: bytes | None = None, handshake_version: int = 1, version: int = 2) -> Any:
    """Handshake and authenticate; the last SaslAuthenticate response (stops at the first error).

    PLAIN sends ``plain_token(user, password)`` unless ``token`` is given; OAUTHBEARER needs ``token``;
    SCRAM runs kafka-python's ScramClient for ``user``/``password`` (both rounds).
    """
    shake = client.send(SaslHandshakeRequest[handshake_version](mechanism=mechanism))
    assert shake.error_code == 0, shake
    if mechanism.startswith("SCRAM-"):
        scram = ScramClient(user, password, mechanism)
        first = client.send(SaslAuthenticateRequest[version](auth_bytes=scram.first_message()))
        if first.error_code:
            return first
        scram.process_server_first_message(first.auth_bytes)
        final = client.send(SaslAuthenticateRequest[version](auth_bytes=scram.final_message()))
        if final.error_code == 0:
            scram.process_server_final_message(final.auth_bytes)  # checks the server signature
        return final
    if token is None:
        token = plain_token(user, password)
    answer = client.send(SaslAuthenticateRequest[version](auth_bytes=token))
    if mechanism == "OAUTHBEARER" and answer.error_code == 0 and answer.auth_bytes:
        # RFC 7628: the server's error challenge is answered with %x01, and the server then fails
        answer = client.send(SaslAuthenticateRequest[version](auth_bytes=b"\x01"))
    return answer


def metadata(client: WireClient, *topics: str, version: int = 12, auto_create: bool = False) -> Any:
    """A Metadata request for ``topics`` (all topics when none are named)."""
    wanted = [MetadataRequest.MetadataRequestTopic(name=t) for t in topics] if topics else None
    return client.send(MetadataRequest[version](topics=wanted, allow_auto_topic_creation=auto_create))


def api_versions(client: WireClient, version: int = 3) -> Any:
    return client.send(ApiVersionsRequest[version](client_software_name="wire", client_software_version="1"))
