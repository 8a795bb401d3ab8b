"""The guard against kafka-python 3.0.12 members falling out of their group
(``tests/_support/kafka_python_groups.py``, which the mock tier's kafka-python members and
``benchmarks/group_membership.py`` run): a finished join nobody applies, and a join abandoned after an
error that reported success."""

from __future__ import annotations

from kafka.structs import MemberState

from tests._support.kafka_python_groups import rescue_lost_join


class Task:
    def __init__(self, done: bool) -> None:
        self.is_done = done


class Coordinator:
    def __init__(self, task: Task | None, rejoin: bool, state: str = MemberState.STABLE) -> None:
        self._join_task = task
        self.group_id = "g"
        self.rejoin = rejoin
        self.state = state
        self.requested = 0

    def need_rejoin(self) -> bool:
        return self.rejoin

    def request_rejoin(self) -> None:
        self.requested += 1


class Subscription:
    def __init__(self, auto_assigned: bool) -> None:
        self.auto_assigned = auto_assigned

    def partitions_auto_assigned(self) -> bool:
        return self.auto_assigned


class Consumer:
    def __init__(self, coordinator: Coordinator, auto_assigned: bool = True) -> None:
        self._coordinator = coordinator
        self._subscription = Subscription(auto_assigned)


def test_a_finished_join_nobody_will_apply_triggers_a_rejoin() -> None:
    coordinator = Coordinator(Task(done=True), rejoin=False)
    assert rescue_lost_join(Consumer(coordinator)) is True
    assert coordinator.requested == 1


def test_a_join_abandoned_after_an_error_triggers_a_rejoin() -> None:
    # join_group_async returned "joined" after a failed attempt: REBALANCING, no task, no rejoin due
    coordinator = Coordinator(None, rejoin=False, state=MemberState.REBALANCING)
    assert rescue_lost_join(Consumer(coordinator)) is True
    assert coordinator.requested == 1


def test_joins_in_progress_or_already_pending_are_left_alone() -> None:
    for task, rejoin, state in (
        (Task(done=False), False, MemberState.REBALANCING),  # the join is running
        (Task(done=True), True, MemberState.REBALANCING),  # the next poll awaits it
        (None, False, MemberState.STABLE),  # joined and heartbeating
        (None, True, MemberState.UNJOINED),  # the next poll joins
        (None, True, MemberState.REBALANCING),  # the next poll retries
    ):
        coordinator = Coordinator(task, rejoin, state)
        assert rescue_lost_join(Consumer(coordinator)) is False, (task, rejoin, state)
        assert coordinator.requested == 0
    assert rescue_lost_join(object()) is False  # not a kafka-python consumer we know


def test_consumers_without_group_membership_are_left_alone() -> None:
    # assign() with a group id: UNJOINED, no task, need_rejoin() False - and nothing to rejoin
    coordinator = Coordinator(None, rejoin=False, state=MemberState.UNJOINED)
    assert rescue_lost_join(Consumer(coordinator, auto_assigned=False)) is False
    coordinator.group_id = None  # type: ignore[assignment]
    assert rescue_lost_join(Consumer(coordinator)) is False
    assert coordinator.requested == 0
