"""Produce an iterator's items on a background thread, a few ahead of the one consuming them.

Staging reads, validates and conforms a change file's batches while the previous batches are
written: pyarrow releases the GIL while it decodes and encodes, so reading and writing overlap
on two cores. Memory stays bounded: the producer starts an item only while fewer than `ahead`
produced items wait, so at most `ahead` items are ahead of the one being consumed. Staging goes
one batch ahead: it held the same peak memory as reading and writing in turn (staging a 2 GB
file), where two ahead held one batch more (some 30 MB) for little more speed. An exception raised by the producer is raised, as it was
raised, in the consumer when it reaches that item; leaving the `read_ahead` block (at the end,
on an error, or early) stops the producer after the item it is producing, closes the source
iterator in its thread and joins it, so no thread outlives the block.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

Item = TypeVar("Item")
AHEAD = 1  # items produced (or being produced) before the consumer takes them


class _Channel(Generic[Item]):
    """The items produced and not yet taken, and how the producer ended."""

    def __init__(self, ahead: int) -> None:
        self.ahead = ahead
        self.items: deque[Item] = deque()
        self.changed = threading.Condition()
        self.finished = False  # the producer ended (its error, if any, in `error`)
        self.error: BaseException | None = None
        self.abandoned = False  # the consumer left: produce no more

    def produce(self, source: Iterable[Item]) -> None:
        iterator = iter(source)
        try:
            try:
                while self._room():
                    try:
                        item = next(iterator)
                    except StopIteration:
                        return
                    with self.changed:
                        self.items.append(item)
                        self.changed.notify_all()
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:  # a generator's cleanup runs in the thread that ran it
                    close()
        except BaseException as error:  # raised in the consumer instead
            self.error = error
        finally:
            with self.changed:
                self.finished = True
                self.changed.notify_all()

    def _room(self) -> bool:
        """Wait until fewer than `ahead` items wait to be taken; False when the consumer left."""
        with self.changed:
            self.changed.wait_for(lambda: len(self.items) < self.ahead or self.abandoned)
            return not self.abandoned

    def consume(self) -> Iterator[Item]:
        while True:
            with self.changed:
                self.changed.wait_for(lambda: bool(self.items) or self.finished)
                if not self.items:
                    if self.error is not None:
                        raise self.error
                    return
                item = self.items.popleft()
                self.changed.notify_all()
            yield item

    def abandon(self) -> None:
        with self.changed:
            self.abandoned = True
            self.items.clear()
            self.changed.notify_all()


@contextmanager
def read_ahead(source: Iterable[Item], *, ahead: int = AHEAD) -> Iterator[Iterator[Item]]:
    """`source`'s items, produced on a thread of their own up to `ahead` items early (see the
    module docstring); the producer is stopped and joined when the block is left."""
    channel: _Channel[Item] = _Channel(ahead)
    producer = threading.Thread(target=channel.produce, args=(source,),
                                name="lakemirror-read-ahead", daemon=True)
    producer.start()
    try:
        yield channel.consume()
    finally:
        channel.abandon()
        producer.join()
