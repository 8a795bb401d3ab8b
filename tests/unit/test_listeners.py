"""Listeners and the completion hooks built for callers that must not block (txnproducer.aio).

What such a caller relies on: a callback registered before the condition changes fires exactly
once, on the notifying thread; one registered after completion fires at once; removing it before
the notify means it never fires; a failing callback does not break the thread that notifies.
"""

from __future__ import annotations

import threading

import pytest

from txnproducer import errors
from txnproducer._internal.listeners import Listeners
from txnproducer._internal.txn.result import TransactionalRequestResult


def test_a_listener_fires_once_on_the_notifying_thread() -> None:
    listeners = Listeners()
    calls: list[str] = []
    listeners.add(lambda: calls.append(threading.current_thread().name))
    notifier = threading.Thread(target=listeners.notify, name="notifier")
    notifier.start()
    notifier.join(5)
    listeners.notify()  # one-shot: the second notify finds nobody
    assert calls == ["notifier"] and len(listeners) == 0


def test_a_removed_listener_never_fires_and_removing_twice_is_harmless() -> None:
    listeners = Listeners()
    calls: list[int] = []
    remove = listeners.add(lambda: calls.append(1))
    listeners.add(lambda: calls.append(2))
    remove()
    remove()
    listeners.notify()
    assert calls == [2]


def test_a_failing_listener_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    listeners = Listeners()
    calls: list[int] = []

    def broken() -> None:
        raise RuntimeError("waiter bug")

    listeners.add(broken)
    listeners.add(lambda: calls.append(1))
    listeners.notify()
    assert calls == [1]
    assert "txn.listener_failed" in caplog.text


def test_result_done_callback_fires_on_completion_or_at_once() -> None:
    result = TransactionalRequestResult("commit_transaction")
    fired: list[str] = []
    result.add_done_callback(lambda: fired.append("before"))
    assert fired == []
    completer = threading.Thread(target=result.set_success, name="sender")
    completer.start()
    completer.join(5)
    assert fired == ["before"]
    result.add_done_callback(lambda: fired.append("after"))  # already complete: runs now
    assert fired == ["before", "after"]
    result.wait(0)  # the outcome is read without waiting
    assert result.acked


def test_result_done_callback_then_wait_zero_raises_the_error_once_completed() -> None:
    result = TransactionalRequestResult("abort_transaction")
    fired = threading.Event()
    result.add_done_callback(fired.set)
    result.set_error(errors.ProducerFencedError("fenced"))
    result.set_success()  # first outcome wins; callbacks do not run twice
    assert fired.is_set()
    with pytest.raises(errors.ProducerFencedError):
        result.wait(0)


def test_result_timeout_error_names_the_bound_and_how_to_keep_waiting() -> None:
    result = TransactionalRequestResult("commit_transaction")
    exc = result.timeout_error(1.5, "max_block_ms")
    assert isinstance(exc, errors.TimeoutError)
    assert "within 1500 ms (max_block_ms)" in str(exc) and "call commit_transaction() again" in str(exc)
