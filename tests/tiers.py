"""The test tiers the Makefile and the noxfile run, named in one place.

``make test`` and ``nox`` both run the whole suite on the compiled hot path and then ``PURE`` (the
producer, consumer, batching and codec tests) again on the pure-Python reference path; ``nox -s
quick`` runs ``PURE`` on both paths, which is what CI runs on the Pythons it does not run the whole
suite on. ``python -m tests.tiers pure`` prints the list for the Makefile.
"""

from __future__ import annotations

import sys

#: the producer, consumer, batching and codec tests: everything the two hot paths share
PURE: tuple[str, ...] = (
    "tests/unit",
    "tests/mock/test_producer_txn.py",
    "tests/mock/test_producer_edges.py",
    "tests/mock/test_producer_faults.py",
    "tests/mock/test_producer_protocol.py",
    "tests/mock/test_broker_produce.py",
    "tests/mock/test_producer_send_paths.py",
    "tests/mock/test_producer_send_fuzz.py",
    "tests/mock/test_consumer.py",
    "tests/mock/test_consumer_fetching.py",
    "tests/mock/test_consumer_positions.py",
)

#: the oldest kafka-python the dependency allows (pyproject.toml): CI's quick tier runs against it
KAFKA_PYTHON_OLDEST = "3.0.5"

#: besides PURE, the tiers that use most of kafka-python's message classes (security, the group member,
#: the admin tools, the network layer): run against the oldest kafka-python too
KAFKA_PYTHON_API: tuple[str, ...] = (
    "tests/mock/test_secured_connection.py",
    "tests/mock/test_sasl.py",
    "tests/mock/test_group_member.py",
    "tests/mock/test_admin_client.py",
    "tests/mock/test_network_client.py",
    "tests/mock/test_logging.py",
)

#: the whole suite's selection: every tier but the Spark cluster tier's real-broker scenario (it
#: needs a broker: ``-m spark_cluster``); tests needing a broker skip themselves without one
WHOLE_SUITE_MARKERS = "not (spark_cluster and broker)"

#: pytest-xdist: the tests mostly wait on sockets and subprocesses, so more workers than CPUs pay (the
#: Makefile runs 6 on 2 CPUs); a module's tests share a worker, and the slow modules start first
#: (tests/conftest.py)
PARALLEL: tuple[str, ...] = ("--dist", "loadscope", "--no-loadscope-reorder")

if __name__ == "__main__":
    lists = {"pure": " ".join(PURE), "markers": WHOLE_SUITE_MARKERS, "parallel": " ".join(PARALLEL)}
    if len(sys.argv) != 2 or sys.argv[1] not in lists:
        sys.exit(f"usage: python -m tests.tiers {'|'.join(lists)}")
    print(lists[sys.argv[1]])
