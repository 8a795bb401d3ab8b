"""Kafka protocol primitive types: varints, int16 and compact strings, tagged fields.

Why a module of its own: the Produce codec, the request framing of the Sender's own connection
and the MockCluster's request parser all read and write the same few primitives. They follow
Kafka's ``ByteUtils`` and the message-format rules of ``clients/src/main/resources/common/message``:
unsigned varints (at most 5 bytes for a 32-bit value), int16-length strings (-1 = null), compact
strings and arrays (unsigned varint of length + 1, 0 = null), and tagged-field sections (a count,
then tag, size and bytes per field; readers skip tags they do not know).

Readers take ``(data, pos)`` and return ``(value, new_pos)``; they raise ``IndexError`` (past the
end) or ``ValueError`` (malformed) so that callers can turn either into their own error.
"""

from __future__ import annotations

import struct
from typing import Any

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")

_NULL_STRING16 = b"\xff\xff"
#: ``uvarint(n)`` for 0 <= n < 128, precomputed (array lengths and short strings).
UVARINT_1 = [bytes((i,)) for i in range(0x80)]


def uvarint(value: int) -> bytes:
    """Unsigned varint (Kafka's ``writeUnsignedVarint``) of 0 <= value < 2**32."""
    if value < 0x80:
        return UVARINT_1[value]
    if value < 0x4000:
        return bytes((value & 0x7F | 0x80, value >> 7))
    if value < 0x200000:
        return bytes((value & 0x7F | 0x80, (value >> 7) & 0x7F | 0x80, value >> 14))
    if value >= 1 << 32:
        raise ValueError(f"length {value} does not fit an unsigned varint32")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def string16(value: str | None, what: str) -> bytes:
    """An int16-length string (null: length -1); ``what`` names the field in the error."""
    if value is None:
        return _NULL_STRING16
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"{what} is {len(raw)} bytes, longer than an int16 string allows")
    return I16.pack(len(raw)) + raw


def compact_string(value: str | None) -> bytes:
    """A nullable compact string: unsigned varint of length + 1 (0 = null), then the UTF-8 bytes."""
    if value is None:
        return b"\x00"
    raw = value.encode("utf-8")
    return uvarint(len(raw) + 1) + raw


# Encoded client ids, transactional ids and topic names: a producer uses few, so the encoders below
# cache them (bounded: cleared when full). Values are never empty, so ``cache.get(s) or fill(s)``
# works; the dicts are module-level so that a hot path can read them without a call.
_CACHE_MAX = 4096
STRING16_CACHE: dict[str | None, bytes] = {}
COMPACT_CACHE: dict[str | None, bytes] = {}


def cached_string16(value: str | None) -> bytes:
    """``string16(value)``, remembered in ``STRING16_CACHE``."""
    encoded = string16(value, "string")
    if len(STRING16_CACHE) >= _CACHE_MAX:
        STRING16_CACHE.clear()
    STRING16_CACHE[value] = encoded
    return encoded


def cached_compact_string(value: str | None) -> bytes:
    """``compact_string(value)``, remembered in ``COMPACT_CACHE``."""
    encoded = compact_string(value)
    if len(COMPACT_CACHE) >= _CACHE_MAX:
        COMPACT_CACHE.clear()
    COMPACT_CACHE[value] = encoded
    return encoded


def check_count(count: int, pos: int, end: int, min_item: int) -> None:
    """Refuse an array length the remaining bytes cannot hold (before looping over it)."""
    if count < 0 or pos + count * min_item > end:
        raise ValueError(f"bad array length {count} at offset {pos}")


def string_at(data: Any, pos: int, end: int, length: int) -> tuple[str, int]:
    """The ``length`` >= 0 bytes at ``pos`` as UTF-8 text."""
    stop = pos + length
    if stop > end:
        raise ValueError(f"string of {length} bytes runs past the end at offset {pos}")
    return str(data[pos:stop], "utf-8"), stop


def read_uvarint(data: Any, pos: int) -> tuple[int, int]:
    """Unsigned varint32 at ``pos`` (IndexError past the end, ValueError when longer than 5 bytes)."""
    value = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ValueError(f"unsigned varint longer than 5 bytes at offset {pos - 5}")


def skip_tagged_fields(data: Any, pos: int, end: int) -> int:
    """Skip a tagged-field section: every field by its size, whatever its tag."""
    if data[pos] == 0:
        return pos + 1
    count, pos = read_uvarint(data, pos)
    check_count(count, pos, end, 2)
    for _ in range(count):
        _tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        pos += size
        if pos > end:
            raise ValueError(f"tagged field of {size} bytes runs past the end")
    return pos


def compact_string_at(data: Any, pos: int, end: int) -> tuple[str | None, int]:
    """A nullable compact string (length + 1 as a varint, 0 = null)."""
    length, pos = read_uvarint(data, pos)
    if length == 0:
        return None, pos
    return string_at(data, pos, end, length - 1)


def compact_count(data: Any, pos: int, end: int, min_item: int) -> tuple[int, int]:
    """A compact array length (null, encoded 0, reads as empty)."""
    count, pos = read_uvarint(data, pos)
    if count == 0:
        return 0, pos
    check_count(count - 1, pos, end, min_item)
    return count - 1, pos
