"""The admin tools' settings (``admin/settings.py``): the producer's connection settings, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from txnproducer.admin.settings import AdminSettings, load_command_config
from txnproducer.errors import ConfigError


def test_connection_and_security_settings_in_either_spelling() -> None:
    s = AdminSettings.from_mapping(
        {
            "bootstrap.servers": "b:9093",
            "security_protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.plain.username": "ops",
            "sasl.plain.password": "s3cret-pw",
            "default.api.timeout.ms": "2500",
        }
    )
    assert (s.config.security_protocol, s.config.sasl_plain_username, s.timeout_ms) == (
        "SASL_SSL",
        "ops",
        2500,
    )
    assert s.config.client_id == "txnproducer-admin"
    assert "s3cret-pw" not in repr(s)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"linger.ms": 5}, "linger.ms: not a connection setting"),
        ({"transactional.id": "x"}, "transactional.id: not a connection setting"),
        ({"ssl.truststore.location": "/x.jks"}, "ssl.truststore.location"),
        ({"default.api.timeout.ms": "0"}, "default.api.timeout.ms must be an int > 0"),
        ({"security.protocol": "SASL_SSL"}, "sasl_mechanism must be one of"),
    ],
)
def test_anything_else_is_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        AdminSettings.from_mapping({"bootstrap.servers": "b:9092", **settings})


def test_a_command_config_file(tmp_path: Path) -> None:
    path = tmp_path / "admin.properties"
    path.write_text(
        "# kafka-transactions.sh --command-config\nsecurity.protocol=SSL\nssl.check.hostname: false\n"
    )
    assert load_command_config(str(path)) == {"security.protocol": "SSL", "ssl.check.hostname": "false"}
    with pytest.raises(ConfigError, match="cannot read --command-config"):
        load_command_config(str(tmp_path / "missing.properties"))
