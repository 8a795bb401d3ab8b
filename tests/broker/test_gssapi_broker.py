"""SASL/GSSAPI (Kerberos) against a real Kafka and a real KDC: transactions, a read_committed consumer, and
a refused principal as a typed error within 5 s.

Why its own module and broker: GSSAPI needs a KDC (``tests/_support/kerberos.py``), a service principal
for the broker and a keytab for each side, which the shared secured broker (``kafka_secure.py``) does not
have. It skips with a one-line reason without ``KAFKA_HOME``, without Debian's ``krb5-kdc`` or without the
``gssapi`` package (CI has none of them; ``docs/contributing.md`` "Real-broker tests" says how to run it).

What a user relies on: ``sasl_mechanism="GSSAPI"`` authenticates with the process's Kerberos credentials
(here a client keytab, ``KRB5_CLIENT_KTNAME``) as ``<sasl_kerberos_service_name>/<broker host>``, on our
own connections like every other mechanism - every request of a transaction and of a consumer; and a
client whose principal the KDC does not know gets a ``SaslAuthenticationError`` at once, not a timeout.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support.kafka_home import KafkaHomeBroker, free_port
from tests._support.kerberos import REALM, Kdc, kdc_missing
from txnproducer import TransactionalConsumer, TransactionalProducer, errors

_SERVICE = "kafka"


class GssapiKafkaHomeBroker(KafkaHomeBroker):
    """One KRaft node with a SASL_PLAINTEXT listener speaking GSSAPI, advertised as ``localhost`` (the
    host part of the broker's service principal)."""

    def __init__(self, kafka_home: Path, workdir: Path, kdc: Kdc, keytab: Path) -> None:
        super().__init__(kafka_home, workdir)
        self.kdc = kdc
        self.keytab = keytab
        self.gssapi_port = free_port()
        self.gssapi_bootstrap = f"localhost:{self.gssapi_port}"

    def adjust_properties(self, lines: dict[str, str]) -> dict[str, str]:
        props = dict(super().adjust_properties(lines))
        jaas = (f'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
                f'keyTab="{self.keytab}" principal="{_SERVICE}/localhost@{REALM}";')
        props.update({
            "listeners": (f"PLAINTEXT://127.0.0.1:{self.port},GSSAPI://127.0.0.1:{self.gssapi_port},"
                          f"CONTROLLER://127.0.0.1:{self.controller_port}"),
            "advertised.listeners": (f"PLAINTEXT://127.0.0.1:{self.port},"
                                     f"GSSAPI://localhost:{self.gssapi_port}"),
            "listener.security.protocol.map": ("CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
                                               "GSSAPI:SASL_PLAINTEXT"),
            "listener.name.gssapi.sasl.enabled.mechanisms": "GSSAPI",
            "listener.name.gssapi.gssapi.sasl.jaas.config": jaas,
            "sasl.kerberos.service.name": _SERVICE,
        })
        return props

    def _env(self) -> dict[str, str]:
        env = super()._env()
        krb5 = f"-Djava.security.krb5.conf={self.kdc.krb5_conf}"
        env["KAFKA_OPTS"] = f"{env.get('KAFKA_OPTS', '')} {krb5}".strip()
        return env


@pytest.fixture(scope="module")
def kerberized() -> Iterator[tuple[GssapiKafkaHomeBroker, Kdc, Path]]:
    home = os.environ.get("KAFKA_HOME")
    if not home:
        pytest.skip("GSSAPI needs KAFKA_HOME (a Kafka distribution to start with a Kerberos listener)")
    missing = kdc_missing()
    if missing is not None:
        pytest.skip(missing)
    workdir = Path(tempfile.mkdtemp(prefix="txnproducer-gssapi-"))
    kdc = Kdc(workdir)
    broker: GssapiKafkaHomeBroker | None = None
    try:
        kdc.start()
        service = kdc.keytab(f"{_SERVICE}/localhost")
        client = kdc.keytab("alice")
        broker = GssapiKafkaHomeBroker(Path(home), workdir, kdc, service)
        broker.start()
        yield broker, kdc, client
    finally:
        if broker is not None:
            broker.stop()
        kdc.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def as_alice(kerberized: tuple[GssapiKafkaHomeBroker, Kdc, Path], monkeypatch: pytest.MonkeyPatch,
             tmp_path: Path) -> dict[str, Any]:
    """The process's Kerberos environment for principal alice (a client keytab, a fresh ticket cache)."""
    broker, kdc, keytab = kerberized
    monkeypatch.setenv("KRB5_CONFIG", str(kdc.krb5_conf))
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", str(keytab))
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'ccache'}")
    return {"bootstrap_servers": broker.gssapi_bootstrap, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "GSSAPI", "sasl_kerberos_service_name": _SERVICE}


def test_transactions_and_a_read_committed_consumer_over_gssapi(as_alice: dict[str, Any]) -> None:
    topic = f"gssapi-{os.getpid()}"
    with TransactionalProducer(transactional_id=f"tx-gssapi-{os.getpid()}", **as_alice) as producer:
        producer.init_transactions()
        with producer.transaction():
            producer.send(topic, b"committed", partition=0)
        producer.begin_transaction()
        producer.send(topic, b"aborted", partition=0)
        producer.flush()
        producer.abort_transaction()
        with producer.transaction():
            producer.send(topic, b"committed-2", partition=0)
    seen: list[bytes] = []
    with TransactionalConsumer(auto_offset_reset="earliest", **as_alice) as consumer:
        consumer.assign([(topic, 0)])
        deadline = time.monotonic() + 30
        while len(seen) < 2:
            assert time.monotonic() < deadline, seen
            seen.extend(r.value for r in consumer.poll(timeout=0.5) if r.value is not None)
    assert seen == [b"committed", b"committed-2"]


def test_a_principal_the_kdc_does_not_know_is_refused_at_once(
        as_alice: dict[str, Any], kerberized: tuple[GssapiKafkaHomeBroker, Kdc, Path],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _broker, kdc, _keytab = kerberized
    stranger = tmp_path / "stranger.keytab"
    shutil.copy(kdc.keytab("mallory"), stranger)
    kdc._run("kadmin.local", "-r", REALM, "-q", "delprinc -force mallory")  # its keys no longer exist
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", str(stranger))
    started = time.monotonic()
    with TransactionalProducer(transactional_id=f"tx-gssapi-stranger-{os.getpid()}",  # noqa: SIM117
                               max_block_ms=30_000, **as_alice) as producer:
        with pytest.raises(errors.SaslAuthenticationError, match="GSSAPI"):
            producer.init_transactions()
    assert time.monotonic() - started < 5.0
