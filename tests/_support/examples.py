"""Load a script of ``examples/`` as a module (``examples/`` is not a package), for the tests that run
an example's own ``run_demo()`` and check what it reports."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str) -> Any:
    """``examples/<name>.py`` as a fresh module."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
