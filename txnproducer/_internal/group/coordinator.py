"""The member's link to its group coordinator: finding it, sending to it, forgetting it.

Why apart: every group request goes to the coordinator, and they share the Java client's rules for
it (``AbstractCoordinator``): look it up with FindCoordinator (``find_coordinator.py``) on the
least-loaded broker; when a request to it fails on the wire, or it answers NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE, forget it *and drop the connection* (``markCoordinatorUnknown``), so that
nothing stays parked on a broker that is no longer the coordinator (a JoinGroup it holds would
otherwise wait out its rebalance timeout); the next request looks it up again.

Both protocols' members use it (the classic one's LeaveGroup is ``leave_group.py``'s, the consumer
protocol's heartbeats ``kip848/``): it knows only the shared facts (``state.CoordinatedState``).

Thread rule: the IO thread only; ``lookup_in_flight`` and ``lookups_finished`` may be read from any
thread with the state lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import kafka.errors as kerrors

from txnproducer import errors
from txnproducer._internal.log import get_logger
from txnproducer._internal.network.connection_errors import CoordinatorMoved
from txnproducer._internal.protocol import error_codes as ec

from . import find_coordinator
from .io_thread import GroupIo
from .state import CoordinatedState, Coordinator

__all__ = ["CoordinatorLink"]

_GROUP_KEY = 0  # FindCoordinator's key type of a group


class CoordinatorLink:
    """See the module docstring."""

    def __init__(self, io: GroupIo, state: CoordinatedState, group_id: str,
                 on_found: Callable[[float], None] | None = None) -> None:
        self._io = io
        self._state = state
        self.group_id = group_id
        self._on_found = on_found  # called with the state lock held when a coordinator is found
        self._log = get_logger("txnproducer.group").bind(group_id=group_id)
        # read and written with state.cond held
        self.lookup_in_flight = False
        self.lookups_finished = 0
        self.last_lookup_error: str | None = None
        self._awaiting_bootstrap = False  # a lookup waits for the first metadata answer (IO thread)

    # -- FindCoordinator ------------------------------------------------------------------------

    def lookup(self) -> None:
        """Start a FindCoordinator unless one is in flight or the coordinator is known."""
        state = self._state
        with state.cond:
            if self.lookup_in_flight or state.coordinator is not None or state.closed:
                return
            self.lookup_in_flight = True
        network = self._io.network
        node = network.least_loaded_node()
        if node is None:
            if not network.bootstrapped and network.auth_error is None:
                # bootstrap is under way (a new member): ask again when it answers, not after a backoff
                self._awaiting_bootstrap = True
                return
            self._lookup_finished(None, "no broker of the cluster is reachable now")
            return
        group_id = self.group_id
        self._io.send(node, lambda max_version: find_coordinator.build_request(group_id, max_version),
                      self._on_lookup_answer, self._on_lookup_failure, anywhere=True)

    def tick(self) -> None:
        """Each turn of the IO loop: a lookup that waited for bootstrap goes out once it is done."""
        if self._awaiting_bootstrap:
            network = self._io.network
            if network.bootstrapped or network.auth_error is not None:
                self._awaiting_bootstrap = False
                with self._state.cond:
                    self.lookup_in_flight = False
                self.lookup()

    def _on_lookup_answer(self, response: Any) -> None:
        outcome = find_coordinator.read_response(self.group_id, response)
        if outcome.fatal is not None:
            with self._state.cond:
                self._state.fail(outcome.fatal)
            self._lookup_finished(None, str(outcome.fatal))
        elif outcome.coordinator is not None:
            self._lookup_finished(outcome.coordinator, None)
        else:
            self._lookup_finished(None, f"FindCoordinator answered {ec.error_name(outcome.retriable_code)}")

    def _on_lookup_failure(self, exc: BaseException) -> None:
        if isinstance(exc, errors.AuthenticationError):
            with self._state.cond:
                self._state.fail(exc)
        self._lookup_finished(None, f"FindCoordinator failed: {exc}")

    def _lookup_finished(self, coordinator: Coordinator | None, error: str | None) -> None:
        if coordinator is not None:
            self._io.network.ensure_broker(coordinator.node_id, coordinator.host, coordinator.port)
            self._io.network.ensure_connecting(coordinator.node_id)
        state = self._state
        with state.cond:
            self.lookup_in_flight = False
            self.lookups_finished += 1
            self.last_lookup_error = error
            if coordinator is not None and not state.closed:
                state.coordinator = coordinator
                if self._on_found is not None:
                    self._on_found(time.monotonic())
            state.changed()
        if coordinator is not None:
            self._log.info("group.coordinator_found", node=coordinator.node_id, host=coordinator.host,
                           port=coordinator.port)
        else:
            self._log.debug("group.coordinator_lookup_failed", error=error)

    # -- requests to the coordinator ---------------------------------------------------------------

    def send(self, build: Callable[[Callable[[int], int | None]], Any], on_response: Callable[[Any], None],
             on_failure: Callable[[BaseException], None], timeout_s: float | None = None) -> None:
        """Send to the coordinator (once its connection is ready); a failure on the wire forgets it."""
        with self._state.cond:
            coordinator = self._state.coordinator
        if coordinator is None:
            on_failure(errors.BrokerError(
                f"the coordinator of group {self.group_id!r} is not known",
                error_code=ec.COORDINATOR_NOT_AVAILABLE))
            return

        def failed(exc: BaseException) -> None:
            if isinstance(exc, CoordinatorMoved):  # it stopped answering; the cluster named another
                self._moved(coordinator, Coordinator(exc.node_id, exc.host, exc.port))
            elif isinstance(exc, kerrors.KafkaError):  # the connection failed, closed or timed out
                self.forget(f"request to the coordinator failed: {exc}", coordinator)
            on_failure(exc)

        self._io.send(coordinator.node_id, build, on_response, failed, timeout_s,
                      coordinator_of=(_GROUP_KEY, self.group_id))

    def _moved(self, old: Coordinator, new: Coordinator) -> None:
        """``old`` left a request unanswered and another broker named ``new`` the group's coordinator
        (``network/grey_failures.py``): adopt it, as a lookup would, without closing ``old``'s
        connection (its late answers are read and dropped; until then it is avoided)."""
        with self._state.cond:
            if self._state.coordinator != old:
                return
        self._log.info("group.coordinator_moved", node=old.node_id, coordinator=new.node_id)
        self._lookup_finished(new, None)

    def forget(self, reason: str, only: Coordinator | None = None) -> None:
        """Forget the coordinator (``only``: if it is still that one) and drop its connection."""
        state = self._state
        with state.cond:
            if only is not None and state.coordinator != only:
                return
            old = state.mark_coordinator_unknown()
        if old is not None:
            self._log.info("group.coordinator_unknown", node=old.node_id, reason=reason)
            self._io.network.abandon(old.node_id, f"no longer the coordinator of group "
                                                  f"{self.group_id!r}: {reason}")
