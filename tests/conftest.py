"""Suite-wide hygiene.

Some code under test (the CLI, ``txnproducer perf``) configures process-global logging as an
application would; resetting structlog after each test keeps one test's configuration from
changing what another test's log capture sees.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()
