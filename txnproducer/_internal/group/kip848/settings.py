"""What a consumer-protocol member is configured with: :class:`ConsumerGroupSettings`, validated once.

Why fewer settings than the classic member's: under KIP-848 the group coordinator owns the session
timeout, the heartbeat interval and the assignment (``group.consumer.session.timeout.ms``,
``group.consumer.heartbeat.interval.ms``, ``group.consumer.assignors`` on the broker). A member says
only who it is (group id, static instance id, rack), how long a revocation may take it
(``max_poll_interval_ms``, sent as the rebalance timeout) and, optionally, which of the broker's
assignors it prefers (``remote_assignor``).
"""

from __future__ import annotations

from typing import Any

import attrs

from txnproducer.errors import ConfigError

from ..settings import check_group_instance_id

__all__ = ["ConsumerGroupSettings"]

_INT32_MAX = 2**31 - 1


def _positive(_inst: Any, attr: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _INT32_MAX:
        raise ConfigError(f"{attr.name} must be an int >= 1, got {value!r}")


def _group_id(_inst: Any, attr: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"group_id (group.id) must be a non-empty string, got {value!r}")


def _optional_name(_inst: Any, attr: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(f"{attr.name} must be None or a non-empty string, got {value!r}")


@attrs.frozen(kw_only=True)
class ConsumerGroupSettings:
    """A consumer-protocol member's settings (Java names in brackets; defaults are Java's).

    ``group_id`` (group.id); ``group_instance_id`` (group.instance.id): a static member, whose
    ``close()`` leaves with epoch -2 so that its restart (same id) takes its partitions back without
    a rebalance; ``rebalance_timeout_ms`` (max.poll.interval.ms, 300000): how long the coordinator
    waits for this member to give partitions up, and how long the polling thread may go without a
    ``poll`` before the member leaves; ``remote_assignor`` (group.remote.assignor): the server-side
    assignor to ask for (None: the broker's default, ``uniform``); ``rack_id`` (client.rack): this
    member's rack, for a rack-aware assignor; ``retry_backoff_ms`` / ``retry_backoff_max_ms``;
    ``request_timeout_ms``.
    """

    group_id: str = attrs.field(validator=_group_id)
    group_instance_id: str | None = attrs.field(default=None, validator=check_group_instance_id)
    rebalance_timeout_ms: int = attrs.field(default=300_000, validator=_positive)
    remote_assignor: str | None = attrs.field(default=None, validator=_optional_name)
    rack_id: str | None = attrs.field(default=None, validator=_optional_name)
    retry_backoff_ms: int = attrs.field(default=100, validator=_positive)
    retry_backoff_max_ms: int = attrs.field(default=1_000, validator=_positive)
    request_timeout_ms: int = attrs.field(default=30_000, validator=_positive)

    def __attrs_post_init__(self) -> None:
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ConfigError(
                f"retry_backoff_max_ms must be >= retry_backoff_ms ({self.retry_backoff_ms}), "
                f"got {self.retry_backoff_max_ms}")
