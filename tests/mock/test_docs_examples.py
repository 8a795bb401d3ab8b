"""Every fenced ``python`` block of the docs pages runs, in order, against a MockCluster.

Why: an example nobody runs goes stale (STYLE "Docs that are tested"). Each page's blocks share one
namespace, as a reader pastes them one after the other: the first block starts the page's
MockCluster (``BOOTSTRAP``) and the last closes it. A failing block is reported with the page and
the line its fence opens on; the cluster is closed even then.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ["concurrency.md", "migration-from-confluent-kafka.md"]
_FENCE = re.compile(r"^```python\n(.*?)^```\s*$", re.S | re.M)


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """(line of the opening fence, code) of each ```python block."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _FENCE.finditer(text)]


def test_the_pages_have_examples() -> None:
    for name in PAGES:
        assert len(python_blocks(DOCS / name)) >= 3, name


@pytest.mark.parametrize("name", PAGES)
def test_every_python_block_of_the_page_runs(name: str) -> None:
    page = DOCS / name
    blocks = python_blocks(page)
    if any("confluent_kafka" in code for _line, code in blocks):
        pytest.importorskip("confluent_kafka")
    namespace: dict[str, Any] = {"__name__": f"docs.{page.stem}"}
    try:
        for line, code in blocks:
            exec(compile(code, f"{page}:{line}", "exec"), namespace)  # our own docs
    finally:
        cluster = namespace.get("cluster")
        if cluster is not None:
            cluster.close()
