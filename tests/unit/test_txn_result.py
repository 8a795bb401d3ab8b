"""TransactionalRequestResult: what commit_transaction() and friends block on.

What callers rely on: a bounded wait raises TimeoutError naming its bound and the operation goes
on (a later wait sees its outcome, KIP-691); every waiter is released by the completion, each
sees the same outcome; the first outcome wins; a completed result answers at once.
"""

from __future__ import annotations

import threading

import pytest

from txnproducer import errors
from txnproducer._internal.txn.result import TransactionalRequestResult


def test_a_bounded_wait_times_out_naming_its_bound_and_a_later_wait_sees_the_outcome() -> None:
    result = TransactionalRequestResult("commit_transaction")
    expected = r"commit_transaction\(\) did not complete within 0 ms \(max_block_ms\)"
    with pytest.raises(errors.TimeoutError, match=expected):
        result.wait(0.0)
    with pytest.raises(errors.TimeoutError, match="within 20 ms"):
        result.wait(0.02)
    with pytest.raises(errors.TimeoutError):
        result.wait(-1.0)  # a deadline already past: at once, never "forever"
    assert not result.done() and not result.acked
    result.set_success()
    result.wait(0.0)
    assert result.done() and result.is_successful() and result.acked
    result.wait(None)  # repeatable


def test_every_waiter_is_released_and_sees_the_same_error() -> None:
    result = TransactionalRequestResult("commit_transaction")
    started = threading.Barrier(5)
    seen: list[BaseException | None] = []
    lock = threading.Lock()

    def waiter() -> None:
        started.wait()
        try:
            result.wait(60.0)
        except BaseException as exc:
            with lock:
                seen.append(exc)
        else:
            with lock:
                seen.append(None)

    threads = [threading.Thread(target=waiter) for _ in range(4)]
    for thread in threads:
        thread.start()
    started.wait()  # all four are about to wait (some may already block on the gate)
    failure = errors.ProducerFencedError("fenced")
    result.set_error(failure)
    result.set_success()  # the first outcome wins
    for thread in threads:
        thread.join(60.0)
        assert not thread.is_alive()
    assert seen == [failure] * 4
    assert not result.is_successful() and result.error is failure


def test_done_callbacks_run_once_at_completion_or_at_once_after_it() -> None:
    result = TransactionalRequestResult("init_transactions")
    calls: list[str] = []
    result.add_done_callback(lambda: calls.append("before"))
    assert calls == []
    result.set_success()
    result.set_success()
    assert calls == ["before"]
    result.add_done_callback(lambda: calls.append("after"))
    assert calls == ["before", "after"]


def test_the_first_successful_wait_records_the_metric_once() -> None:
    recorded: list[tuple[str, int]] = []
    ticks = iter([100, 350, 999])
    result = TransactionalRequestResult("commit_transaction", metric="m",
                                        record_metric=lambda n, v: recorded.append((n, v)),
                                        clock_ns=lambda: next(ticks))
    result.set_success()
    result.wait(1.0)
    result.wait(1.0)
    assert recorded == [("m", 250)]
