"""Watch the engine while dbt works on it: a crashed engine, or one that stops answering, must
fail the tables it was working on within a bounded time, never hang the run. Spark Connect's
client retries an unreachable server for about ten minutes, so once the engine is gone the
watchdog also tells the client to stop retrying: the remaining statements then fail at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from lakemirror.engine.connect import give_up
from lakemirror.environment import DEFAULT_ENGINE_TIMEOUT

__all__ = ["DEFAULT_ENGINE_TIMEOUT", "Watch", "WatchedEngine", "watchdog"]
_POLL_SECONDS = 0.1


class WatchedEngine(Protocol):
    def alive(self) -> bool: ...

    def kill(self) -> None: ...

    def exit_reason(self) -> str: ...


@dataclass
class Watch:
    """What the watchdog saw: why the engine was lost, and when (None while it is fine)."""

    reason: str | None = None
    at: float | None = None


@contextmanager
def watchdog(engine: WatchedEngine, timeout: float) -> Iterator[Watch]:
    """Watch `engine` for the duration of the block: when it dies, or is still busy after
    `timeout` seconds (then it is killed), record why and make Spark Connect clients fail."""
    watch = Watch()
    done = threading.Event()
    deadline = time.monotonic() + timeout

    def run() -> None:
        while not done.wait(_POLL_SECONDS):
            if not engine.alive():
                watch.reason = f"the engine died while it worked on this run: " \
                               f"{engine.exit_reason()}"
            elif time.monotonic() > deadline:
                engine.kill()
                watch.reason = (f"the engine did not finish within {timeout:g} s "
                                "(LAKEMIRROR_ENGINE_TIMEOUT), so lakemirror stopped it")
            else:
                continue
            watch.at = time.time()
            give_up()
            return

    thread = threading.Thread(target=run, name="lakemirror-engine-watchdog", daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        done.set()
        thread.join()

