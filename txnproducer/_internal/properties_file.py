"""Read a Java ``.properties`` file of client settings (``txnproducer perf --producer.config``).

Why: a user who benchmarks a secured cluster already has the Java client's properties file; the perf
tool takes it as kafka-producer-perf-test does. Only the common subset of the format is read - one
``key=value`` (or ``key: value``) per line, ``#`` and ``!`` comments, surrounding blanks trimmed - not
line continuations or unicode escapes, which client property files do not use in practice. The values
stay text; ``ProducerConfig`` converts them (and refuses Java-only keys with advice).

May import: nothing of txnproducer.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["load_properties", "parse_properties"]

_SEPARATOR = re.compile(r"\s*[=:]\s*")


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """``key=value`` lines to a dict; a line without a separator is a ValueError naming the line."""
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        parts = _SEPARATOR.split(line, maxsplit=1)
        if len(parts) != 2 or not parts[0]:
            raise ValueError(f"{source}:{number}: expected key=value, got a line without '=' or ':'")
        out[parts[0]] = parts[1]
    return out


def load_properties(path: str | Path) -> dict[str, str]:
    """The settings in the properties file at ``path``."""
    return parse_properties(Path(path).read_text(encoding="utf-8"), str(path))
