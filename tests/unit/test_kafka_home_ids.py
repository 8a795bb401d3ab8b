"""The broker tier's KRaft cluster ids (``tests/_support/kafka_home.py``).

``kafka-storage.sh format -t ID`` takes an id that starts with ``-`` for an option and fails,
so one broker start in 64 failed before ``random_cluster_id`` drew again.
"""

from __future__ import annotations

import uuid

import pytest

from tests._support import kafka_home


def test_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    draws = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x00" + bytes(15))])
    monkeypatch.setattr(kafka_home.uuid, "uuid4", lambda: next(draws))
    cluster_id = kafka_home.random_cluster_id()
    assert cluster_id == "AAAAAAAAAAAAAAAAAAAAAA"  # the second draw: the first would be "-AAA..."
