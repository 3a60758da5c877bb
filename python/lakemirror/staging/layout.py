"""Where lakemirror keeps mirrored, staging and control tables inside the warehouse.

Mirrored tables live at `<warehouse>/<schema>/<table>`; everything lakemirror owns lives under
`<warehouse>/_lakemirror/`, and landing-zone folders starting with `_` are ignored, so the two
can never collide.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from lakemirror.naming import staging_table_name as staging_table_name
from lakemirror.storage.location import Location
from lakemirror.storage.warehouse import warehouse_storage
from lakemirror.storage.warehouse_door import WarehouseStorage

STAGING_SCHEMA = "_lakemirror_staging"
CONTROL_SCHEMA = "_lakemirror_control"
RELATIONS_TABLE = "relations"


@dataclass(frozen=True)
class Warehouse:
    """The warehouse (a folder, or a prefix in object storage) and the locations of the
    tables in it."""

    root: Location

    @cached_property
    def storage(self) -> WarehouseStorage:
        """How to touch the warehouse's files (see `storage.warehouse`), opened once: an
        object store's client keeps its connections for every later request."""
        return warehouse_storage(self.root)

    def key(self, path: Location) -> str:
        """The storage key of a location of this layout (`""`: the root)."""
        relative = path.relative_to(self.root).as_posix()  # type: ignore[arg-type]
        return "" if relative == "." else relative

    def location_of(self, text: str) -> Location | None:
        """The location a registered table's location string names: a local path, or a URL
        below this warehouse (with its settings); None for another URL (a folder's root,
        a plain path, is the start of none)."""
        if "://" not in text:
            return Path(text)
        root = str(self.root)
        return self.root / text[len(root) + 1:] if text.startswith(root + "/") else None

    def mirrored_path(self, schema: str, table: str) -> Location:
        return self.root / schema / table

    @property
    def staging_root(self) -> Location:
        return self.root / "_lakemirror" / "staging"

    def staging_path(self, schema: str, table: str) -> Location:
        return self.staging_root / schema / table

    @property
    def dropped_root(self) -> Location:
        """Where dropped tables are kept until their retention period has passed."""
        return self.root / "_lakemirror" / "dropped"

    @property
    def control_root(self) -> Location:
        return self.root / "_lakemirror" / "control"

    def control_path(self, name: str) -> Location:
        return self.control_root / name

    @property
    def relations_path(self) -> Location:
        return self.control_path(RELATIONS_TABLE)

