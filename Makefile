# Every target creates .venv on first use, so a fresh clone needs nothing but python3 (>= 3.10).
# CI has network access to PyPI only: everything installed here comes from PyPI.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test test-all test-quick-all test-ci-extra test-asan lint typecheck check docs demo bench clean

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

$(VENV)/.docs-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@

# The compiled accelerator (docs/performance.md): the editable install builds it in place; this
# rebuilds it when its source changes. A failed compile installs pure Python (setup.py), which
# `make test` refuses (TXNPRODUCER_REQUIRE_ACCEL), so a broken build cannot pass as compiled.
$(VENV)/.accel-built: txnproducer/_internal/accel/_speedups.c txnproducer/_internal/accel/_decode.c \
		txnproducer/_internal/accel/_produce.c txnproducer/_internal/accel/crc32c.h \
		txnproducer/_internal/accel/slots.h setup.py | $(VENV)/.dev-installed
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@

# The suite runs twice: all of it on the compiled path, and the producer, consumer, batching and codec
# tests on the pure-Python reference path (the record encoders' property tests cover both in either
# run). Both runs are parallel (pytest-xdist) and run at the same time: the tests mostly wait on
# sockets and subprocesses (the first run keeps two CPUs about half busy), so WORKERS=6 on two CPUs
# pays, and the second run's CPU fits in the first's idle time; its output is shown after the first's.
# A module's tests share a worker (--dist loadscope), and the slow modules start first
# (tests/conftest.py). The tiers are named in tests/tiers.py, for nox too. The Spark cluster
# tier (marker spark_cluster: a standalone cluster, about 2 minutes and 3 GiB) runs its MockCluster
# scenario in the first run; its real-broker scenario runs with
# `KAFKA_HOME=... .venv/bin/pytest -m spark_cluster` (docs/contributing.md "Real-broker tests").
# Bytecode: a machine may set PYTHONDONTWRITEBYTECODE, and then every process of the suite - xdist workers,
# the examples and Spark's Python workers it starts - compiles the library and rewrites the test modules'
# asserts again (pytest: about 7 of a worker's 12 s of collection). The suite writes its bytecode where
# Python keeps it (__pycache__, ignored by git). (Not PYTHONPYCACHEPREFIX: with it, the bytecode pip and
# the interpreter installed is ignored and every library is compiled again.)
test test-ci-extra test-asan: export PYTHONDONTWRITEBYTECODE :=

WORKERS ?= 6
PURE_WORKERS ?= 2
PARALLEL := -n $(WORKERS) $(shell $(PYTHON) -m tests.tiers parallel)
PURE_PARALLEL := -n $(PURE_WORKERS) $(shell $(PYTHON) -m tests.tiers parallel)
PURE_TESTS := $(shell $(PYTHON) -m tests.tiers pure)

test: $(VENV)/.dev-installed $(VENV)/.accel-built
	$(BIN)/python -c "from txnproducer._internal import accel; print('hot path:', accel.describe())"
	@pure_log=$$(mktemp); \
	echo "TXNPRODUCER_PURE_PYTHON=1 $(BIN)/pytest -q $(PURE_PARALLEL) $(PURE_TESTS) (beside the next run)"; \
	TXNPRODUCER_PURE_PYTHON=1 $(BIN)/pytest -q $(PURE_PARALLEL) $(PURE_TESTS) >"$$pure_log" 2>&1 & pure=$$!; \
	echo 'TXNPRODUCER_REQUIRE_ACCEL=1 $(BIN)/pytest -q $(PARALLEL) -m "$(shell $(PYTHON) -m tests.tiers markers)"'; \
	TXNPRODUCER_REQUIRE_ACCEL=1 $(BIN)/pytest -q $(PARALLEL) -m "$(shell $(PYTHON) -m tests.tiers markers)"; \
	compiled=$$?; wait $$pure; pure=$$?; \
	echo "--- the pure-Python path's run:"; cat "$$pure_log"; rm -f "$$pure_log"; \
	test $$compiled -eq 0 && test $$pure -eq 0

# The test matrix (noxfile.py): `make test` on every supported Python (3.10-3.13), each in a virtualenv of
# nox's (.nox/). nox looks for python3.X on PATH; pyenv's interpreters are put there when it has them.
# `make test-quick-all` runs only the PURE tiers on both paths (no PySpark), as CI does on 3.13.
empty :=
space := $(empty) $(empty)
PYENV_PATH := $(subst $(space),:,$(wildcard $(HOME)/.pyenv/versions/3.1[0-3].*/bin))
test-all: $(VENV)/.dev-installed
	PATH="$(PYENV_PATH):$$PATH" $(BIN)/nox -s tests

test-quick-all: $(VENV)/.dev-installed
	PATH="$(PYENV_PATH):$$PATH" $(BIN)/nox -s quick

# CI (.ci/run) runs `make test` on the default python3 (3.11 here) with the newest kafka-python, and this:
# the PURE tiers on both paths on the newest supported Python, where a break is likeliest, against the
# oldest kafka-python the dependency allows (3.10, the oldest Python, is held by mypy's and ruff's target
# version; `make test-all` runs everything on every Python before a release).
CI_EXTRA_PYTHON ?= 3.13
test-ci-extra: $(VENV)/.dev-installed
	@if PATH="$(PYENV_PATH):$$PATH" command -v python$(CI_EXTRA_PYTHON) >/dev/null; then \
		PATH="$(PYENV_PATH):$$PATH" $(BIN)/nox -s "quick-$(CI_EXTRA_PYTHON)(kafka_python='oldest')"; \
	else echo "test-ci-extra: no python$(CI_EXTRA_PYTHON) on this machine: skipped"; fi

# The sanitizer tier (docs/contributing.md "Sanitizer tier"): the extensions (the send path's _speedups, the record
# decoder's _decode, the Produce codec's _produce) built with AddressSanitizer and UBSan into build/asan (.venv's own builds are left
# alone), loaded in their place by tests/_support/asan_extension.py,
# in a Python whose objects are allocated by malloc (PYTHONMALLOC=malloc: inside pymalloc's arenas ASan
# misses overflows of small objects) with the ASan runtime preloaded (the interpreter is not
# instrumented). CPython frees not everything at exit by design: leak detection is off. Any report
# stops the run. It runs the unit, codec, producer and consumer tests (PURE_TESTS), then the send() fuzz with
# ASAN_FUZZ_SENDS sends per path. Run it before a release and before resolving a bug in the extension.
ASAN_DIR := build/asan
ASAN_FUZZ_SENDS ?= 10000
ASAN_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined,float-cast-overflow \
	-fno-sanitize-recover=all -Wall -Wno-missing-field-initializers
ASAN_ENV = PYTHONMALLOC=malloc LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	TXNPRODUCER_SANITIZED_EXTENSION=$(ASAN_DIR) TXNPRODUCER_REQUIRE_ACCEL=1
ASAN_SUFFIX = $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
ASAN_INCLUDE = $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')

test-asan: $(VENV)/.dev-installed
	rm -rf $(ASAN_DIR) && mkdir -p $(ASAN_DIR)
	for ext in _speedups _decode _produce; do \
		gcc -shared -fPIC $(ASAN_CFLAGS) -I"$(ASAN_INCLUDE)" txnproducer/_internal/accel/$$ext.c \
			-o $(ASAN_DIR)/$$ext"$(ASAN_SUFFIX)" || exit 1; \
	done
	$(ASAN_ENV) $(BIN)/python -m pytest -p tests._support.asan_extension -q \
		--deselect tests/mock/test_producer_send_fuzz.py $(PURE_TESTS)
	$(ASAN_ENV) TXNPRODUCER_FUZZ_SENDS=$(ASAN_FUZZ_SENDS) $(BIN)/python -m pytest -p tests._support.asan_extension \
		-q -s tests/mock/test_producer_send_fuzz.py

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

typecheck: $(VENV)/.dev-installed
	$(BIN)/mypy

check: lint typecheck test

# The documentation site (docs/, DEVELOPING.md "Documentation"), strict: a warning, bad reST in a
# docstring, a broken link or a missing reference fails it (-W -n; --keep-going lists them all), and
# every page is read again (-E), so that no warning hides in an unchanged page. Nothing is fetched.
# The site: docs/_build/html/index.html. Its examples run in make test (tests/mock/test_docs_examples.py).
docs: $(VENV)/.docs-installed
	$(BIN)/sphinx-build -E -W --keep-going -n -q -b html docs docs/_build/html

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
	rm -rf $(VENV) .nox .mypy_cache .ruff_cache .pytest_cache build docs/_build txnproducer/_internal/accel/*.so
