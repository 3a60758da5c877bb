"""pyspark's release pool, kept from being shut down under a release it is taking.

pyspark (4.0) sends a Spark Connect statement's release calls from one thread pool that all
its sessions share, and submits to it while holding a re-entrant lock. A Connect session that
is garbage collected closes its client (`SparkSession.__del__`), and closing shuts that
shared pool down, taking the same lock. When the collection happens in the thread that holds
the lock, between its check that the pool is open and its submit (a collection can start at
any allocation), the shutdown goes through, and the submit fails with "cannot schedule new
futures after shutdown", failing a statement that had run; and a session collected in one of
the pool's own threads made it join itself. So a shutdown asked for by the thread that holds
the lock is left to the next close (a pool left open only keeps its idle threads), and a
shutdown lets the pool's threads finish the releases already queued (they only tell the
server it may free results) instead of waiting for them.
"""

from __future__ import annotations

from typing import Any


def guard_release_pool() -> None:
    """Make pyspark's release-pool shutdown do nothing when it re-enters a release submit
    (once per process; pyspark's class is process-wide)."""
    from pyspark.sql.connect.client.reattach import (
        ExecutePlanResponseReattachableIterator as Iterator,
    )

    if getattr(Iterator.__dict__["shutdown"].__func__, "guarded", False):
        return

    def guarded_shutdown(cls: Any) -> None:
        if cls._lock._is_owned():  # re-entered: this thread is inside a submit
            return
        with cls._lock:
            pool, cls._release_thread_pool_instance = cls._release_thread_pool_instance, None
        if pool is not None:
            pool.shutdown(wait=False)  # a collected session's close may run in a pool thread

    guarded_shutdown.guarded = True  # type: ignore[attr-defined]
    setattr(Iterator, "shutdown", classmethod(guarded_shutdown))  # mypy: no method assignment
