"""What a group member is configured with: :class:`GroupSettings`, validated once.

Why a value object of its own: the group settings are the Java consumer's (``group.id``,
``group.instance.id``, ``session.timeout.ms``, ...) and obey its cross-field rules (a heartbeat
interval below the session timeout); checked here, a bad value raises :class:`ConfigError` naming
the key where the member is created, never later on its heartbeat thread. The connection settings
(bootstrap servers, client id, security, request and reconnect timeouts) stay the producer's
:class:`~txnproducer.config.ProducerConfig`, which the network room speaks and validates
(:func:`connection_config` builds one for a consumer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import attrs

from txnproducer.config import ProducerConfig
from txnproducer.errors import ConfigError

__all__ = ["ASSIGNOR_NAMES", "GroupSettings", "assignor_names", "check_assignors", "check_group_instance_id",
           "connection_config"]

#: The assignors this member can run as the group's leader (Java's names, which every client shares).
ASSIGNOR_NAMES = ("range", "roundrobin")
_INT32_MAX = 2**31 - 1
# Java's rule for group.instance.id (JoinGroupRequest.validateGroupInstanceId): legal topic characters.
_INSTANCE_ID = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def _positive(_inst: Any, attr: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _INT32_MAX:
        raise ConfigError(f"{attr.name} must be an int >= 1, got {value!r}")


def _group_id(_inst: Any, attr: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"group_id (group.id) must be a non-empty string, got {value!r}")


def _instance_id(_inst: Any, attr: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not _INSTANCE_ID.fullmatch(value)):
        raise ConfigError(
            "group_instance_id (group.instance.id) must be None or 1-249 characters of "
            f"[a-zA-Z0-9._-], got {value!r}")


# The same assignors under the names other clients configure them by: the Java client's class names
# (a properties file), librdkafka's names; kafka-python's assignor classes carry ``name``.
_SPELLINGS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "RangeAssignor": "range",
    "RoundRobinAssignor": "roundrobin",
}


def _assignor_name(item: Any) -> str:
    """One assignor as its protocol name: a name, a Java class name, or a kafka-python assignor class."""
    if not isinstance(item, str):
        name = getattr(item, "name", None)
        return name if isinstance(name, str) else repr(item)
    return _SPELLINGS.get(item, item)


def assignor_names(value: Any) -> tuple[str, ...]:
    """``partition.assignment.strategy`` in any accepted form (a comma-separated string, a list of
    names, Java class names or kafka-python assignor classes) as protocol names; validate with
    :func:`check_assignors`."""
    items = [value] if isinstance(value, str) or not isinstance(value, Sequence) else list(value)
    names: list[str] = []
    for item in items:
        parts = item.split(",") if isinstance(item, str) else [item]
        names.extend(_assignor_name(part.strip() if isinstance(part, str) else part) for part in parts
                     if not isinstance(part, str) or part.strip())
    return tuple(names)


def check_assignors(_inst: Any, attr: attrs.Attribute[tuple[str, ...]], value: tuple[str, ...]) -> None:
    """One or more distinct names of :data:`ASSIGNOR_NAMES` (the eager assignors we can run as leader)."""
    unknown = [name for name in value if name not in ASSIGNOR_NAMES]
    if not value or unknown or len(set(value)) != len(value):
        cooperative = [n for n in unknown if "sticky" in n.lower() or "cooperative" in n.lower()]
        why = (f"; {', '.join(cooperative)} (cooperative or sticky rebalancing) is not supported: this "
               "member rebalances eagerly" if cooperative else "")
        raise ConfigError(
            f"{attr.name} (partition.assignment.strategy) must be one or more distinct names of "
            f"{', '.join(ASSIGNOR_NAMES)} (most preferred first; Java's RangeAssignor and "
            f"RoundRobinAssignor class names work too), got {value!r}{why}")


def check_group_instance_id(_inst: Any, attr: attrs.Attribute[str | None], value: str | None) -> None:
    """Java's rule for ``group.instance.id``: None, or 1-249 legal topic characters."""
    _instance_id(_inst, attr, value)


@attrs.frozen(kw_only=True)
class GroupSettings:
    """A consumer group member's settings (Java names in brackets; defaults are Java's).

    ``group_id`` (group.id): the group. ``group_instance_id`` (group.instance.id): makes the member
    *static* (KIP-345): a restart with the same id takes over its old place and partitions at once,
    without a rebalance, and closing does not leave the group (the coordinator waits
    ``session_timeout_ms`` for it). ``session_timeout_ms`` (session.timeout.ms, 45000): how long the
    coordinator keeps a member that sends no heartbeat. ``heartbeat_interval_ms``
    (heartbeat.interval.ms, 3000): below the session timeout. ``max_poll_interval_ms``
    (max.poll.interval.ms, 300000): a member whose polling thread does not call ``poll`` for this
    long leaves the group; also the rebalance timeout sent in JoinGroup. ``assignors``
    (partition.assignment.strategy): "range", "roundrobin" (eager), most preferred first; a
    comma-separated string works too. ``retry_backoff_ms`` / ``retry_backoff_max_ms``
    (retry.backoff.ms 100 / retry.backoff.max.ms 1000): the exponential wait between retries.
    ``request_timeout_ms`` (request.timeout.ms, 30000): the bound on one answer (JoinGroup gets its
    rebalance timeout + 5 s, as in Java). ``metadata_max_age_ms`` (metadata.max.age.ms, 300000): how
    often the group's leader checks its topics' partition counts (a change rebalances the group).
    ``leave_group_on_close``: a dynamic member sends LeaveGroup when it closes (Java's default).
    """

    group_id: str = attrs.field(validator=_group_id)
    group_instance_id: str | None = attrs.field(default=None, validator=_instance_id)
    session_timeout_ms: int = attrs.field(default=45_000, validator=_positive)
    heartbeat_interval_ms: int = attrs.field(default=3_000, validator=_positive)
    max_poll_interval_ms: int = attrs.field(default=300_000, validator=_positive)
    assignors: tuple[str, ...] = attrs.field(default=ASSIGNOR_NAMES, converter=assignor_names,
                                             validator=check_assignors)
    retry_backoff_ms: int = attrs.field(default=100, validator=_positive)
    retry_backoff_max_ms: int = attrs.field(default=1_000, validator=_positive)
    request_timeout_ms: int = attrs.field(default=30_000, validator=_positive)
    metadata_max_age_ms: int = attrs.field(default=300_000, validator=_positive)
    leave_group_on_close: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))

    def __attrs_post_init__(self) -> None:
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                f"heartbeat_interval_ms (heartbeat.interval.ms) must be lower than session_timeout_ms "
                f"(session.timeout.ms, {self.session_timeout_ms}), got {self.heartbeat_interval_ms}")
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigError(
                f"retry_backoff_max_ms must be >= retry_backoff_ms ({self.retry_backoff_ms}), "
                f"got {self.retry_backoff_max_ms}")

    @property
    def join_timeout_s(self) -> float:
        """JoinGroup's own bound: the broker holds it up to the rebalance timeout (Java's
        ``joinGroupTimeoutMs``: max(request timeout, rebalance timeout + 5 s))."""
        return max(self.request_timeout_ms, self.max_poll_interval_ms + 5_000) / 1000


def connection_config(bootstrap_servers: str | Sequence[str], *, client_id: str,
                      **connection: Any) -> ProducerConfig:
    """The connection settings of a group member in the form the network room speaks: a
    :class:`ProducerConfig` with ``bootstrap_servers``, ``client_id`` and any of its connection
    and security keys (``security_protocol``, ``sasl_*``, ``ssl_*``, ``request_timeout_ms``,
    ``reconnect_backoff_ms``, ``socket_connection_setup_timeout_ms``, ...), validated as the
    producer validates them (ConfigError naming the key). Its transactional id is never sent: it
    only labels the OAUTHBEARER token cache's log lines."""
    if not isinstance(client_id, str) or not client_id:
        raise ConfigError(f"client_id must be a non-empty string, got {client_id!r}")
    return ProducerConfig(transactional_id=client_id, bootstrap_servers=bootstrap_servers,
                          client_id=client_id, **connection)
