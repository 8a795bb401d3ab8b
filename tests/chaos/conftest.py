"""The chaos tier: every test under tests/chaos is marked ``chaos`` (``pytest -m chaos`` runs only this tier,
``-m "not chaos"`` everything else)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.chaos)
