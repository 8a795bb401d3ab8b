# Every target creates .venv on first use, so a fresh clone needs nothing but python3 (>= 3.10).
# CI has network access to PyPI only: everything installed here comes from PyPI.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test lint typecheck check demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamp files record what was installed, so repeated runs skip pip.
$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,spark]'
	touch $@

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.bench-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $@

# The compiled accelerator (README "Performance"): the editable install builds it in place; this
# rebuilds it when its source changes. A failed compile installs pure Python (setup.py), which
# `make test` refuses (TXNPRODUCER_REQUIRE_ACCEL), so a broken build cannot pass as compiled.
$(VENV)/.accel-built: txnproducer/_internal/accel/_speedups.c txnproducer/_internal/accel/_decode.c setup.py | $(VENV)/.dev-installed
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

# The suite runs twice: all of it on the compiled path, then the producer, batching and codec tests on
# the pure-Python reference path (the record encoders' property tests cover both in either run).
# Both runs are parallel (pytest-xdist): the tests mostly wait on sockets and subprocesses, so
# WORKERS=4 on two CPUs pays; a module's tests share a worker (--dist loadscope), and the slow
# modules start first (tests/conftest.py). The Spark cluster tier (marker spark_cluster: a standalone
# cluster, about 2 minutes and 3 GiB) runs its MockCluster scenario in the first run; its real-broker
# scenario runs with `KAFKA_HOME=... .venv/bin/pytest -m spark_cluster` (README "Real-broker tests").
WORKERS ?= 4
PARALLEL := -n $(WORKERS) --dist loadscope --no-loadscope-reorder
PURE_TESTS := tests/unit tests/mock/test_producer_txn.py tests/mock/test_producer_edges.py \
	tests/mock/test_producer_faults.py tests/mock/test_producer_protocol.py tests/mock/test_broker_produce.py \
	tests/mock/test_producer_send_paths.py tests/mock/test_consumer.py

test: $(VENV)/.dev-installed $(VENV)/.accel-built
	$(BIN)/python -c "from txnproducer._internal import accel; print('hot path:', accel.describe())"
	TXNPRODUCER_REQUIRE_ACCEL=1 $(BIN)/pytest -q $(PARALLEL) -m "not (spark_cluster and broker)"
	TXNPRODUCER_PURE_PYTHON=1 $(BIN)/pytest -q $(PARALLEL) $(PURE_TESTS)

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

typecheck: $(VENV)/.dev-installed
	$(BIN)/mypy

check: lint typecheck test

# The quick-start demo (commit / abort / commit), then the exactly-once pipeline: two processors
# in one group, one killed mid-transaction and restarted, output checked for exactly-once.
demo: $(VENV)/.installed
	$(BIN)/python -m txnproducer demo
	$(BIN)/python examples/consume_transform_produce.py

# Side-by-side benchmark (txnproducer, kafka-python, confluent-kafka): results.json, a markdown
# table and a PNG chart in benchmarks/results/. BENCH_ARGS="--bootstrap host:9092" for a real broker.
bench: $(VENV)/.bench-installed
	$(BIN)/python benchmarks/compare.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build txnproducer/_internal/accel/*.so
