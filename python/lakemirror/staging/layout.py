"""Where lakemirror keeps mirrored, staging and control tables inside the warehouse.

Mirrored tables live at `<warehouse>/<schema>/<table>`; everything lakemirror owns lives under
`<warehouse>/_lakemirror/`, and landing-zone folders starting with `_` are ignored, so the two
can never collide.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lakemirror.landing.discovery import staging_table_name as staging_table_name
from lakemirror.storage.warehouse import WarehouseStorage, warehouse_storage

STAGING_SCHEMA = "_lakemirror_staging"
CONTROL_SCHEMA = "_lakemirror_control"
RELATIONS_TABLE = "relations"


@dataclass(frozen=True)
class Warehouse:
    """The warehouse folder and the paths of the tables in it."""

    root: Path

    @property
    def storage(self) -> WarehouseStorage:
        """How to touch the warehouse's files (see `storage.warehouse`)."""
        return warehouse_storage(self.root)

    def key(self, path: Path) -> str:
        """The storage key of a path of this layout (`""`: the root)."""
        relative = path.relative_to(self.root).as_posix()
        return "" if relative == "." else relative

    def mirrored_path(self, schema: str, table: str) -> Path:
        return self.root / schema / table

    @property
    def staging_root(self) -> Path:
        return self.root / "_lakemirror" / "staging"

    def staging_path(self, schema: str, table: str) -> Path:
        return self.staging_root / schema / table

    @property
    def dropped_root(self) -> Path:
        """Where dropped tables are kept until their retention period has passed."""
        return self.root / "_lakemirror" / "dropped"

    @property
    def control_root(self) -> Path:
        return self.root / "_lakemirror" / "control"

    def control_path(self, name: str) -> Path:
        return self.control_root / name

    @property
    def relations_path(self) -> Path:
        return self.control_path(RELATIONS_TABLE)

