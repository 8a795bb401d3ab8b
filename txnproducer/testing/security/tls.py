"""Certificates for a TLS MockCluster: a throw-away CA, the brokers' certificate, client certificates.

Why generated per cluster: a test must be able to trust exactly this cluster (``ca_file``), to present a
certificate the cluster accepts (``client_certificate(name)``, for mutual TLS) and to reproduce the classic
failures - a client trusting another CA, a broker certificate that does not name the host the client dials
(``tls_hostnames``), a client without a certificate where one is required - without files checked into the
repository. The certificates come from ``trustme`` (imported only when TLS is asked for: it is the
``testing`` extra), and live as PEM files in a private temporary directory that :meth:`TlsMaterial.close`
removes.

The brokers accept TLS 1.2 and 1.3 only. ``client_auth`` is Kafka's ``ssl.client.auth``: ``"none"``,
``"requested"`` (a certificate is checked when sent) or ``"required"``. The principal of a connection with
a client certificate is ``User:<CN>``.

Simplification: Kafka's principal for a certificate is its whole distinguished name unless
``ssl.principal.mapping.rules`` say otherwise; here it is always ``User:<CN>`` (as with the common rule
``RULE:^CN=([^,]*).*$/$1/``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import ssl
import tempfile
import weakref
from collections.abc import Sequence
from typing import Any

__all__ = ["CLIENT_AUTH", "TlsMaterial", "certificate_principal"]

#: Kafka's ssl.client.auth values
CLIENT_AUTH = ("none", "requested", "required")
_VERIFY_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
DEFAULT_HOSTNAMES = ("127.0.0.1", "localhost")


def _trustme() -> Any:
    """The trustme module, or an ImportError that names the extra to install."""
    try:
        import trustme
    except ImportError as exc:
        raise ImportError(
            "MockCluster(tls=True) generates its certificates with the 'trustme' package: "
            "pip install 'txnproducer[testing]'"
        ) from exc
    return trustme


class TlsMaterial:
    """A CA, the brokers' certificate (valid for ``hostnames``) and, on demand, client certificates.

    Every file is written once into a private temporary directory; :meth:`close` removes it (it is also
    removed when the object is garbage-collected).
    """

    def __init__(self, hostnames: Sequence[str] = DEFAULT_HOSTNAMES, client_auth: str = "none") -> None:
        if client_auth not in CLIENT_AUTH:
            raise ValueError(f"tls_client_auth must be one of {CLIENT_AUTH}, got {client_auth!r}")
        if not hostnames:
            raise ValueError("tls_hostnames must name at least one host")
        trustme = _trustme()
        self.client_auth = client_auth
        self.hostnames = tuple(hostnames)
        self.directory = tempfile.mkdtemp(prefix="txnproducer-mock-tls-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.directory, True)
        self._ca = trustme.CA(organization_name="txnproducer MockCluster")
        self.ca_file = self._write("ca.pem", self._ca.cert_pem.bytes())
        broker = self._ca.issue_cert(*self.hostnames, common_name=self.hostnames[0])
        self.broker_certfile = self._write("broker.pem", b"".join(b.bytes() for b in broker.cert_chain_pems))
        self.broker_keyfile = self._write("broker.key", broker.private_key_pem.bytes())
        self._clients: dict[str, tuple[str, str]] = {}
        self._context: ssl.SSLContext | None = None
        self._rotations = 0

    def _write(self, name: str, data: bytes) -> str:
        path = os.path.join(self.directory, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return path

    def server_context(self) -> ssl.SSLContext:
        """The brokers' SSLContext (built once): TLS 1.2+, the broker certificate, ``client_auth``."""
        if self._context is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.load_cert_chain(self.broker_certfile, self.broker_keyfile)
            ctx.verify_mode = _VERIFY_MODES[self.client_auth]
            if self.client_auth != "none":
                ctx.load_verify_locations(self.ca_file)
            self._context = ctx
        return self._context

    def rotate_broker_certificate(self) -> bytes:
        """Issue the brokers a new certificate (same CA, same host names) for the connections accepted from
        now on, as an operator renewing certificates does; connections already open keep the old one.
        Returns the new certificate (DER), to compare with what a client saw."""
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import Encoding

        self._rotations += 1
        broker = self._ca.issue_cert(*self.hostnames, common_name=self.hostnames[0])
        chain = b"".join(b.bytes() for b in broker.cert_chain_pems)
        self.broker_certfile = self._write(f"broker-{self._rotations}.pem", chain)
        self.broker_keyfile = self._write(f"broker-{self._rotations}.key", broker.private_key_pem.bytes())
        self._context = None  # the next connection's handshake builds a context with the new pair
        return x509.load_pem_x509_certificate(broker.cert_chain_pems[0].bytes()).public_bytes(Encoding.DER)

    def client_certificate(self, name: str) -> tuple[str, str]:
        """(certfile, keyfile): a client certificate with CN ``name`` from this cluster's CA (PEM files)."""
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"a client certificate name must be a plain name, got {name!r}")
        if name not in self._clients:
            # a subjectAltName entry too: with none, trustme writes an empty (critical) extension, which
            # Java's certificate path validation - a real Kafka broker's - rejects
            cert = self._ca.issue_cert(f"{name}.clients.invalid", common_name=name)
            self._clients[name] = (
                self._write(f"client-{name}.pem", b"".join(b.bytes() for b in cert.cert_chain_pems)),
                self._write(f"client-{name}.key", cert.private_key_pem.bytes()),
            )
        return self._clients[name]

    def close(self) -> None:
        """Remove the directory and every file in it."""
        self._cleanup()


def certificate_principal(sock: ssl.SSLSocket) -> str | None:
    """``User:<CN>`` of the verified client certificate on ``sock``, or None when there is none."""
    with contextlib.suppress(ValueError, ssl.SSLError):
        cert = sock.getpeercert()
        for rdn in (cert or {}).get("subject", ()):
            for attribute in rdn:
                if attribute[0] == "commonName":
                    return f"User:{attribute[1]}"
    return None
