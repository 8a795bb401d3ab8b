"""Hand-written EndTxn (key 26) request and response, v0-v5.

Why: every transaction ends with one EndTxn, and a one-record transaction is little more than its
Produce and its EndTxn. Built, encoded and decoded with kafka-python's generic classes
(``kafka.protocol.producer.transaction``) it took about 65 Python calls per transaction on the
Sender thread, under the GIL; its fields are four fixed values, so the body is one ``struct``
pack after the transactional id, and the answer one ``struct`` unpack. The Sender's framing
(:mod:`.framing`) writes the header; the answer's header is read there too.

kafka-python's classes remain the reference: ``tests/unit/test_end_txn_codec.py`` checks that the
request bytes are identical to its for every version and that its encoded answers decode to the
same values.

Wire format (Kafka's ``EndTxnRequest.json`` / ``EndTxnResponse.json``): transactional id (int16
string; compact from v3), producer id int64, producer epoch int16, committed bool; v3+ are
flexible (request header v2, an empty tagged-field section after the body). The answer: throttle
time int32, error code int16, and from v5 the producer id int64 and epoch int16 to use next
(KIP-890 part 2), then tagged fields (v3+), which are skipped.
"""

from __future__ import annotations

import struct
from typing import Any

from .primitives import COMPACT_CACHE as _COMPACT
from .primitives import STRING16_CACHE as _STRING16
from .primitives import cached_compact_string, cached_string16

__all__ = ["END_TXN_API_KEY", "EndTxnRequestData", "EndTxnResponseData", "EndTxnResponseType"]

END_TXN_API_KEY = 26
MIN_VERSION = 0
MAX_VERSION = 5
FIRST_FLEXIBLE = 3
FIRST_WITH_PRODUCER = 5  # the answer carries the producer id and epoch to use next

_BODY = struct.Struct(">qh?")  # producer id, producer epoch, committed
_ANSWER = struct.Struct(">ih")  # throttle time, error code
_ANSWER_V5 = struct.Struct(">ihqh")  # + producer id, producer epoch


def _check_version(version: int) -> None:
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"EndTxn v{version} is not a version of EndTxn (v{MIN_VERSION}-v{MAX_VERSION})")


class EndTxnResponseData:
    """A decoded EndTxn answer (``producer_id`` and ``producer_epoch`` are -1 before v5)."""

    __slots__ = ("API_VERSION", "error_code", "producer_epoch", "producer_id", "throttle_time_ms")

    API_KEY = END_TXN_API_KEY

    def __init__(self, version: int, throttle_time_ms: int, error_code: int, producer_id: int = -1,
                 producer_epoch: int = -1) -> None:
        self.API_VERSION = version
        self.throttle_time_ms = throttle_time_ms
        self.error_code = error_code
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch

    def __repr__(self) -> str:
        return (f"EndTxnResponse[v{self.API_VERSION}](throttle_time_ms={self.throttle_time_ms}, "
                f"error_code={self.error_code}, producer_id={self.producer_id}, "
                f"producer_epoch={self.producer_epoch})")


class EndTxnResponseType:
    """The response class of one version: ``decode`` reads the body of a frame positioned after its
    header (what :func:`.framing.read_response_header` leaves). Truncated data raises
    ``struct.error``, which the connection turns into a lost stream."""

    __slots__ = ("API_VERSION",)

    API_KEY = END_TXN_API_KEY

    def __init__(self, version: int) -> None:
        _check_version(version)
        self.API_VERSION = version

    def decode(self, data: Any) -> EndTxnResponseData:
        pos = data.tell()
        version = self.API_VERSION
        if version >= FIRST_WITH_PRODUCER:
            throttle, code, producer_id, epoch = _ANSWER_V5.unpack_from(data, pos)
            answer = EndTxnResponseData(version, throttle, code, producer_id, epoch)
        else:
            throttle, code = _ANSWER.unpack_from(data, pos)
            answer = EndTxnResponseData(version, throttle, code)
        data.seek(len(data))  # the rest is the tagged-field section (v3+): nothing we read
        return answer

    def __repr__(self) -> str:
        return f"EndTxnResponse[v{self.API_VERSION}]"


_RESPONSE_TYPES = tuple(EndTxnResponseType(v) for v in range(MIN_VERSION, MAX_VERSION + 1))


class EndTxnRequestData:
    """An EndTxn request the Sender's connection frames itself (:class:`.framing.RequestFramer`)."""

    __slots__ = ("API_VERSION", "committed", "producer_epoch", "producer_id", "transactional_id")

    API_KEY = END_TXN_API_KEY
    # the range ``txn.versions.choose_version`` caps the chosen version to
    min_version = MIN_VERSION
    max_version = MAX_VERSION

    def __init__(self, *, version: int, transactional_id: str, producer_id: int, producer_epoch: int,
                 committed: bool) -> None:
        _check_version(version)
        self.API_VERSION = version
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.committed = committed

    @property
    def version(self) -> int:
        """The version, under kafka-python's name for it."""
        return self.API_VERSION

    @property
    def flexible(self) -> bool:
        return self.API_VERSION >= FIRST_FLEXIBLE

    @property
    def response_type(self) -> EndTxnResponseType:
        return _RESPONSE_TYPES[self.API_VERSION]

    def expect_response(self) -> bool:
        return True

    def encode_body(self) -> bytes:
        """The request body (after the request header)."""
        tid = self.transactional_id
        fields = _BODY.pack(self.producer_id, self.producer_epoch, self.committed)
        if self.API_VERSION >= FIRST_FLEXIBLE:
            return b"".join((_COMPACT.get(tid) or cached_compact_string(tid), fields, b"\x00"))
        return (_STRING16.get(tid) or cached_string16(tid)) + fields

    def to_dict(self) -> dict[str, Any]:
        """The fields by Kafka's names, as kafka-python's ``to_dict`` (and the recorded conformance
        exchanges) name them."""
        return {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "committed": self.committed}

    def __repr__(self) -> str:
        return (f"EndTxnRequest[v{self.API_VERSION}](transactional_id={self.transactional_id!r}, "
                f"producer_id={self.producer_id}, producer_epoch={self.producer_epoch}, "
                f"committed={self.committed})")
