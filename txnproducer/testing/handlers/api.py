"""What a handler module declares (:class:`Api`) and what a handler is called with (:class:`RequestContext`).

Why a module of its own: every handler module and the server need these two types, and the handler list
in ``handlers/__init__.py`` imports every handler module; with the types here, no handler module imports
that list (no import circle) and the list stays the one place that says which APIs are answered.

A handler module ends with one declaration, e.g. ``API = Api(26, "EndTxn", 0, 5, handle, tv1_max_version=4)``:
the API key, its name, the version range Apache Kafka 4.1.0 advertises for it (the conformance recording
``api_versions.json``), the lower maximum Kafka advertises while ``transaction.version`` < 2 (KIP-890) or
the higher one with two-phase commit enabled (KIP-939), and the handler. ApiVersions answers from these
declarations (:meth:`Api.advertised`).

A handler is called with the cluster state lock held (``state.lock``, an ``RLock``) and returns the
response object for the request's version (None: no answer, Produce with acks=0). A handler that must
wait (JoinGroup, a long-polling Fetch) waits on ``state.cond`` (a ``Condition`` on that lock), which
releases the lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:  # pragma: no cover
    from ..cluster_state import ClusterState


@attrs.frozen
class RequestContext:
    """What a handler knows about the request besides its body."""

    broker_id: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    connection_id: int


Handler = Callable[["ClusterState", RequestContext, Any], Any]


@attrs.frozen
class Api:
    """One handled API: key, name, the versions Kafka 4.1.0 advertises for it, and its handler."""

    key: int
    name: str
    min_version: int
    max_version: int
    handler: Handler
    #: the highest version advertised while transaction.version < 2 (KIP-890 versions need TV2)
    tv1_max_version: int | None = None
    #: the highest version advertised when two-phase commit is enabled (KIP-939)
    two_pc_max_version: int | None = None

    def advertised(
        self, schema_versions: tuple[int, int], transaction_version: int, enable_2pc: bool
    ) -> tuple[int, int] | None:
        """(min, max) as ApiVersions reports them, or None when no version is left.

        The declared range (raised to ``two_pc_max_version`` with 2PC enabled) intersected with
        ``schema_versions`` (what kafka-python can decode), then capped at ``tv1_max_version`` below TV2.
        """
        lo, hi = self.min_version, self.max_version
        if enable_2pc and self.two_pc_max_version is not None:
            hi = self.two_pc_max_version
        lo, hi = max(lo, schema_versions[0]), min(hi, schema_versions[1])
        if transaction_version < 2 and self.tv1_max_version is not None:
            hi = min(hi, self.tv1_max_version)
        return (lo, hi) if lo <= hi else None
