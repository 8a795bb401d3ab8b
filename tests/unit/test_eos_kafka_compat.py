"""The guard against kafka-python 3.0.12 dropping a finished group join (see eos_kafka_compat)."""

from __future__ import annotations

from txnproducer._internal.eos_kafka_compat import rescue_lost_join


class Task:
    def __init__(self, done: bool) -> None:
        self.is_done = done


class Coordinator:
    def __init__(self, task: Task | None, rejoin: bool) -> None:
        self._join_task = task
        self.rejoin = rejoin
        self.requested = 0

    def need_rejoin(self) -> bool:
        return self.rejoin

    def request_rejoin(self) -> None:
        self.requested += 1


class Consumer:
    def __init__(self, coordinator: Coordinator) -> None:
        self._coordinator = coordinator


def test_a_finished_join_nobody_will_apply_triggers_a_rejoin() -> None:
    coordinator = Coordinator(Task(done=True), rejoin=False)
    assert rescue_lost_join(Consumer(coordinator)) is True
    assert coordinator.requested == 1


def test_joins_in_progress_or_already_pending_are_left_alone() -> None:
    for task, rejoin in ((Task(done=False), False), (Task(done=True), True), (None, False)):
        coordinator = Coordinator(task, rejoin)
        assert rescue_lost_join(Consumer(coordinator)) is False
        assert coordinator.requested == 0
    assert rescue_lost_join(object()) is False  # not a kafka-python consumer we know
