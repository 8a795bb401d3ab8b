# Type stub of the compiled Produce codec (_produce.c); txnproducer/_internal/protocol/produce_request.py
# and produce_response.py are the reference.
import uuid
from collections.abc import Callable, Sequence
from typing import Any

def encode_frame(
    version: int,
    correlation_id: int,
    header_tail: bytes,
    transactional_id: str | None,
    acks: int,
    timeout_ms: int,
    topic_data: Sequence[Any],
    /,
) -> bytes | None: ...
def decode_response(data: Any, pos: int, version: int, /) -> Any | None: ...
def configure(
    partition_type: type,
    topic_type: type,
    response_type: type,
    topic_ids: dict[bytes, uuid.UUID],
    make_topic_id: Callable[[bytes], uuid.UUID],
    uuid_type: type,
    /,
) -> None: ...
