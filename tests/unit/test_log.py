"""Library loggers: quiet by default, standard ``logging`` levels decide, bound fields are kept."""

from __future__ import annotations

import logging

import pytest
import structlog

from txnproducer._internal.log import debug_enabled, get_logger


def test_events_follow_the_stdlib_level_and_keep_bound_fields(caplog: pytest.LogCaptureFixture) -> None:
    log = get_logger("txnproducer.test_log").bind(producer="p-1")
    with caplog.at_level(logging.INFO, logger="txnproducer.test_log"):
        log.debug("hidden.event", n=1)
        log.info("shown.event", n=2)
        log.warning("warned.event", n=3)
    text = caplog.text
    assert "hidden.event" not in text
    assert "event='shown.event'" in text and "n=2" in text and "producer='p-1'" in text
    assert "event='warned.event'" in text
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="txnproducer.test_log"):
        log.debug("debug.event", n=4)
    assert "event='debug.event'" in caplog.text and "n=4" in caplog.text


def test_exception_events_carry_the_traceback(caplog: pytest.LogCaptureFixture) -> None:
    log = get_logger("txnproducer.test_log")
    with caplog.at_level(logging.ERROR, logger="txnproducer.test_log"):
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed.event")
    assert "failed.event" in caplog.text and "ValueError: boom" in caplog.text


def test_debug_enabled_follows_the_stdlib_level(caplog: pytest.LogCaptureFixture) -> None:
    """What lets the transaction manager skip building a debug event's fields: it must say True
    whenever the event would be shown, or the event is lost."""
    log = get_logger("txnproducer.test_log.gate")
    with caplog.at_level(logging.INFO, logger="txnproducer.test_log.gate"):
        assert not debug_enabled(log)
    with caplog.at_level(logging.DEBUG, logger="txnproducer.test_log.gate"):
        assert debug_enabled(log)
        assert debug_enabled(log.bind(producer="p-1"))
    # an application's structlog pipeline decides for itself: always asked
    assert debug_enabled(structlog.get_logger("txnproducer.test_log.gate"))
