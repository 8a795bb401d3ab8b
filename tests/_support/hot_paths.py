"""Both hot paths in one process: producers made inside ``pure_python_path()`` run the pure-Python
reference even where the compiled extension is built, so a test can send the same arguments through
each and compare what comes out (``TXNPRODUCER_PURE_PYTHON=1`` chooses for the whole process)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from txnproducer import producer as producer_module
from txnproducer._internal import accel
from txnproducer._internal.batching import accumulator as accumulator_module
from txnproducer._internal.protocol.record_batch import BatchEncoder

#: The paths a test can run in this process: the active one, and the pure one when that is another.
PATHS = ["compiled", "pure-python"] if accel.PATH == "compiled" else ["pure-python"]


@contextlib.contextmanager
def pure_python_path() -> Iterator[None]:
    """Producers (and accumulators) constructed inside take no compiled part: no compiled send path,
    a threading.Lock, no compiled append, the pure-Python batch encoder (each is chosen when the
    object is made). ``restamp`` stays the active one: both write the same bytes."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(producer_module, "_SPEEDUPS", None)
        monkeypatch.setattr(accumulator_module, "_SPEEDUPS", None)
        monkeypatch.setattr(accumulator_module, "ActiveBatchEncoder", BatchEncoder)
        yield


@contextlib.contextmanager
def hot_path(path: str) -> Iterator[None]:
    """``pure_python_path()`` for ``"pure-python"``, nothing for ``"compiled"``."""
    if path == "pure-python":
        with pure_python_path():
            yield
    else:
        assert accel.PATH == "compiled", accel.describe()
        yield
