"""The open-mirroring contract: the names and values a publisher and lakemirror agree on
(Fabric's landing-zone format). Production code, the reference model and the dbt macros
(macros/mirror/row_marker.sql is rendered from here) all take them from this one module."""

from __future__ import annotations

from enum import IntEnum
from typing import Literal

ROW_MARKER = "__rowMarker__"


class RowMarker(IntEnum):
    """What a change row does to its key's rows (the value of `__rowMarker__`)."""

    INSERT = 0
    UPDATE = 1
    DELETE = 2
    UPSERT = 4


INSERT, UPDATE, DELETE, UPSERT = (RowMarker.INSERT, RowMarker.UPDATE, RowMarker.DELETE,
                                  RowMarker.UPSERT)
VALID_MARKERS = frozenset(RowMarker)
REPLACING_MARKERS = frozenset({UPDATE, DELETE, UPSERT})  # they replace all of a key's rows
_NAMED_MARKERS = [f"{int(marker)} ({marker.name.lower()})" for marker in RowMarker]
MARKER_CHOICES = f"{', '.join(_NAMED_MARKERS[:-1])} or {_NAMED_MARKERS[-1]}"  # for messages

SEQUENCE_DIGITS = 20  # change files are named <20-digit sequence number><suffix>

METADATA_FILE = "_metadata.json"
METADATA_KEYS = ("keyColumns", "fileDetectionStrategy", "isUpsertDefaultRowMarker", "FileFormat",
                 "FileExtension", "FileFormatTypeProperties", "SchemaDefinition",
                 "ConditionalUpdateColumn")
SCHEMA_COLUMN_KEYS = ("Name", "DataType", "IsNullable")  # of SchemaDefinition.Columns[i]
FileDetection = Literal["SequentialFileName", "LastUpdateTimeFileDetection"]
FILE_DETECTIONS: tuple[FileDetection, ...] = ("SequentialFileName", "LastUpdateTimeFileDetection")


def sequence_file_name(sequence: int, suffix: str = ".parquet") -> str:
    """The name of change file number `sequence`: 20 digits, zero-padded, then `suffix`."""
    return f"{sequence:0{SEQUENCE_DIGITS}d}{suffix}"


def is_sequence_number(digits: str) -> bool:
    """Whether `digits` (a name's leading digits) is a sequence number: 20 ASCII digits."""
    return len(digits) == SEQUENCE_DIGITS and digits.isascii() and digits.isdigit()
