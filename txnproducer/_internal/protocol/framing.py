"""Request headers and frames, and response headers, for the Sender's own connection.

Why: kafka-python writes and reads the request/response header with its generic schema machinery
(``ApiHeader.encode`` / ``decode`` through ``DataContainer``). For the small transactional
requests that is most of the cost of a request (profiles in ``benchmarks/README.md``). A header
is four fixed fields and, for flexible versions, an empty tagged-field section, so it is written
and read here with ``struct``; the request and response bodies stay kafka-python's, except those
of our own codecs: Produce's (which builds its whole frame from the header's tail kept here, compiled
when built: :meth:`.produce_request.ProduceRequestData.encode_frame`) and EndTxn's (:mod:`.end_txn`,
whose body is framed here).

``tests/unit/test_framing.py`` checks that the frames are byte-identical to kafka-python's
``encode(framed=True, header=True)`` and that the answers decode to the same values.

Exceptions, left to kafka-python's own header code: other requests that are not kafka-python
``ApiMessage`` objects (they frame themselves), and ApiVersions, whose response header is v0
whatever the version (KIP-511).
"""

from __future__ import annotations

import struct
from typing import Any

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.frame import KafkaBytes

from .end_txn import EndTxnRequestData
from .primitives import skip_tagged_fields, string16
from .produce_request import ProduceRequestData
from .produce_response import response_type as _produce_response_type
from .produce_versions import FIRST_FLEXIBLE as _PRODUCE_FIRST_FLEXIBLE
from .response_classes import response_class as _response_class

__all__ = ["RequestFramer", "read_response_header"]

_API_VERSIONS = 18
_FRAME_AND_HEADER = struct.Struct(">ihhi")  # frame size, api key, api version, correlation id
_I32 = struct.Struct(">i")


class RequestFramer:
    """Frames requests for one client id; remembers each (request class, version)'s response
    class and header flexibility."""

    def __init__(self, client_id: str) -> None:
        self._client_id = client_id
        self._client_id16 = string16(client_id, "client_id")
        self._tails = (self._client_id16, self._client_id16 + b"\x00")  # + empty tagged fields
        self._known: dict[tuple[type, int], tuple[Any, bool, int]] = {}

    def frame(self, request: Any, correlation_id: int) -> tuple[bytes, Any, bool | None]:
        """The framed request, its response class, and whether the response header is flexible
        (None: the response class parses its own header)."""
        if type(request) is EndTxnRequestData:  # our codec's body; its response_type decodes the answer
            flexible = request.flexible
            body = request.encode_body()
            tail = self._tails[flexible]
            head = _FRAME_AND_HEADER.pack(8 + len(tail) + len(body), request.API_KEY, request.API_VERSION,
                                          correlation_id)
            return b"".join((head, tail, body)), request.response_type, flexible
        if type(request) is ProduceRequestData:  # our codec frames it (compiled when built): no header object
            version = request.API_VERSION
            flexible = version >= _PRODUCE_FIRST_FLEXIBLE
            frame = request.encode_frame(correlation_id, self._tails[flexible])
            return frame, _produce_response_type(version), flexible
        if not isinstance(request, ApiMessage) or request.API_KEY == _API_VERSIONS:
            request.with_header(correlation_id=correlation_id, client_id=self._client_id)
            data = request.encode(framed=True, header=True)
            return data, _response_class(request), None
        version = request.API_VERSION
        key = (type(request), version)
        known = self._known.get(key)
        if known is None:
            # (not request.header.get_response_class(): kafka-python's registry can lose a class to a race)
            known = (_response_class(request), bool(request.flexible_version_q(version)), request.API_KEY)
            self._known[key] = known
        response_class, flexible, api_key = known
        body = request.encode()
        tail = self._tails[flexible]
        head = _FRAME_AND_HEADER.pack(8 + len(tail) + len(body), api_key, version, correlation_id)
        return b"".join((head, tail, body)), response_class, flexible


def read_response_header(frame: KafkaBytes, flexible: bool) -> int:
    """The correlation id of a response frame (without its size prefix); leaves ``frame``
    positioned at the body. Raises ValueError or struct.error when truncated."""
    (correlation_id,) = _I32.unpack_from(frame, 0)
    pos = 4
    if flexible:
        try:
            pos = skip_tagged_fields(frame, pos, len(frame))
        except IndexError as exc:
            raise ValueError("truncated response header") from exc
    frame.seek(pos)
    return int(correlation_id)
