"""pytest plugin of ``make test-asan``: the tests run against the compiled extension built with
AddressSanitizer and UBSan instead of the one in the source tree.

``TXNPRODUCER_SANITIZED_EXTENSION`` names the sanitized build (``build/asan/_speedups*.so``, made by
``make test-asan``, which leaves ``.venv``'s in-place build alone). Loaded with ``-p`` before any test
module imports txnproducer, this plugin imports that file as ``txnproducer._internal.accel._speedups``,
so ``accel`` chooses it as it would the usual one. It refuses to run when the file is missing, when the
ASan runtime is not in the process (``LD_PRELOAD``: an uninstrumented Python must load it first), or when
something imported the usual build before it: a run that only looked sanitized would prove nothing.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

import pytest

ENV_VAR = "TXNPRODUCER_SANITIZED_EXTENSION"
_NAME = "txnproducer._internal.accel._speedups"


def _asan_runtime_loaded() -> bool:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux: trust LD_PRELOAD / DYLD_INSERT_LIBRARIES
        return bool(os.environ.get("LD_PRELOAD") or os.environ.get("DYLD_INSERT_LIBRARIES"))
    return "libasan" in maps


def _load(path: str) -> str:
    if not Path(path).is_file():
        raise pytest.UsageError(f"{ENV_VAR}={path}: no such file (run `make test-asan`)")
    if not _asan_runtime_loaded():
        raise pytest.UsageError("the AddressSanitizer runtime is not loaded: set LD_PRELOAD to "
                                "$(gcc -print-file-name=libasan.so) (`make test-asan` does)")
    if _NAME in sys.modules or "txnproducer._internal.accel" in sys.modules:
        raise pytest.UsageError("txnproducer was imported before the sanitized extension could replace "
                                "the usual one: load this plugin with -p")
    loader = importlib.machinery.ExtensionFileLoader(_NAME, path)
    spec = importlib.util.spec_from_file_location(_NAME, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module
    loader.exec_module(module)
    from txnproducer._internal import accel

    if accel.SPEEDUPS is not module:
        raise pytest.UsageError(f"the sanitized extension is not the one in use: {accel.describe()}")
    return path


_PATH = os.environ.get(ENV_VAR)
_LOADED = _load(_PATH) if _PATH else None


def pytest_report_header() -> str:
    if _LOADED is None:
        return f"sanitized extension: none ({ENV_VAR} is not set)"
    return f"sanitized extension: {_LOADED} (AddressSanitizer runtime loaded, PYTHONMALLOC=" \
           f"{os.environ.get('PYTHONMALLOC', '')})"
