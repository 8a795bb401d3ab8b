"""Secured listeners for ``compare.py``: one Kafka node with PLAINTEXT, SASL_SSL and mutual-TLS listeners.

``compare.py --kafka-home ... --clients txnproducer@PLAINTEXT,txnproducer@SASL_SSL,confluent-kafka@SASL_SSL``
runs each client against the listener named after its ``@`` (PLAINTEXT when none is named), all on the
same broker in the same run, so that what TLS and SASL cost each client is measured under equal
conditions. The broker is the security tier's (``tests/_support/kafka_secure.py``: certificates from
``trustme``, SCRAM users created at format time), with the benchmark's user a super user, so that no ACL
has to be granted for the benchmark's topics and transactional ids (the ``StandardAuthorizer`` still
runs, for the PLAINTEXT listener's ``User:ANONYMOUS`` as for the others):

* ``PLAINTEXT``: the broker's plaintext listener;
* ``SASL_SSL``: SCRAM-SHA-512 over TLS 1.3 (what most self-managed secured clusters use);
* ``MTLS``: mutual TLS, the principal from the client certificate.

Each client gets its listener's settings as a JSON file (``_clients.py --security-config``), in the
producer's names (kafka-python's too); ``_clients.py`` maps them to librdkafka's. The password is made
per run and written only to that file (mode 0600) and the broker's SCRAM credentials.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["LISTENERS", "SecuredBench", "secured_kafka", "split_column"]

LISTENERS = ("PLAINTEXT", "SASL_SSL", "MTLS")
USER = "bench"


def split_column(column: str) -> tuple[str, str]:
    """``"confluent-kafka@SASL_SSL"`` -> ("confluent-kafka", "SASL_SSL"); no ``@``: PLAINTEXT."""
    client, _, listener = column.partition("@")
    return client, listener or "PLAINTEXT"


class SecuredBench:
    """The running broker's listeners and, per listener, the settings file a client run reads."""

    def __init__(self, broker: Any, workdir: Path, password: str) -> None:
        self._broker = broker
        self.plaintext = str(broker.bootstrap)
        self._files: dict[str, Path] = {}
        certfile, keyfile = broker.client_certificate(USER)
        settings = {
            "PLAINTEXT": {},
            "SASL_SSL": {"security_protocol": "SASL_SSL", "ssl_cafile": broker.ca_file,
                         "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": USER,
                         "sasl_plain_password": password},
            "MTLS": {"security_protocol": "SSL", "ssl_cafile": broker.ca_file, "ssl_certfile": certfile,
                     "ssl_keyfile": keyfile},
        }
        for listener, values in settings.items():
            path = workdir / f"{listener.lower()}.json"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(values, out)
            self._files[listener] = path

    def bootstrap_of(self, listener: str) -> str:
        return self.plaintext if listener == "PLAINTEXT" else str(self._broker.bootstrap_of(listener))

    def settings_file(self, listener: str) -> Path:
        return self._files[listener]

    @property
    def broker_pid(self) -> int:
        """The broker's JVM (Kafka's start scripts ``exec`` it): for reading its CPU time."""
        return int(self._broker.process.pid)


@contextmanager
def secured_kafka(kafka_home: str, root: Path) -> Iterator[SecuredBench]:
    """Start the node (from ``kafka_home``), yield its listeners, stop it."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from tests._support.kafka_secure import SecuredKafkaHomeBroker

    class BenchBroker(SecuredKafkaHomeBroker):  # type: ignore[misc]
        def adjust_properties(self, lines: dict[str, str]) -> dict[str, str]:
            props = dict(super().adjust_properties(lines))
            props["super.users"] = f"User:ANONYMOUS;User:{USER}"
            return props

    workdir = Path(tempfile.mkdtemp(prefix="txnproducer-bench-secured-"))
    password = secrets.token_urlsafe(18)
    broker = BenchBroker(Path(kafka_home), workdir, {USER: password})
    try:
        broker.start()
        yield SecuredBench(broker, workdir, password)
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
