"""pytest plugin of ``make test-asan``: the tests run against the compiled extension built with
AddressSanitizer and UBSan instead of the one in the source tree.

``TXNPRODUCER_SANITIZED_EXTENSION`` names the folder of the sanitized builds (``build/asan/``: the send
path's ``_speedups*.so``, the record decoder's ``_decode*.so`` and the Produce codec's ``_produce*.so``,
made by ``make test-asan``, which leaves ``.venv``'s in-place builds alone). Loaded with ``-p`` before any
test module imports txnproducer, this plugin imports those files as
``txnproducer._internal.accel._speedups``, ``._decode`` and ``._produce``, so
``accel`` chooses them as it would the usual ones. It refuses to run when a file is missing, when the
ASan runtime is not in the process (``LD_PRELOAD``: an uninstrumented Python must load it first), or when
something imported the usual builds before it: a run that only looked sanitized would prove nothing.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

import pytest

ENV_VAR = "TXNPRODUCER_SANITIZED_EXTENSION"
_PACKAGE = "txnproducer._internal.accel"
_EXTENSIONS = ("_speedups", "_decode", "_produce")


def _asan_runtime_loaded() -> bool:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux: trust LD_PRELOAD / DYLD_INSERT_LIBRARIES
        return bool(os.environ.get("LD_PRELOAD") or os.environ.get("DYLD_INSERT_LIBRARIES"))
    return "libasan" in maps


def _load(folder: str) -> str:
    builds = {name: sorted(Path(folder).glob(f"{name}.*.so")) for name in _EXTENSIONS}
    missing = [name for name, found in builds.items() if len(found) != 1]
    if missing:
        raise pytest.UsageError(f"{ENV_VAR}={folder}: no single sanitized build of {', '.join(missing)} "
                                "(run `make test-asan`)")
    if not _asan_runtime_loaded():
        raise pytest.UsageError("the AddressSanitizer runtime is not loaded: set LD_PRELOAD to "
                                "$(gcc -print-file-name=libasan.so) (`make test-asan` does)")
    if _PACKAGE in sys.modules or any(f"{_PACKAGE}.{name}" in sys.modules for name in _EXTENSIONS):
        raise pytest.UsageError("txnproducer was imported before the sanitized extensions could replace "
                                "the usual ones: load this plugin with -p")
    loaded = {}
    for name, (path,) in builds.items():
        full = f"{_PACKAGE}.{name}"
        loader = importlib.machinery.ExtensionFileLoader(full, str(path))
        spec = importlib.util.spec_from_file_location(full, path, loader=loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        loader.exec_module(module)
        loaded[name] = module
    from txnproducer._internal import accel

    if (accel.SPEEDUPS is not loaded["_speedups"] or accel.DECODE is not loaded["_decode"]
            or accel.PRODUCE is not loaded["_produce"]):
        raise pytest.UsageError(f"the sanitized extensions are not the ones in use: {accel.describe()}")
    return ", ".join(str(path) for (path,) in builds.values())


_PATH = os.environ.get(ENV_VAR)
_LOADED = _load(_PATH) if _PATH else None


def pytest_report_header() -> str:
    if _LOADED is None:
        return f"sanitized extensions: none ({ENV_VAR} is not set)"
    return f"sanitized extensions: {_LOADED} (AddressSanitizer runtime loaded, PYTHONMALLOC=" \
           f"{os.environ.get('PYTHONMALLOC', '')})"
