"""The optional compiled hot path: which implementation of the per-record path this process runs.

Why a room of its own: the compiled extensions (``_speedups.c`` for the send path, ``_decode.c`` for
the read path, ``_produce.c`` for the Produce request and its answer; built when a C compiler is there
at install time) mirror a few pure-Python pieces of other rooms (the record batch encoder, the
accumulator's open-batch append, ``send()``'s common case; the record batch decoder of
``_internal/fetch``; the Produce codec of ``_internal/protocol``) and are chosen once per process,
here, before they are imported. The pure-Python modules stay the reference (same behaviour, byte-identical
batches; tests compare the two); the extension only ever takes the cases it knows and hands every
other one back to them.

The pure-Python path runs when ``TXNPRODUCER_PURE_PYTHON`` is set to anything but ``""``/``0``, or when
the extension is missing (no compiler at install time) or fails to load. ``PATH`` says which one
runs (``txnproducer perf`` prints it) and ``REASON`` why.

What it may import: nothing of txnproducer (a leaf every room may use).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["DECODE", "ENV_VAR", "PATH", "PRODUCE", "REASON", "SPEEDUPS", "describe"]

#: Set to 1 to run the pure-Python path even where the extension is built.
ENV_VAR = "TXNPRODUCER_PURE_PYTHON"


def _load(name: str = "_speedups") -> tuple[ModuleType | None, str]:
    if os.environ.get(ENV_VAR, "") not in ("", "0"):
        return None, f"{ENV_VAR}={os.environ[ENV_VAR]}"
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError:  # not built: no C compiler at install time, or TXNPRODUCER_NO_EXTENSION
        return None, "the compiled extension is not built"
    except ImportError as exc:  # built for another Python, or broken
        return None, f"the compiled extension failed to load: {exc}"
    crc = getattr(module, "crc_implementation", None)  # the modules with a CRC-32C say which
    return module, "compiled extension" + (f", CRC-32C by {crc()}" if crc is not None else "")


def _load_beside(name: str) -> ModuleType | None:
    """Another compiled module (``_decode.c``, ``_produce.c``), under the same rule as ``_speedups``:
    never on the pure-Python path, so that one switch runs all of the reference code."""
    module, _reason = _load(name) if SPEEDUPS is not None else (None, "")
    return module


#: The extension module, or None on the pure-Python path.
SPEEDUPS, REASON = _load()
#: "compiled" or "pure-python".
PATH = "compiled" if SPEEDUPS is not None else "pure-python"
#: The compiled record batch decoder, or None (pure Python, or not built).
DECODE = _load_beside("_decode")
#: The compiled Produce request encoder and answer decoder, or None (pure Python, or not built).
PRODUCE = _load_beside("_produce")


def describe() -> str:
    """One line for tools and logs: the path and why."""
    if SPEEDUPS is None:
        return f"{PATH} ({REASON})"
    decoder = "decoder compiled" if DECODE is not None else "decoder pure-python (the extension is not built)"
    produce = "Produce codec compiled" if PRODUCE is not None \
        else "Produce codec pure-python (the extension is not built)"
    return f"{PATH} ({REASON}; {decoder}; {produce})"
