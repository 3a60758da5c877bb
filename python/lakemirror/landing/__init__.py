"""Landing zone: discover tables, read their metadata and change files (open mirroring contract)."""

from typing import TYPE_CHECKING

from lakemirror.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lakemirror.landing.changes import POSITION, ROWS_PER_FILE, ChangeFile, open_change_file
    from lakemirror.landing.delimited import (
        DATA_TYPES, ColumnDefinition, DelimitedFormat, read_delimited,
    )
    from lakemirror.landing.detection import Detection, SequenceFile, StagedFiles, detect_files
    from lakemirror.landing.discovery import (
        DEFAULT_SCHEMA,
        LandingTable,
        discover_tables,
        hidden_entries,
        sequence_file_name,
    )
    from lakemirror.landing.metadata import TableMetadata, read_metadata
    from lakemirror.landing.zone import LandingZone
    from lakemirror.landing.zone_door import Entry, ZoneFile

__getattr__ = lazy_exports(__name__, {
    "changes": ("POSITION", "ROWS_PER_FILE", "ChangeFile", "open_change_file"),
    "delimited": ("DATA_TYPES", "ColumnDefinition", "DelimitedFormat", "read_delimited"),
    "detection": ("Detection", "SequenceFile", "StagedFiles", "detect_files"),
    "discovery": ("DEFAULT_SCHEMA", "LandingTable", "discover_tables", "hidden_entries",
                  "sequence_file_name"),
    "metadata": ("TableMetadata", "read_metadata"),
    "zone": ("LandingZone",),
    "zone_door": ("Entry", "ZoneFile"),
})

__all__ = [
    "DATA_TYPES", "DEFAULT_SCHEMA", "POSITION", "ROWS_PER_FILE", "ChangeFile", "ColumnDefinition",
    "DelimitedFormat", "Detection", "Entry", "LandingTable", "LandingZone", "SequenceFile",
    "StagedFiles", "TableMetadata", "ZoneFile", "detect_files", "discover_tables", "hidden_entries",
    "open_change_file", "read_delimited", "read_metadata", "sequence_file_name",
]
