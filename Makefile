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

# The cluster tier (marker spark_cluster: Spark standalone clusters, minutes and GiB) is left out;
# run it with `.venv/bin/pytest -m spark_cluster` (README "PySpark exactly-once sink").
test: $(VENV)/.dev-installed
	$(BIN)/pytest -q -m "not spark_cluster"

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
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
