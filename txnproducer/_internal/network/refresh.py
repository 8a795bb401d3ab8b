"""Keeping the cluster's picture fresh: when and where Metadata and the features' ApiVersions are sent.

Why apart from :mod:`.client`: these are the Java client's ``DefaultMetadataUpdater`` rules, a small
state machine of their own, run from the network poll:

* Metadata goes to the least loaded broker (a bootstrap server until the first answer: that first
  answer is the bootstrap), at once when a refresh was requested (a new topic, a leader that moved,
  a connection lost), else when the last answer is ``metadata_max_age_ms`` old; ``retry_backoff_ms``
  after a failed attempt. One request at a time; one a broker leaves unanswered for a second while
  another broker is known fails (``grey_failures.py``) and goes to another broker.
* The cluster's finalized features (``transaction.version`` decides TV1/TV2, KIP-890) come with every
  connection's first ApiVersions answer (:mod:`.connection_setup`); they are asked again on a ready
  connection when the last answer is ``metadata_max_age_ms`` old, so that a feature upgrade is seen by a
  long-lived producer between transactions.

Thread rule: the network thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.protocol import error_codes as ec

from . import metadata
from .cluster_metadata import ClusterMetadata
from .future import Future

__all__ = ["MetadataRefresh"]

_API_VERSIONS_KEY = 18
_API_VERSIONS_FEATURES = 3  # the first version with finalized features (KIP-584)
_NOTHING_TO_DO_S = 3600.0


class _Network(Protocol):
    """What the refresh asks of the :class:`~.client.NetworkClient` it works for."""

    def least_loaded_node(self) -> Any: ...
    def is_ready(self, node: Any) -> bool: ...
    def ensure_connecting(self, node: Any) -> None: ...
    def connection_delay(self, node: Any) -> float: ...
    def shortest_connection_delay(self) -> float: ...
    def max_version(self, node: Any, api_key: int) -> int | None: ...
    def send(self, node: Any, request: Any) -> Future: ...
    def send_anywhere(self, node: Any, request: Any) -> Future: ...


class MetadataRefresh:
    """See the module docstring. ``net`` is the :class:`~.client.NetworkClient` it works for."""

    def __init__(self, net: _Network, cluster: ClusterMetadata, *, metadata_max_age_ms: int,
                 api_versions_request: Callable[[int], Any],
                 on_features: Callable[[Any], None]) -> None:
        self._net = net
        self._cluster = cluster
        self._max_age_s = metadata_max_age_ms / 1000
        self._api_versions_request = api_versions_request
        self._on_features = on_features
        self._metadata_in_flight: Future | None = None
        self._features_in_flight: Future | None = None
        self._features_at = time.monotonic()  # the first connection's answer brings them
        self._features_version = _API_VERSIONS_FEATURES
        self.last_error: BaseException | None = None
        self._log = get_logger("txnproducer.network")

    def features_answered(self) -> None:
        """A connection's ApiVersions answer brought the features: the next refresh is due in a max age."""
        self._features_at = time.monotonic()

    def run(self, now: float) -> float:
        """Send what is due; seconds until something may be due again (the poll's bound)."""
        wait = self._maybe_refresh_metadata(now)
        if self._features_in_flight is None and now - self._features_at >= self._max_age_s:
            self._maybe_refresh_features(now)  # due once per metadata_max_age_ms: not a call per poll
        return wait

    # -- Metadata --------------------------------------------------------------------------------

    def _maybe_refresh_metadata(self, now: float) -> float:
        if self._metadata_in_flight is not None:
            return _NOTHING_TO_DO_S  # its answer or failure wakes the poll
        cluster = self._cluster
        ttl = cluster.ttl(now)
        if ttl > 0:
            return ttl
        net = self._net
        node = net.least_loaded_node()
        if node is None:  # every broker in reconnect backoff
            return max(0.01, net.shortest_connection_delay())
        if not net.is_ready(node):
            net.ensure_connecting(node)  # its ApiVersions answer decides the request's version
            delay = net.connection_delay(node)
            return delay if delay > 0 else _NOTHING_TO_DO_S  # the connection's events wake the poll
        self.send_metadata(node, now)
        return _NOTHING_TO_DO_S

    def send_metadata(self, node: Any, now: float | None = None) -> Future:
        """Ask ``node`` for metadata now and adopt its answer."""
        cluster = self._cluster
        cluster.attempted(now)
        asked_for = cluster.topics  # replaced, never changed, when a topic is added
        request = metadata.build_request(asked_for, self._net.max_version(node, metadata.METADATA_KEY))
        future = self._net.send_anywhere(node, request)  # a silent broker's is asked elsewhere
        self._metadata_in_flight = future

        def answered(response: Any) -> None:
            if self._metadata_in_flight is future:
                self._metadata_in_flight = None
            if not metadata.read_response(cluster, response, asked_for):
                self._log.debug("txn.metadata_without_brokers", node=node)
            self.last_error = None

        def failed(exc: BaseException) -> None:
            if self._metadata_in_flight is future:
                self._metadata_in_flight = None
            cluster.failed_update()
            self.last_error = exc
            self._log.debug("txn.metadata_refresh_failed", node=node, error=repr(exc))

        future.add_callback(answered)
        future.add_errback(failed)
        return future

    # -- features --------------------------------------------------------------------------------

    def _maybe_refresh_features(self, now: float) -> None:
        if self._features_in_flight is not None or now - self._features_at < self._max_age_s:
            return
        net = self._net
        node = net.least_loaded_node()
        if node is None or not net.is_ready(node):
            return
        self._features_at = now
        future = net.send(node, self._api_versions_request(self._features_version))
        self._features_in_flight = future

        def answered(response: Any) -> None:
            self._features_in_flight = None
            if response.error_code == ec.UNSUPPORTED_VERSION and self._features_version > 0:
                # a pre-2.4 broker: ask with the version it supports (it has no features: TV1)
                supported = [k.max_version for k in response.api_keys or () if k.api_key == _API_VERSIONS_KEY]
                self._features_version = min(supported[0], _API_VERSIONS_FEATURES - 1) if supported else 0
                self._features_at = float("-inf")  # ask again now
                return
            if response.error_code != ec.NONE:
                failed(errors.BrokerError(f"ApiVersions answered {ec.error_name(response.error_code)}",
                                          error_code=response.error_code))
                return
            self._on_features(response)

        def failed(exc: BaseException) -> None:
            self._features_in_flight = None
            self._features_at = time.monotonic() - self._max_age_s + 0.1  # again soon, not in a max age
            self.last_error = exc

        future.add_callback(answered)
        future.add_errback(failed)
