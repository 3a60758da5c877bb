"""Control files (`_metadata.json`, `_lakemirror.json`) read once per version on an object store.

An idle run must not cost a request per control file per table. The table folder's listing
already gives each object's ETag, and every staged file's commit keeps a copy of the control
files as read for it (`ControlCopy`, with their ETags). When the listing shows a control file
with the ETag of the kept copy, the copy is its content, and the file is not read; otherwise it
is read with `If-Match` on the listed ETag, so the content kept for that ETag is that version's.
A file the listing does not show is absent (the listing is the run's view of the folder). On
disk, where entries have no ETag, every control file is read. ETags are compared without their
quotes (Azure quotes them in responses to a put but not in listings).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from lakemirror.landing.zone_door import Entry, ZoneDoor

COPY_LIMIT = 16 << 10  # larger control files are read each time rather than kept in commits


@dataclass(frozen=True)
class ControlCopy:
    """A control file's bytes (None: there is none) and its ETag (None: not known)."""

    data: bytes | None
    etag: str | None = None

    def kept(self) -> str | None:
        """This copy as a commit keeps it (None when it has no ETag or is too large)."""
        if self.data is None or self.etag is None or len(self.data) > COPY_LIMIT:
            return None
        try:
            return json.dumps({"etag": self.etag, "text": self.data.decode("utf-8")})
        except UnicodeDecodeError:
            return None

    @classmethod
    def from_kept(cls, kept: object) -> ControlCopy | None:
        """The copy a commit kept (None when it kept none, or something else)."""
        try:
            document = json.loads(str(kept)) if kept is not None else {}
            etag, text = document["etag"], document["text"]
        except (ValueError, TypeError, KeyError):
            return None
        if not isinstance(etag, str) or not isinstance(text, str):
            return None
        return cls(text.encode("utf-8"), etag)


def read_listed(door: ZoneDoor, path: PurePath, listing: Sequence[Entry],
                kept: ControlCopy | None) -> ControlCopy:
    """The control file at `path` of the listed folder: the kept copy when the listing shows
    it unchanged, otherwise read through the door."""
    listed = next((entry for entry in listing if entry.path.name == path.name), None)
    if listed is None:
        return ControlCopy(None)
    if listed.etag is None or listed.kind != "file":  # on disk; or refused by the door
        return ControlCopy(door.read_control(path))
    if kept is not None and kept.data is not None and kept.etag is not None \
            and kept.etag.strip('"') == listed.etag.strip('"') and len(kept.data) == listed.size:
        return kept
    return ControlCopy(door.read_control(path, etag=listed.etag), listed.etag)


def kept_copies(copies: Mapping[str, ControlCopy]) -> dict[str, str]:
    """Commit metadata keeping each copy that can be kept, under its key."""
    return {key: text for key, copy in copies.items() if (text := copy.kept()) is not None}
