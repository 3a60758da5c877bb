"""Lease objects: the lock of a warehouse in object storage, where file locks do not exist.

A lease is a small JSON object (`{"holder": ..., "expires": <epoch seconds>}`) written only
by conditional puts, so two runners, on one machine or several, never both hold it:
- take: create it only if absent (If-None-Match: *); if present and past its expiry (a
  crashed holder's), replace exactly the version read (If-Match: its ETag): of two runners
  taking over, one wins.
- hold: a heartbeat renews the expiry (If-Match) every third of the lease's duration; when a
  renewal is refused (someone took the lease over) or the expiry passes unrenewed, the lease
  is `lost` and its holder must not commit anything more.
- release: write it expired (If-Match), so the next runner takes it at once.
Expiries are compared with each runner's clock: the duration (a minute by default) must be
far longer than the clocks' skew and than a stalled request.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

from lakemirror.environment import DEFAULT_LEASE_SECONDS


class Lease:
    """A lease this process holds, renewed in the background until `release`."""

    def __init__(self, store: Any, key: str, holder: str, e_tag: str, seconds: float,
                 expires: float) -> None:
        self.store, self.key, self.holder, self.seconds = store, key, holder, seconds
        self._e_tag, self._expires = e_tag, expires
        self._stop, self._lost = threading.Event(), threading.Event()
        self._heartbeat = threading.Thread(target=self._renew, name=f"lease {key}", daemon=True)
        self._heartbeat.start()

    @property
    def lost(self) -> bool:
        """Whether the lease was taken over or expired unrenewed: its holder must stop."""
        return self._lost.is_set() or time.time() >= self._expires

    def release(self) -> None:
        """Stop renewing and write the lease expired; a lost lease is left to its new holder,
        and one that cannot be written expires by itself."""
        from obstore.exceptions import BaseError

        self._stop.set()
        self._heartbeat.join()
        if self._lost.is_set():
            return
        try:
            _put(self.store, self.key, self.holder, 0.0, {"e_tag": self._e_tag})
        except (BaseError, OSError):
            pass

    def _renew(self) -> None:
        from obstore.exceptions import BaseError, PreconditionError

        while not self._stop.wait(self.seconds / 3):
            expires = time.time() + self.seconds
            try:
                self._e_tag = _put(self.store, self.key, self.holder, expires,
                                   {"e_tag": self._e_tag})
                self._expires = expires
            except PreconditionError:
                self._lost.set()
                return
            except (BaseError, OSError):  # a failed request: the next beat tries again
                if time.time() >= self._expires:
                    self._lost.set()
                    return


def try_lease(store: Any, key: str, *, seconds: float = DEFAULT_LEASE_SECONDS) -> Lease | None:
    """Take the lease at `key` of the obstore `store` if it is free or expired, without
    waiting; None when another holder's lease is current."""
    import obstore
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    holder, expires = uuid.uuid4().hex, time.time() + seconds
    try:
        e_tag = _put(store, key, holder, expires, "create")
    except AlreadyExistsError:
        try:
            current = obstore.get(store, key)
            body = bytes(current.bytes())
        except FileNotFoundError:
            return None  # gone meanwhile: the next attempt creates it
        found, until = _read(body)
        if found == holder:  # a retried create that had gone through: it is this one's
            return Lease(store, key, holder, str(current.meta["e_tag"]), seconds, expires)
        if until > time.time():
            return None
        try:
            e_tag = _put(store, key, holder, expires, {"e_tag": current.meta["e_tag"]})
        except PreconditionError:  # another runner took it over first
            return None
    return Lease(store, key, holder, e_tag, seconds, expires)


def _put(store: Any, key: str, holder: str, expires: float, mode: Any) -> str:
    import obstore

    body = json.dumps({"holder": holder, "expires": expires}).encode()
    return str(obstore.put(store, key, body, mode=mode)["e_tag"])


def _read(body: bytes) -> tuple[str | None, float]:
    """A lease's holder and expiry; an unreadable lease counts as expired (a put is whole, so
    only something other than lakemirror can have written it)."""
    try:
        document = json.loads(body)
        return str(document["holder"]), float(document["expires"])
    except (ValueError, KeyError, TypeError):
        return None, 0.0
