"""A secured real Kafka for the broker tier: TLS, SASL and ACLs on one KRaft node.

Why one node with many listeners: each listener is one way users meet a secured cluster, and one broker
serves them all, started once per test module (a start costs 10-30 s):

* ``SASL_SSL``: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER over TLS;
* ``SASL_PLAINTEXT``: SCRAM-SHA-512 without TLS, with sessions of ``REAUTH_MS``
  (``connections.max.reauth.ms``: clients must re-authenticate, KIP-368);
* ``MTLS``: mutual TLS (``ssl.client.auth=required``), the principal mapped from the certificate's CN;
* ``WRONGHOST``: TLS advertised as ``localhost`` with a certificate that names only ``127.0.0.1``
  (the "certificate does not name the host" failure);
* ``INTERNAL``: plaintext, for the broker itself and for the test's own administration (topics, ACLs) as
  ``User:ANONYMOUS``, a super user. A real deployment would not leave such a listener open; here it is
  on 127.0.0.1 only and keeps the tests' set-up out of the ACLs under test.

The authorizer is Kafka's ``StandardAuthorizer`` with ``allow.everyone.if.no.acl.found=false``; SCRAM
users are created at format time (``kafka-storage.sh format --add-scram``); PLAIN users come from the
listener's JAAS configuration; OAUTHBEARER uses Kafka's built-in unsecured JWT validator (tokens with
``"alg": "none"``, as Kafka's own tests use it), whose ``sub`` claim is the principal. Certificates come
from MockCluster's :class:`~txnproducer.testing.security.tls.TlsMaterial` (``trustme``), written as the
PEM stores Kafka reads (KIP-651: a PKCS#8 key and its chain in one file).
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

from tests._support.kafka_home import KafkaHomeBroker, free_port
from txnproducer.oauth import OAuthBearerToken
from txnproducer.testing.security.tls import TlsMaterial

__all__ = ["REAUTH_MS", "SECURED_LISTENERS", "SecuredKafkaHomeBroker", "unsecured_jwt"]

SECURED_LISTENERS = ("SASL_SSL", "SASL_PLAINTEXT", "MTLS", "WRONGHOST")
_PROTOCOL = {"SASL_SSL": "SASL_SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "MTLS": "SSL", "WRONGHOST": "SSL"}
_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
#: the SASL_PLAINTEXT listener's connections.max.reauth.ms
REAUTH_MS = 4_000


def unsecured_jwt(subject: str, lifetime_s: float = 3600.0) -> OAuthBearerToken:
    """An unsigned JWT for Kafka's unsecured OAUTHBEARER validator, naming ``subject`` as principal."""
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    now = time.time()
    claims = {"sub": subject, "iat": int(now), "exp": int(now + lifetime_s)}
    return OAuthBearerToken(f"{part({'alg': 'none'})}.{part(claims)}.", now + lifetime_s)


def _pem_keystore(certfile: str, keyfile: str, out: Path) -> str:
    """Key (re-encoded as unencrypted PKCS#8, the form Kafka's PEM store reads) and chain in one file."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(Path(keyfile).read_bytes(), password=None)
    pkcs8 = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption())
    out.write_bytes(pkcs8 + Path(certfile).read_bytes())
    out.chmod(0o600)
    return str(out)


class SecuredKafkaHomeBroker(KafkaHomeBroker):
    """One KRaft node with the secured listeners above; ``users`` are both PLAIN and SCRAM users."""

    def __init__(self, kafka_home: Path, workdir: Path, users: dict[str, str]) -> None:
        super().__init__(kafka_home, workdir)
        self.users = dict(users)
        self.ports = {name: free_port() for name in SECURED_LISTENERS}
        self.tls = TlsMaterial(hostnames=("127.0.0.1",), client_auth="required")
        self.ca_file = self.tls.ca_file
        self._keystore = _pem_keystore(self.tls.broker_certfile, self.tls.broker_keyfile,
                                       workdir / "broker-keystore.pem")

    def bootstrap_of(self, listener: str) -> str:
        host = "localhost" if listener == "WRONGHOST" else "127.0.0.1"
        return f"{host}:{self.ports[listener]}"

    def security_protocol_of(self, listener: str) -> str:
        return _PROTOCOL[listener]

    def client_certificate(self, name: str) -> tuple[str, str]:
        """(certfile, keyfile) with CN ``name``: the MTLS listener maps it to ``User:<name>``."""
        return self.tls.client_certificate(name)

    def adjust_properties(self, lines: dict[str, str]) -> dict[str, str]:
        props = dict(super().adjust_properties(lines))
        listeners = [f"INTERNAL://127.0.0.1:{self.port}",
                     *(f"{name}://127.0.0.1:{port}" for name, port in self.ports.items())]
        advertised = [f"INTERNAL://127.0.0.1:{self.port}",
                      *(f"{name}://{self.bootstrap_of(name)}" for name in SECURED_LISTENERS)]
        protocol_map = ["CONTROLLER:PLAINTEXT", "INTERNAL:PLAINTEXT",
                        *(f"{name}:{_PROTOCOL[name]}" for name in SECURED_LISTENERS)]
        plain_users = " ".join(f'user_{user}="{password}"' for user, password in self.users.items())
        props.update({
            "listeners": ",".join([*listeners, f"CONTROLLER://127.0.0.1:{self.controller_port}"]),
            "advertised.listeners": ",".join(advertised),
            "listener.security.protocol.map": ",".join(protocol_map),
            "inter.broker.listener.name": "INTERNAL",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": self._keystore,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": self.ca_file,
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
            "listener.name.sasl_ssl.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": _SCRAM,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": _SCRAM,
            "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                'unsecuredLoginStringClaim_sub="broker";',
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": _SCRAM,
            # KIP-368: sessions on this listener end after REAUTH_MS; clients re-authenticate before
            "listener.name.sasl_plaintext.scram-sha-512.connections.max.reauth.ms": str(REAUTH_MS),
            "listener.name.mtls.ssl.client.auth": "required",
            "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=([^,]+).*$/$1/,DEFAULT",
        })
        return props

    def format_args(self) -> list[str]:
        args = super().format_args()
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            for user, password in self.users.items():
                args += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
        return args

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self.tls.close()
