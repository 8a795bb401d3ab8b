"""tests/_support/heap_freezer.py: what the chaos run builds stays out of full collections while it runs,
and goes back to the collector when it ends."""

from __future__ import annotations

import gc
import threading

from tests._support.heap_freezer import frozen_as_it_grows


def test_the_heap_is_frozen_from_the_start_and_handed_back_at_the_end() -> None:
    assert gc.get_freeze_count() == 0
    kept = [[i] for i in range(1_000)]  # tracked containers, like a run's records
    with frozen_as_it_grows(interval_s=3600):
        assert gc.get_freeze_count() >= len(kept)
        freezers = [t for t in threading.enumerate() if t.name == "heap-freezer"]
        assert len(freezers) == 1
    assert gc.get_freeze_count() == 0
    assert not freezers[0].is_alive()


def test_the_heap_is_frozen_again_every_interval_until_the_end() -> None:
    calls: list[int] = []
    third = threading.Event()

    def freeze() -> None:
        gc.freeze()
        calls.append(gc.get_freeze_count())
        if len(calls) == 3:
            third.set()

    with frozen_as_it_grows(interval_s=0.001, freeze=freeze):
        assert third.wait(10), "the heap was not frozen again within 10 s"
    assert gc.get_freeze_count() == 0
    assert len(calls) >= 3
