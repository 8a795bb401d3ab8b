"""GroupSettings: the Java consumer's group settings, checked where the member is created."""

from __future__ import annotations

import pytest

from txnproducer import ConfigError
from txnproducer._internal.group import GroupSettings, connection_config


def test_defaults_are_the_java_consumers() -> None:
    s = GroupSettings(group_id="g")
    assert (s.session_timeout_ms, s.heartbeat_interval_ms, s.max_poll_interval_ms) == (45_000, 3_000, 300_000)
    assert s.assignors == ("range", "roundrobin") and s.group_instance_id is None
    assert s.join_timeout_s == 305.0  # rebalance timeout + 5 s, as Java's joinGroupTimeoutMs


@pytest.mark.parametrize(("kwargs", "names"), [
    ({"group_id": ""}, "group_id (group.id)"),
    ({"group_id": "g", "group_instance_id": ""}, "group_instance_id (group.instance.id)"),
    ({"group_id": "g", "group_instance_id": "has space"}, "group_instance_id"),
    ({"group_id": "g", "session_timeout_ms": 0}, "session_timeout_ms"),
    ({"group_id": "g", "heartbeat_interval_ms": 45_000}, "heartbeat_interval_ms (heartbeat.interval.ms)"),
    ({"group_id": "g", "max_poll_interval_ms": True}, "max_poll_interval_ms"),
    ({"group_id": "g", "assignors": ["sticky"]}, "assignors (partition.assignment.strategy)"),
    ({"group_id": "g", "assignors": []}, "assignors"),
    ({"group_id": "g", "assignors": ["range", "range"]}, "assignors"),
    ({"group_id": "g", "retry_backoff_ms": 500, "retry_backoff_max_ms": 100}, "retry_backoff_max_ms"),
])
def test_bad_values_name_the_key(kwargs: dict[str, object], names: str) -> None:
    with pytest.raises(ConfigError, match=names.replace("(", r"\(").replace(")", r"\)")):
        GroupSettings(**kwargs)  # type: ignore[arg-type]


def test_assignors_may_be_a_java_style_list() -> None:
    assert GroupSettings(group_id="g", assignors="roundrobin, range").assignors == ("roundrobin", "range")


def test_connection_settings_are_validated_as_the_producers() -> None:
    config = connection_config("127.0.0.1:9092", client_id="c", security_protocol="SASL_SSL",
                               sasl_mechanism="PLAIN", sasl_plain_username="u", sasl_plain_password="p")
    assert config.effective_client_id == "c" and config.security_protocol == "SASL_SSL"
    with pytest.raises(ConfigError, match="sasl_mechanism"):
        connection_config("127.0.0.1:9092", client_id="c", security_protocol="SASL_SSL")
    with pytest.raises(ConfigError, match="client_id"):
        connection_config("127.0.0.1:9092", client_id="")
