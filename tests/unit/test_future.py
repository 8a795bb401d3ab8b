"""A request's outcome (``network/future.py``): callbacks in order, once, and a callback that raises is
said on our logger without stopping the others (kafka-python's future logged it on its own logger at
ERROR, a line on our path that no application error stood for)."""

from __future__ import annotations

import logging

import pytest

from txnproducer._internal.network.future import Future


def test_callbacks_run_in_order_once_and_late_ones_at_once() -> None:
    seen: list[str] = []
    future = Future()
    future.add_callback(lambda v: seen.append(f"a{v}")).add_errback(lambda e: seen.append("never"))
    future.add_both(lambda v: seen.append(f"b{v}"))
    future.success(1)
    future.add_callback(lambda v: seen.append(f"late{v}"))
    assert seen == ["a1", "b1", "late1"] and future.succeeded() and not future.failed()
    with pytest.raises(RuntimeError, match="already completed"):
        future.success(2)


def test_errbacks_get_the_exception() -> None:
    error = ValueError("no")
    seen: list[BaseException] = []
    failed = Future().failure(error)
    failed.add_errback(seen.append)
    failed.add_callback(lambda _v: seen.append(RuntimeError("never")))
    assert seen == [error] and failed.failed() and failed.exception is error
    with pytest.raises(TypeError):
        Future().failure("not an exception")  # type: ignore[arg-type]


def test_a_callback_that_raises_is_logged_on_our_logger_and_the_rest_still_run(
        caplog: pytest.LogCaptureFixture) -> None:
    seen: list[int] = []

    def broken(_value: int) -> None:
        raise KeyError("bug")

    future = Future()
    future.add_callback(broken)
    future.add_callback(seen.append)
    with caplog.at_level(logging.DEBUG):
        future.success(7)
    assert seen == [7]
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.name == "txnproducer.network" and "txn.callback_failed" in record.getMessage()
