"""Keep a long test's growing, long-lived heap out of Python's full garbage collections.

Why: a chaos run (``tests/chaos/run.py``) keeps in its own process everything it will judge - the
MockCluster's partition logs and request log, the ledger's calls, records and transactions - and the
collector tracks all of it: about 660,000 objects by the end of a 60-second run. Every full
(generation 2) collection walks them all with the GIL held, stopping every thread of the process:
0.1 s early in a run, 0.4-0.5 s at its end, 1.1 s for the last one (measured with a ``gc.callbacks``
timer and a 10 ms ticker thread beside a chaos run and two CPU hogs, as in a parallel suite). The
producers under test stop with it, so a ``flush(0.05)`` returned 1.07 s late and the run failed on a
bound the library had kept (its wait for the batches had ended long before the thread got the GIL
back).

``gc.freeze()`` moves every object tracked so far into the permanent generation, which collections
skip; done every few seconds, a full collection walks only what is newer. The run's records are
append-only and live until it is judged, so nothing that could be collected is kept longer than the
run; ``gc.unfreeze()`` at the end hands everything back to the collector.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["frozen_as_it_grows"]


@contextmanager
def frozen_as_it_grows(interval_s: float = 2.0, freeze: Callable[[], None] = gc.freeze) -> Iterator[None]:
    """Freeze the heap at the start and every ``interval_s`` seconds; unfreeze it at the end.
    ``freeze``: what freezes (a test watches the calls)."""
    stop = threading.Event()

    def freeze_again() -> None:
        while not stop.wait(interval_s):
            freeze()

    freeze()
    thread = threading.Thread(target=freeze_again, name="heap-freezer", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        gc.unfreeze()
