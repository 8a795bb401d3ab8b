"""Produce's API key and the versions this client encodes and decodes, with what changes at which.

Why apart: the request encoder and the response decoder both need them, and the request's header
names its response type; a leaf module keeps that one-directional (request -> response -> here).
Kafka's ``ProduceRequest.json``: v3 is the first version with record batches (magic v2) and a
transactional id; v9 is the first flexible version (compact types, tagged fields, request header
v2, response header v1); v13 names topics by 16-byte topic id (KIP-516) instead of by name.
"""

from __future__ import annotations

__all__ = ["FIRST_FLEXIBLE", "FIRST_TOPIC_ID", "MAX_VERSION", "MIN_VERSION", "PRODUCE_API_KEY",
           "check_version"]

PRODUCE_API_KEY = 0
MIN_VERSION = 3
MAX_VERSION = 13
FIRST_FLEXIBLE = 9
FIRST_TOPIC_ID = 13


def check_version(version: int) -> None:
    """Raise ValueError for a Produce version outside ``MIN_VERSION..MAX_VERSION``."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"Produce version {version} is not supported (v{MIN_VERSION}-v{MAX_VERSION})")
