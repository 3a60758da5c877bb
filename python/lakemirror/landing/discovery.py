"""Find the tables of a landing zone."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lakemirror.errors import ConfigError

SCHEMA_SUFFIX = ".schema"
DEFAULT_SCHEMA = "dbo"
PROCESSED_FOLDER = "_ProcessedFiles"
NAME = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class LandingTable:
    """One table folder: `<zone>/<Table>` or `<zone>/<Schema>.schema/<Table>`."""

    schema: str
    name: str
    folder: Path

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def processed_folder(self) -> Path:
        return self.folder / PROCESSED_FOLDER


def discover_tables(zone: Path) -> list[LandingTable]:
    """Table folders at the zone root and under `<schema>.schema/`; `_`-items are ignored."""
    if not zone.is_dir():
        raise ConfigError(f"landing zone {zone} does not exist or is not a folder",
                          hint="pass --landing-zone DIR or set LAKEMIRROR_LANDING_ZONE")
    tables = []
    for item in sorted(zone.iterdir()):
        if item.name.startswith("_") or not item.is_dir():
            continue
        if item.name.lower().endswith(SCHEMA_SUFFIX):
            schema = item.name[: -len(SCHEMA_SUFFIX)]
            tables += [LandingTable(schema.lower(), sub.name.lower(), sub)
                       for sub in sorted(item.iterdir())
                       if sub.is_dir() and not sub.name.startswith("_")]
        else:
            tables.append(LandingTable(DEFAULT_SCHEMA, item.name.lower(), item))
    return tables


def sequence_file_name(sequence: int) -> str:
    return f"{sequence:020d}.parquet"
