# Type stub of the compiled record decoder (_decode.c);
# txnproducer/_internal/fetch/decoder.py is the reference.
from collections.abc import Callable, Sequence
from typing import Any

def decode(
    data: Any,
    fetch_offset: int,
    aborted: Sequence[tuple[int, int]] | None,
    topic: str,
    partition: int,
    columns: bool,
    /,
) -> tuple[Any, int, int, int, str | None]: ...
def configure(
    record_type: type,
    decompress: Callable[[int, bytes], bytes],
    no_headers: Any,
    codec_error: type[BaseException] | None = None,
    column_limit: int = 2**31 - 1,
) -> None: ...
def crc_implementation() -> str: ...
