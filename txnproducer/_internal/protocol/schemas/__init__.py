"""Wire schemas of the KIP-848 APIs that kafka-python does not ship, in the JSON form its message classes
load (``ApiMessage`` subclasses declared with ``load_json=`` this package).

Written for this project from the fields Apache Kafka 4.1.0's own message classes serialize (names, types,
versions, nullability, defaults): protocol facts, one request and one response file per API. The modules
that use them - ``consumer_group_heartbeat.py`` and ``consumer_group_describe.py`` beside this package -
say what the fields mean; :func:`message_class` makes a class of a file.

What it may import: kafka-python's ``ApiMessage`` and the standard library, nothing of txnproducer.
"""

from __future__ import annotations

import types
from typing import Any

from kafka.protocol.api_message import ApiMessage

__all__ = ["message_class"]


def message_class(name: str, module: str) -> Any:
    """kafka-python's message class ``name`` (request or response) from this package's ``<name>.json``, as if
    declared ``class <name>(ApiMessage, load_json=...)`` in ``module``: versioned with ``Cls[v]``, encoded,
    decoded and registered for response lookup like kafka-python's own."""

    def body(namespace: dict[str, Any]) -> None:
        namespace["__module__"] = module

    return types.new_class(name, (ApiMessage,), {"load_json": __name__}, body)
