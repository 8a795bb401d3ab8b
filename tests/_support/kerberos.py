"""An MIT Kerberos KDC on loopback for the GSSAPI broker test: a realm, a service and a client principal.

Why a real KDC: GSSAPI's exchange (RFC 4752 inside SaslAuthenticate) is the one SASL mechanism whose
tokens we do not make ourselves; only a real KDC, a real broker and the real ``gssapi`` package show that
the tokens, the security-layer negotiation and the service principal's name are what Kafka's broker
accepts. The KDC comes from Debian's ``krb5-kdc`` (``krb5kdc``, ``kdb5_util``, ``kadmin.local``) and the
client library from the ``gssapi`` package; where either is missing the test skips with a one-line reason.

Everything lives in a temporary directory: the realm's database, ``krb5.conf`` (DNS never consulted, host
names never canonicalized: the service principal is ``<service>/localhost``), one keytab per principal.
The KDC listens on a free loopback port, TCP and UDP.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from tests._support.kafka_home import free_port

__all__ = ["REALM", "Kdc", "kdc_missing"]

REALM = "TXN.TEST"
_TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local")


def _tool(name: str) -> str | None:
    return shutil.which(name) or next((str(p) for p in (Path("/usr/sbin") / name,) if p.exists()), None)


def kdc_missing() -> str | None:
    """Why no KDC can run here (None: it can)."""
    missing = [t for t in _TOOLS if _tool(t) is None]
    if missing:
        return f"no MIT Kerberos KDC ({', '.join(missing)}: apt-get install krb5-kdc krb5-admin-server)"
    try:
        import gssapi  # noqa: F401
    except ImportError:
        return "the gssapi package is not installed (pip install gssapi; needs libkrb5-dev)"
    return None


class Kdc:
    """A KDC for :data:`REALM` in ``workdir`` (see the module docstring)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.krb5_conf = workdir / "krb5.conf"
        self._kdc_conf = workdir / "kdc.conf"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self._kdc_conf)}

    def start(self) -> None:
        d = self.workdir
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f" default_realm = {REALM}\n dns_lookup_kdc = false\n dns_lookup_realm = false\n"
            " dns_canonicalize_hostname = false\n rdns = false\n udp_preference_limit = 1\n"
            "[realms]\n"
            f" {REALM} = {{\n  kdc = 127.0.0.1:{self.port}\n }}\n"
            "[domain_realm]\n"
            f" localhost = {REALM}\n 127.0.0.1 = {REALM}\n")
        self._kdc_conf.write_text(
            "[kdcdefaults]\n"
            f" kdc_ports = {self.port}\n kdc_tcp_ports = {self.port}\n"
            "[realms]\n"
            f" {REALM} = {{\n  database_name = {d}/principal\n  key_stash_file = {d}/stash\n"
            f"  acl_file = {d}/kadm5.acl\n  max_life = 1h\n"
            "  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n }\n")
        (d / "kadm5.acl").write_text("")
        self._run("kdb5_util", "create", "-s", "-r", REALM, "-P", "master-not-a-secret")
        log = open(d / "krb5kdc.log", "ab")  # noqa: SIM115 - the KDC's output, for a failed test's reader
        self._process = subprocess.Popen([str(_tool("krb5kdc")), "-n", "-r", REALM],
                                         env={**os.environ, **self.env}, stdout=log, stderr=log,
                                         start_new_session=True)
        deadline = time.monotonic() + 10
        while not self._listening():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"krb5kdc did not start: {(d / 'krb5kdc.log').read_text()[-1000:]}")
            time.sleep(0.05)

    def _listening(self) -> bool:
        import socket

        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run([str(_tool(tool)), *args], env={**os.environ, **self.env}, capture_output=True,
                              timeout=30, check=False)
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace")[-1000:]
            raise RuntimeError(f"{tool} {' '.join(args)} failed: {error}")

    def keytab(self, principal: str) -> Path:
        """Create ``principal`` with a random key and return a keytab holding it."""
        path = self.workdir / (principal.replace("/", "_").replace("@", "_") + ".keytab")
        self._run("kadmin.local", "-r", REALM, "-q", f"addprinc -randkey {principal}")
        self._run("kadmin.local", "-r", REALM, "-q", f"ktadd -k {path} {principal}")
        return path

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
