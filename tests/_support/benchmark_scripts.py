"""Load a script of ``benchmarks/`` as a module (``benchmarks/`` is not a package), for the tests of a
benchmark's own logic (its parsing, its plumbing) that need no measured run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(file: str, name: str | None = None) -> Any:
    """``benchmarks/<file>`` as a fresh module named ``name`` (default ``_bench_<stem>``).

    ``benchmarks/`` goes on ``sys.path`` first and stays there: the scripts import their siblings
    (``_clients``, ``_pipelines``, ``_java``), some of them only when a function runs. Taking the
    entry away again after the load made such an import fail in a later test of the same process."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    path = BENCHMARKS / file
    spec = importlib.util.spec_from_file_location(name or f"_bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
