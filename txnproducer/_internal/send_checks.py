"""send()'s arguments, checked and converted once, before anything is queued, for both hot paths.

Why one module: a record must get the same answer whichever path runs. The compiled send path
(``accel/_speedups.c`` ``SendPath``) takes only records that need no check beyond its own type tests
(a non-empty ``str`` topic already in the partition cache, exact ``bytes`` or ``None`` key and value
with the default serializers, an exact ``int`` timestamp in range, no partition, no headers) and
hands every other record, unchanged, to ``TransactionalProducer.send``, which checks it here. So
every input is either accepted with the same bytes on both paths or refused by the same typed
error, class and message, with nothing queued.

What comes out is what the record encoders (``protocol/record_batch.py`` and its compiled twin)
rely on without checking again:

* keys, values and header values are ``bytes``, ``bytearray`` or a one-dimensional memoryview of
  format ``"B"``, so ``len()`` counts bytes. A memoryview of ``array("i", [1, 2, 3])`` has ``len``
  3 for 12 bytes: the pure-Python encoder once wrote 3 as the value's length before its 12 bytes,
  a record the batch's CRC then vouched for and every consumer of the partition failed on. Any
  other ``bytes``/``bytearray`` subclass is read through a memoryview too (its ``__len__`` is not
  trusted); a buffer that is not C-contiguous is refused (``bytes(view)`` copies it).
* timestamps are ints in 0 .. 2**63 - 1 (Kafka's int64 milliseconds; the batch header's field):
  ``timestamp_ms=2**70`` was once accepted and stopped the Sender thread when its batch was built.
* explicit partitions are plain ints naming one of the topic's partitions.
* header names are ``str`` that UTF-8 can encode (a lone surrogate cannot).

What it may import: ``txnproducer.errors`` and the partitioner (a leaf the producer facade uses).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from txnproducer import errors
from txnproducer._internal.partitioner import known_partition

__all__ = ["MAX_TIMESTAMP", "RecordBytes", "check_headers", "check_partition", "check_timestamp",
           "default_serialize", "serialize"]

#: What the encoders take for a key, a value or a header value.
RecordBytes = bytes | bytearray | memoryview

#: Kafka timestamps are int64 milliseconds; the Java client refuses negative ones.
MAX_TIMESTAMP = 2**63 - 1

_BUFFERS = (bytes, bytearray, memoryview)


def default_serialize(data: Any) -> Any:
    """The serializer when none is configured: bytes-like objects as they are, str as UTF-8."""
    if data is None or isinstance(data, _BUFFERS):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    raise TypeError(f"got {type(data).__name__}; pass bytes or str, or configure a serializer")


def _as_bytes(data: Any) -> RecordBytes:
    """``data`` (bytes-like) as something whose ``len()`` is its size in bytes; raises ValueError
    with the reason when its buffer cannot be read as one run of bytes."""
    cls = type(data)
    if cls is bytes or cls is bytearray:
        return data  # type: ignore[no-any-return]
    try:
        # our own view (an export of the buffer): the caller cannot release it under us
        view = memoryview(data)
    except (TypeError, ValueError, BufferError) as exc:
        raise ValueError(str(exc)) from None
    if not view.c_contiguous:
        raise ValueError(f"its buffer is not C-contiguous ({view.ndim}-dimensional, strides "
                         f"{view.strides}); pass bytes(view) or a contiguous copy")
    return view.cast("B") if view.ndim != 1 or view.format != "B" else view


def serialize(serializer: Callable[[Any], Any], data: Any, what: str, topic: str) -> RecordBytes | None:
    """``serializer(data)`` checked: bytes-like (as :func:`_as_bytes` gives it) or None, else
    SerializationError (also for a serializer that raised) naming ``what`` and ``topic``."""
    if data is None:
        return None
    try:
        out = serializer(data)
    except Exception as exc:
        raise errors.SerializationError(f"could not serialize {what} for topic {topic!r}: {exc}") from exc
    if out is None:
        return None
    if not isinstance(out, _BUFFERS):
        raise errors.SerializationError(
            f"{what} serializer returned {type(out).__name__} for topic {topic!r}; it must return bytes")
    try:
        return _as_bytes(out)
    except ValueError as exc:
        raise errors.SerializationError(
            f"{what} for topic {topic!r} cannot be read as bytes: {exc}") from None


def check_timestamp(timestamp_ms: Any) -> int:
    """A record's ``timestamp_ms`` (not None) as a plain int, or InvalidRecordError."""
    if type(timestamp_ms) is not int:
        if isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, int):
            raise errors.InvalidRecordError(
                f"timestamp_ms must be an int in 0..{MAX_TIMESTAMP} (milliseconds since the epoch) or "
                f"None, got {type(timestamp_ms).__name__} {timestamp_ms!r}")
        timestamp_ms = int.__int__(timestamp_ms)  # a plain int: a subclass may compare as it likes
    if not 0 <= timestamp_ms <= MAX_TIMESTAMP:
        raise errors.InvalidRecordError(
            f"timestamp_ms must be an int in 0..{MAX_TIMESTAMP} (milliseconds since the epoch) or "
            f"None, got {timestamp_ms}")
    return timestamp_ms  # type: ignore[no-any-return]


def check_partition(topic: str, parts: list[int], partition: Any) -> int:
    """An explicit ``partition`` as a plain int that is one of ``parts``, or InvalidRecordError."""
    if isinstance(partition, int) and not isinstance(partition, bool):
        if type(partition) is not int:
            partition = int.__int__(partition)  # a plain int: a subclass may compare as it likes
        if known_partition(parts, partition):
            return partition  # type: ignore[no-any-return]
    raise errors.InvalidRecordError(
        f"partition {partition!r} does not exist in topic {topic!r} (partitions 0..{len(parts) - 1})")


def check_headers(headers: Any) -> list[tuple[str, RecordBytes | None]]:
    """``headers`` (a mapping, or an iterable of (name, value) pairs) as a list of (str, bytes-like
    or None) pairs; str values are encoded as UTF-8. InvalidRecordError names what is wrong."""
    if isinstance(headers, Mapping):
        items: Any = headers.items()
    elif isinstance(headers, (str, *_BUFFERS)):
        raise errors.InvalidRecordError(
            f"headers must be a mapping or a sequence of (str, bytes) pairs, got {type(headers).__name__}")
    else:
        items = headers
    try:
        iterator = iter(items)
    except TypeError:
        raise errors.InvalidRecordError(
            f"headers must be a mapping or a sequence of (str, bytes) pairs, got "
            f"{type(headers).__name__}") from None
    out: list[tuple[str, RecordBytes | None]] = []
    for item in iterator:
        if isinstance(item, (str, *_BUFFERS)):  # would unpack into two characters or two ints
            raise errors.InvalidRecordError(f"headers must be (str, bytes) pairs, got {item!r}")
        try:
            name, val = item
        except (TypeError, ValueError):
            raise errors.InvalidRecordError(f"headers must be (str, bytes) pairs, got {item!r}") from None
        if not isinstance(name, str):
            raise errors.InvalidRecordError(f"header names must be str, got {name!r}")
        if type(name) is not str:
            name = str.__str__(name)  # a plain str: the encoder calls its encode()
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise errors.InvalidRecordError(
                f"header name {name!r} cannot be encoded as UTF-8: {exc.reason}") from None
        out.append((name, _header_value(name, val)))
    return out


def _header_value(name: str, val: Any) -> RecordBytes | None:
    if val is None:
        return None
    if isinstance(val, str):
        try:
            return str.encode(val, "utf-8")  # str's own: a subclass's encode() may return anything
        except UnicodeEncodeError as exc:
            raise errors.InvalidRecordError(
                f"header {name!r} value cannot be encoded as UTF-8: {exc.reason}") from None
    if not isinstance(val, _BUFFERS):
        raise errors.InvalidRecordError(f"header {name!r} value must be bytes, str or None, got {val!r}")
    try:
        return _as_bytes(val)
    except ValueError as exc:
        raise errors.InvalidRecordError(f"header {name!r} value cannot be read as bytes: {exc}") from None
