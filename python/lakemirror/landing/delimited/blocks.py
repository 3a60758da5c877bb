"""The adjusted text handed to pyarrow.csv as a file that it reads in blocks, on threads of
its own, and let go of when the reading closes."""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable, Generator

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv

_RELEASE_SECONDS = 60  # pyarrow lets go of a file it was reading at once: this is a safeguard


class _Stopped(Exception):
    """The text is read no further."""


class Blocks:
    """Pieces of text as a file that pyarrow.csv reads in blocks, on threads of its own.

    Each block is copied into Arrow's memory: as short-lived Python objects of megabytes, the
    blocks would fragment the heap and keep a few hundred megabytes of it. pyarrow drops the LF
    that starts a block after a block that ends in CR, even inside a quoted value
    (apache/arrow#51368), so such a block ends one byte early.
    """

    closed = False

    def __init__(self, pieces: Generator[bytes, None, None], *, first: int) -> None:
        self._pieces = pieces
        self._queue: deque[bytes] = deque()
        self._queued = 0  # bytes in the queue
        self._ended = False
        self._first = first  # the first block holds the header row: pyarrow reads it from there
        self._lock = threading.Lock()
        self._stopped = False

    def stop(self) -> None:
        """Close the file: later reads fail, so that the reader stops instead of parsing a text
        cut short."""
        with self._lock:
            self._stopped = True
            self._pieces.close()

    def read(self, size: int = -1) -> pa.Buffer:
        with self._lock:
            if self._stopped:
                raise _Stopped
            return self._block(size)

    def _block(self, size: int) -> pa.Buffer:
        size, self._first = (max(size, self._first) if size >= 0 else size), 0
        while not self._ended and (size < 0 or self._queued <= size):  # a byte past the block
            piece = next(self._pieces, None)
            self._ended = piece is None
            if piece:
                self._queue.append(piece)
                self._queued += len(piece)
        end = self._queued if size < 0 else min(size, self._queued)
        if 1 < end < self._queued and self._byte(end - 1) == 13 and self._byte(end) == 10:
            end -= 1
        block = pa.allocate_buffer(end)
        octets = np.frombuffer(block, np.uint8)
        filled = 0
        while filled < end:
            piece = self._queue.popleft()
            if filled + len(piece) > end:
                self._queue.appendleft(piece[end - filled:])
                piece = piece[:end - filled]
            octets[filled:filled + len(piece)] = np.frombuffer(piece, np.uint8)
            filled += len(piece)
        self._queued -= end
        return block

    def _byte(self, index: int) -> int:
        for piece in self._queue:
            if index < len(piece):
                return piece[index]
            index -= len(piece)
        raise IndexError(index)


class _File:
    """The file pyarrow reads: only pyarrow holds it, so it is gone once pyarrow let go of it."""

    __slots__ = ("read", "closed", "__weakref__")

    def __init__(self, read: Callable[[int], pa.Buffer]) -> None:
        self.read = read
        self.closed = False


class CsvReader:
    """pyarrow.csv reading blocks, which its threads read ahead; closed, it has let go of them.

    A read ahead still pending when Python exits hangs the process (apache/arrow#43604,
    apache/arrow#50482), so closing stops the blocks, drops the reader (which waits for its
    reads without the GIL) and waits until pyarrow no longer holds the file.
    """

    def __init__(self, blocks: Blocks, read_options: pv.ReadOptions,
                 parse_options: pv.ParseOptions, convert_options: pv.ConvertOptions) -> None:
        self._blocks = blocks
        self._released = threading.Event()
        files = [_File(blocks.read)]  # no frame of an error's traceback may hold it
        self._file = weakref.ref(files[0], lambda file: self._released.set())
        self._reader: pv.CSVStreamingReader | None = None
        try:
            self._reader = pv.open_csv(files.pop(), read_options=read_options,
                                       parse_options=parse_options,
                                       convert_options=convert_options)
        except BaseException:
            self.close()
            raise

    def next_batch(self) -> pa.RecordBatch | None:
        assert self._reader is not None
        try:
            return self._reader.read_next_batch()
        except StopIteration:
            return None

    def close(self) -> None:
        self._blocks.stop()
        self._reader = None
        self._released.wait(_RELEASE_SECONDS)
