"""Group members for the mock tier: a :class:`GroupMember` polled on its own thread, as a consumer's
polling thread would, with every hook call recorded (and the request-log position when it ran).

Tests wait on :meth:`PolledMember.wait_until` (a condition the hooks notify, with a bound) and on the
cluster's request log; nothing sleeps to synchronise. The poll loop paces itself with a 20 ms wait
between polls (a consumer would block in its fetch there).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs
from kafka.structs import TopicPartition

from txnproducer._internal.group import GroupMember, GroupSettings, connection_config
from txnproducer.testing import MockCluster

WAIT_S = 20.0
FAST = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 100, "max_poll_interval_ms": 4000,
        "retry_backoff_ms": 20, "retry_backoff_max_ms": 200}


@attrs.frozen
class HookCall:
    kind: str  # "revoke", "assign", "lost"
    partitions: frozenset[TopicPartition]
    seq_before: int  # the request log's next seq when the hook started
    seq_after: int  # ... and when it returned


class RecordingHooks:
    """RebalanceHooks that record each call; ``on_revoke_do`` runs inside the revoke hook. With a
    real broker (``cluster`` a bootstrap string) the request-log positions are -1."""

    def __init__(self, cluster: MockCluster | str, cond: threading.Condition) -> None:
        self._cluster = cluster
        self._cond = cond
        self.calls: list[HookCall] = []
        self.on_revoke_do: Callable[[frozenset[TopicPartition]], None] | None = None

    def _seq(self) -> int:
        return -1 if isinstance(self._cluster, str) else self._cluster.requests.next_seq()

    def _record(self, kind: str, partitions: frozenset[TopicPartition], action: Callable[[], None]) -> None:
        before = self._seq()
        action()
        with self._cond:
            self.calls.append(HookCall(kind, partitions, before, self._seq()))
            self._cond.notify_all()

    def on_revoke(self, partitions: frozenset[TopicPartition]) -> None:
        do = self.on_revoke_do
        self._record("revoke", partitions, (lambda: do(partitions)) if do is not None else (lambda: None))

    def on_assign(self, partitions: frozenset[TopicPartition]) -> None:
        self._record("assign", partitions, lambda: None)

    def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._record("lost", partitions, lambda: None)

    def kinds(self) -> list[str]:
        with self._cond:
            return [c.kind for c in self.calls]


def make_member(cluster: MockCluster | str, group: str, name: str, hooks: Any,
                **settings: Any) -> GroupMember:
    """A member of ``group`` on ``cluster`` (a MockCluster, or a real cluster's bootstrap servers)."""
    values = dict(FAST)
    values.update(settings)
    connection = values.pop("connection", {})
    bootstrap = cluster if isinstance(cluster, str) else cluster.bootstrap_servers
    return GroupMember(GroupSettings(group_id=group, **values), hooks,
                       connection=connection_config(bootstrap, client_id=name, reconnect_backoff_ms=20,
                                                    **connection))


class PolledMember:
    """A member polled on a thread of its own until :meth:`stop`; errors are kept for the test."""

    def __init__(self, cluster: MockCluster | str, group: str, name: str, topics: Iterable[str] = ("t",),
                 *, autostart: bool = True, cond: threading.Condition | None = None, **settings: Any) -> None:
        self.name = name
        self.cond = cond or threading.Condition()  # share one between members to wait on them all
        self.hooks = RecordingHooks(cluster, self.cond)
        self.member = make_member(cluster, group, name, self.hooks, **settings)
        self.member.subscribe(list(topics))
        self.errors: list[BaseException] = []
        self.paused = threading.Event()  # set: the loop stops calling poll (a stuck application)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"poller-{name}", daemon=True)
        if autostart:
            self._thread.start()

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self.paused.is_set():
                try:
                    self.member.poll(time.monotonic() + 0.1)
                except BaseException as exc:
                    with self.cond:
                        self.errors.append(exc)
                        self.cond.notify_all()
                    return
            with self.cond:
                self.cond.notify_all()
            self._stop.wait(0.02)

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        return self.member.assignment()

    @property
    def member_id(self) -> str:
        return str(self.member.group_metadata().member_id)

    @property
    def generation(self) -> int:
        return int(self.member.group_metadata().generation_id)

    def wait_until(self, what: str, predicate: Callable[[], bool], timeout: float = WAIT_S,
                   allow_errors: bool = False) -> None:
        wait_until(self.cond, [self], what, predicate, timeout, allow_errors)

    def stop(self, *, close: bool = True, leave_group: bool | None = None, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(WAIT_S)
            assert not self._thread.is_alive(), f"poller {self.name} did not stop"
        if close:
            self.member.close(timeout, leave_group=leave_group)


def wait_until(cond: threading.Condition, members: Iterable[PolledMember], what: str,
               predicate: Callable[[], bool], timeout: float = WAIT_S, allow_errors: bool = False) -> None:
    """Wait on ``cond`` (notified by the members' poll loops and hooks) until ``predicate()``; fail
    at once if a member's poll raised, and after ``timeout`` naming ``what`` and who owns what."""
    members = list(members)
    deadline = time.monotonic() + timeout
    with cond:
        while not predicate():
            failed = {m.name: m.errors for m in members if m.errors}
            if failed and not allow_errors:
                raise AssertionError(f"a member failed while waiting until {what}: {failed!r}")
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"timed out waiting until {what}; owned: {owned_by(members)}"
            cond.wait(min(remaining, 0.1))


def owned_by(members: Iterable[PolledMember]) -> dict[str, frozenset[TopicPartition]]:
    return {m.name: m.assignment for m in members}


def split_evenly(members: list[PolledMember], topic: str, partitions: int) -> bool:
    """Every partition of ``topic`` owned by exactly one of ``members``, each with its fair share."""
    parts = [m.assignment for m in members]
    union: frozenset[TopicPartition] = frozenset().union(*parts)
    share, extra = divmod(partitions, len(members))
    sizes = sorted(len(p) for p in parts)
    return (union == {TopicPartition(topic, p) for p in range(partitions)}
            and sum(sizes) == partitions
            and sizes == sorted([share] * (len(members) - extra) + [share + 1] * extra))
