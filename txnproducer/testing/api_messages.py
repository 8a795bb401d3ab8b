"""kafka-python protocol classes by API key, and building responses from plain dicts.

kafka-python 3 has one request and one response class per API (versioned by ``Cls[v]``) but no
lookup by API key on the request side (the KIP-848 APIs it lacks come from ``_internal.protocol``);
the server needs one to decode what arrives. ``build`` turns nested dicts into the nested DataContainer
objects, which keeps handler code short and readable.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import kafka.protocol as _protocol
from kafka.protocol.api_message import ApiMessage

# the KIP-848 messages kafka-python lacks: defined (on its ApiMessage) in our protocol room; imported here so
# that the scan below finds them
from txnproducer._internal.protocol import consumer_group_describe as _describe  # noqa: F401
from txnproducer._internal.protocol import consumer_group_heartbeat as _heartbeat  # noqa: F401

_REQUESTS: dict[int, Any] = {}
_RESPONSES: dict[int, Any] = {}


def _subclasses(cls: Any) -> list[Any]:
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_subclasses(sub))
    return out


def _load() -> None:
    for mod in pkgutil.walk_packages(_protocol.__path__, "kafka.protocol."):
        if any(part in mod.name for part in (".old", ".schemas", "generate_stubs")):
            continue
        try:
            importlib.import_module(mod.name)
        except Exception:  # pragma: no cover - a module we do not need failed to import
            continue
    for cls in _subclasses(ApiMessage):
        if getattr(cls, "_class_version", None) is not None or cls._json is None:
            continue
        table = _REQUESTS if cls.type == "request" else _RESPONSES
        table.setdefault(cls.API_KEY, cls)


_load()


def request_class(api_key: int) -> Any | None:
    return _REQUESTS.get(api_key)


def response_class(api_key: int) -> Any | None:
    return _RESPONSES.get(api_key)


def api_name(api_key: int) -> str:
    cls = _REQUESTS.get(api_key)
    if cls is None:
        return f"Api{api_key}"
    name: str = cls.name
    return name[: -len("Request")] if name.endswith("Request") else name


def api_key_of(name_or_key: int | str) -> int:
    """Accept 0, "Produce" or "ProduceRequest"; raise ValueError for an unknown API."""
    if isinstance(name_or_key, int):
        return name_or_key
    wanted = name_or_key.removesuffix("Request").lower()
    for key in _REQUESTS:
        if api_name(key).lower() == wanted:
            return key
    raise ValueError(f"unknown Kafka API {name_or_key!r}")


def _convert(container_cls: Any, values: dict[str, Any], version: int | None) -> Any:
    fields = container_cls._struct.fields
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        field = fields.get(name)
        if field is None:
            raise ValueError(f"{container_cls.__name__} has no field {name!r}")
        if value is not None and field.is_struct_array():
            value = [_convert(field.data_class, v, None) if isinstance(v, dict) else v for v in value]
        elif value is not None and field.is_struct() and isinstance(value, dict):
            value = _convert(field.data_class, value, None)
        kwargs[name] = value
    if version is None:
        return container_cls(**kwargs)
    return container_cls(version=version, **kwargs)


def build(message_cls: Any, version: int, values: dict[str, Any]) -> Any:
    """``message_cls`` (e.g. ProduceResponse) at ``version`` from nested dicts (fields left out get defaults).

    Fields that do not exist in ``version`` are dropped, so one dict can serve several versions.
    """
    base = message_cls[None] if getattr(message_cls, "_class_version", None) is not None else message_cls
    return _convert(base, _prune(base, values, version), version)


def _prune(container_cls: Any, values: dict[str, Any], version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    fields = container_cls._struct.fields
    for name, value in values.items():
        field = fields.get(name)
        if field is None:
            raise ValueError(f"{container_cls.__name__} has no field {name!r}")
        if not field.for_version_q(version):
            continue
        if value is not None and field.is_struct_array():
            value = [_prune(field.data_class, v, version) if isinstance(v, dict) else v for v in value]
        elif value is not None and field.is_struct() and isinstance(value, dict):
            value = _prune(field.data_class, value, version)
        out[name] = value
    return out


def has_field(message_cls: Any, name: str, version: int) -> bool:
    field = message_cls._struct.fields.get(name)
    return field is not None and bool(field.for_version_q(version))
