"""benchmarks/txn_instructions.py: reading callgrind's count and turning two counts into one transaction's
(valgrind itself does not run here: the script says so when it is missing)."""

from __future__ import annotations

from typing import Any

import pytest

from tests._support.benchmark_scripts import load_benchmark


def _script() -> Any:
    return load_benchmark("txn_instructions.py")


VALGRIND_TAIL = """==4002== Events    : Ir
==4002== Collected : 1722460525
==4002==
==4002== I   refs:      1,722,460,525
"""


def test_the_traced_process_count_is_read_from_its_collected_line() -> None:
    assert _script().collected("txn_cpu output\n" + VALGRIND_TAIL) == 1_722_460_525


def test_output_without_exactly_one_count_is_an_error_not_a_number() -> None:
    """No count (valgrind died, or was not the tracer) or two (a traced child process): refusing beats
    dividing the wrong figure."""
    script = _script()
    with pytest.raises(ValueError, match="found 0"):
        script.collected("==1== Events    : Ir\n")
    with pytest.raises(ValueError, match="found 2"):
        script.collected(VALGRIND_TAIL + VALGRIND_TAIL.replace("4002", "4003"))


def test_one_transaction_is_the_difference_of_two_runs_over_the_transactions_between() -> None:
    script = _script()
    assert script.per_transaction(1_000_000, 10_000_000, 900) == 10_000
    with pytest.raises(ValueError, match="must count more"):
        script.per_transaction(10_000_000, 1_000_000, 900)
