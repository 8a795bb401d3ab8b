"""Build script for the optional compiled accelerators (the send path's, the read path's and the
Produce codec's);
everything else is in pyproject.toml.

Why setuptools (not hatchling, the backend before): it builds C extensions itself, ``optional=True``
turns a failed compile (no compiler, no Python headers) into a warning and a pure-Python install,
``pip install -e .`` builds the extension in place, and cibuildwheel drives it as it is. A hatchling
build hook would have to reimplement those four things.

``TXNPRODUCER_NO_EXTENSION=1`` at install time skips the extension (what a machine without a
compiler gets); ``TXNPRODUCER_PURE_PYTHON=1`` at run time ignores a built one.
"""

import os
import sys

from setuptools import Extension, setup

ext_modules = []
if os.environ.get("TXNPRODUCER_NO_EXTENSION", "") in ("", "0"):
    flags = [] if sys.platform == "win32" else ["-O2", "-Wall", "-Wno-missing-field-initializers"]
    ext_modules.append(Extension(
        "txnproducer._internal.accel._speedups",
        sources=["txnproducer/_internal/accel/_speedups.c"],
        depends=["txnproducer/_internal/accel/crc32c.h", "txnproducer/_internal/accel/slots.h"],
        extra_compile_args=flags,
        optional=True,  # no compiler: install the pure-Python package all the same
    ))
    # the read path's record batch decoder: its own module, so the two paths stay separate files
    ext_modules.append(Extension(
        "txnproducer._internal.accel._decode",
        sources=["txnproducer/_internal/accel/_decode.c"],
        depends=["txnproducer/_internal/accel/crc32c.h"],
        extra_compile_args=flags,
        optional=True,
    ))
    # the Produce request encoder and answer decoder (the Sender's per-request codec)
    ext_modules.append(Extension(
        "txnproducer._internal.accel._produce",
        sources=["txnproducer/_internal/accel/_produce.c"],
        depends=["txnproducer/_internal/accel/slots.h"],
        extra_compile_args=flags,
        optional=True,
    ))

setup(ext_modules=ext_modules)
