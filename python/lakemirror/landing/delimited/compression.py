"""A file's bytes, decompressed as its name says and streamed in pieces, within the most text
one delimited-text file may hold."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import PurePath

import pyarrow as pa

from lakemirror.landing.delimited.errors import FileErrors
from lakemirror.landing.zone_door import ZoneDoor, ZoneFile, chunks
from lakemirror.environment import DEFAULT_MAX_TEXT_BYTES

COMPRESSION_SUFFIXES = (".gz", ".zst", ".snappy")
TEXT_CHUNK = 1 << 20  # decompressed bytes that are decoded and adjusted at a time
_ARROW_CODECS = {".gz": "gzip", ".zst": "zstd"}
_SNAPPY_STREAM = b"\xff\x06\x00\x00sNaPpY"  # the framing format's stream identifier chunk


def raw_bytes(zone: ZoneDoor, path: PurePath, errors: FileErrors, *,
              limit: int = DEFAULT_MAX_TEXT_BYTES) -> Generator[bytes, None, None]:
    """The file's bytes from the start, decompressed as its name says, in pieces of at most
    TEXT_CHUNK; more than `limit` of them (LAKEMIRROR_MAX_TEXT_BYTES) fail the table."""
    import cramjam

    suffix = path.suffix.lower()
    compressed = suffix in COMPRESSION_SUFFIXES
    read = 0
    with zone.open(path) as handle:
        if not compressed and handle.size > limit:
            raise errors.too_large(limit, compressed)
        try:
            for piece in _decompressing(handle, suffix):
                read += len(piece)
                if read > limit:
                    raise errors.too_large(limit, compressed)
                for start in range(0, len(piece), TEXT_CHUNK):
                    yield piece[start:start + TEXT_CHUNK] if TEXT_CHUNK < len(piece) else piece
        except (OSError, pa.ArrowException, cramjam.DecompressionError) as error:
            raise errors.unreadable(error) from error


def _decompressing(handle: ZoneFile, suffix: str) -> Iterator[bytes]:
    """The file's bytes, decompressed piece by piece as its name says."""
    if suffix == ".snappy":
        yield from _unsnappy(handle)
    elif suffix in _ARROW_CODECS:
        with pa.CompressedInputStream(handle, _ARROW_CODECS[suffix]) as stream:
            yield from chunks(stream)
    else:
        yield from chunks(handle)


def _unsnappy(handle: ZoneFile) -> Iterator[bytes]:
    """Snappy framing format, decompressed a run of whole chunks at a time (each run led by the
    stream identifier, which the format allows to repeat)."""
    import cramjam

    pending = bytearray()
    for piece in chunks(handle):
        pending += piece
        end = _whole_chunks(pending)
        if end:
            yield bytes(cramjam.snappy.decompress(_SNAPPY_STREAM + pending[:end]))
            del pending[:end]
    if pending:  # a truncated chunk: let the decompressor say so
        yield bytes(cramjam.snappy.decompress(_SNAPPY_STREAM + pending))


def _whole_chunks(data: bytearray) -> int:
    """The length of the leading run of whole chunks (type byte, 24-bit length, body)."""
    end = 0
    while end + 4 <= len(data):
        following = end + 4 + int.from_bytes(data[end + 1:end + 4], "little")
        if following > len(data):
            break
        end = following
    return end
