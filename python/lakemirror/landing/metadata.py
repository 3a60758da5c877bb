"""`_metadata.json` of a landing-zone table: keys, file format and change-detection options.

Key names are matched without regard to case (Fabric's own examples write both `keyColumns` and
`KeyColumns`); a key given twice in different casings is an error, an unknown key a warning.
Without `FileFormat`, the table's change files tell the format: `.parquet` is Parquet,
`.csv` (also `.csv.gz`, `.csv.zst`, `.csv.snappy`) is CSV.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakemirror.contract import (
    FILE_DETECTIONS,
    INSERT,
    METADATA_FILE,
    METADATA_KEYS,
    SCHEMA_COLUMN_KEYS,
    UPSERT,
    FileDetection,
)
from lakemirror.errors import MetadataError
from lakemirror.landing.control_copy import ControlCopy
from lakemirror.landing.delimited import DATA_TYPES, ColumnDefinition, DelimitedFormat
from lakemirror.landing.discovery import LandingTable
from lakemirror.landing.zone_door import Entry, parse_json

FORMAT_PROPERTIES = {  # _metadata.json name → (DelimitedFormat field, allowed values or None)
    "FirstRowAsHeader": ("first_row_as_header", (True,)),
    "RowSeparator": ("row_separator", ("\r\n", "\n", "\r")),
    "ColumnSeparator": ("column_separator", (",", ";", "|", "\t")),
    "QuoteCharacter": ("quote_character", ('"', "'", "")),
    "EscapeCharacter": ("escape_character", ("\\", "/", '"', "")),
    "NullValue": ("null_value", None),
    "Encoding": ("encoding", None),
}


@dataclass(frozen=True)
class TableMetadata:
    """What the publisher declared about a table; no keys means inserts only."""

    key_columns: tuple[str, ...] = ()
    upsert_by_default: bool = False
    file_detection: FileDetection = "SequentialFileName"
    conditional_column: str | None = None
    file_extension: str = "parquet"
    delimited: DelimitedFormat | None = None
    schema_definition: tuple[ColumnDefinition, ...] | None = None
    warnings: tuple[str, ...] = ()

    @property
    def default_marker(self) -> int:
        """The marker of rows in a file without `__rowMarker__`."""
        return UPSERT if self.upsert_by_default else INSERT


def read_metadata(table: LandingTable, copy: ControlCopy | None = None,
                  listing: Sequence[Entry] | None = None) -> TableMetadata:
    """Read the table's `_metadata.json` (`copy`: as already read); a missing file means a
    keyless, insert-only table whose format its files tell (from `listing`, the table
    folder's, when given)."""
    path = table.folder / METADATA_FILE
    data = table.door.read_control(path) if copy is None else copy.data
    try:
        document = {} if data is None else parse_json(data)
    except ValueError as error:
        raise MetadataError(
            f"{METADATA_FILE} is {error}", table=table.qualified_name, file=str(path),
            hint='write valid UTF-8 JSON such as {"keyColumns": ["id"]}') from error
    return _MetadataParser(document, table.qualified_name, str(path),
                           lambda: _formats_in(table, listing)).parse()


def _formats_in(table: LandingTable, listing: Sequence[Entry] | None) -> set[str]:
    """The formats the table's change files are named for: 'parquet' and/or 'csv'."""
    names = [entry.name.lower() for entry in (
                 table.door.entries(table.folder) if listing is None else listing)
             if not entry.name.startswith(("_", "."))]
    csv = tuple(f".csv{suffix}" for suffix in ("", ".gz", ".zst", ".snappy"))
    return ({"parquet"} if any(name.endswith(".parquet") for name in names) else set()) | (
        {"csv"} if any(name.endswith(csv) for name in names) else set())


class _MetadataParser:
    """Checks each key of one `_metadata.json` document, naming the key and the fix."""

    def __init__(self, document: Any, table: str, file: str,
                 formats: Callable[[], set[str]]) -> None:
        self.document, self.table, self.file, self.formats = document, table, file, formats
        self.warnings: list[str] = []

    def error(self, message: str, hint: str) -> MetadataError:
        return MetadataError(f"{METADATA_FILE}: {message}", table=self.table, file=self.file,
                                hint=hint)

    def parse(self) -> TableMetadata:
        if not isinstance(self.document, dict):
            raise self.error("must hold a JSON object", 'write {"keyColumns": [...]}')
        self.document = self.known(self.document, METADATA_KEYS, "key", "")
        extension, delimited = self.file_format()
        return TableMetadata(
            key_columns=self.key_columns(),
            upsert_by_default=self.boolean("isUpsertDefaultRowMarker"),
            file_detection=self.file_detection(),
            conditional_column=self.conditional_column(),
            file_extension=extension,
            delimited=delimited,
            schema_definition=self.schema_definition() if delimited else None,
            warnings=tuple(self.warnings),
        )

    def known(self, mapping: Mapping[str, Any], known: tuple[str, ...], kind: str,
              where: str) -> dict[str, Any]:
        """The mapping's known keys under their documented names, whatever their case; an
        unknown key is warned about and left out, one known key written twice is an error."""
        by_case = {name.lower(): name for name in known}
        found: dict[str, Any] = {}
        written: dict[str, str] = {}
        for name, value in mapping.items():
            canonical = by_case.get(name.lower())
            if canonical is None:
                close = difflib.get_close_matches(name.lower(), by_case, n=1, cutoff=0.8)
                hint = f" (did you mean {by_case[close[0]]}?)" if close else ""
                self.warnings.append(
                    f"{METADATA_FILE}: unknown {kind} {_shown(name)} is ignored{hint}")
                continue
            if canonical in found:
                raise self.error(f"{where}{canonical} is written twice, as "
                                 f"{_shown(written[canonical])} and {_shown(name)}",
                                 "keep one of them (key names are case-insensitive)")
            found[canonical], written[canonical] = value, name
        return found

    def key_columns(self) -> tuple[str, ...]:
        keys = self.document.get("keyColumns", [])
        example = 'write "keyColumns": ["id"]'
        if isinstance(keys, str):
            raise self.error(f"keyColumns must be a JSON list of column names, not the string "
                             f"{_shown(keys)}", f"write \"keyColumns\": [{json.dumps(keys)}]"
                             if keys else example)
        if not isinstance(keys, list):
            raise self.error(f"keyColumns must be a JSON list of column names, not "
                             f"{_shown(keys)}", example)
        for index, key in enumerate(keys):
            if not isinstance(key, str):
                raise self.error(f"keyColumns[{index}] is {_shown(key)}, not a column name "
                                 "(a JSON string)", example)
            if not key.strip():
                raise self.error(
                    f"keyColumns[{index}] is an empty column name ({_shown(key)})",
                    'name the key columns, e.g. "keyColumns": ["id"]; for a table without '
                    'keys (inserts only) write "keyColumns": [] or leave the key out')
        if len(set(keys)) != len(keys):
            raise self.error(f"keyColumns repeats a column: {keys}", "list each key column once")
        return tuple(keys)

    def boolean(self, name: str) -> bool:
        value = self.document.get(name, False)
        if not isinstance(value, bool):
            raise self.error(f"{name} must be true or false, got {value!r}",
                             f'write "{name}": true')
        return value

    def file_detection(self) -> FileDetection:
        value = self.document.get("fileDetectionStrategy", "SequentialFileName")
        for allowed in FILE_DETECTIONS:
            if isinstance(value, str) and value.lower() == allowed.lower():
                return allowed
        raise self.error(f"fileDetectionStrategy {value!r} is not supported",
                         f"use one of {', '.join(FILE_DETECTIONS)}")

    def conditional_column(self) -> str | None:
        value = self.document.get("ConditionalUpdateColumn")
        if value is not None and (not isinstance(value, str) or not value):
            raise self.error("ConditionalUpdateColumn must be a column name",
                             'write "ConditionalUpdateColumn": "ModifiedAt"')
        if value is not None and not self.document.get("keyColumns"):
            raise self.error("ConditionalUpdateColumn needs keyColumns",
                             "declare keyColumns, or remove ConditionalUpdateColumn")
        return value

    def file_format(self) -> tuple[str, DelimitedFormat | None]:
        extension = self.document.get("FileExtension")
        kind = self.document.get("FileFormat", self.inferred_format(extension))
        kind = kind.lower() if isinstance(kind, str) else kind
        if kind == "parquet":
            if extension not in (None, "parquet"):
                raise self.error(f"FileExtension {extension!r} does not fit FileFormat Parquet",
                                 'remove FileExtension, or set "FileFormat": "DelimitedText"')
            return "parquet", None
        if kind not in ("csv", "delimitedtext"):
            raise self.error(f"FileFormat {self.document.get('FileFormat')!r} is not supported",
                             "use Parquet, CSV or DelimitedText")
        if kind == "delimitedtext" and extension is None:
            raise self.error("FileExtension is required with FileFormat DelimitedText",
                             'add "FileExtension": "tsv" (or psv, txt, ...)')
        extension = extension or "csv"
        if not isinstance(extension, str) or not extension.isalnum():
            raise self.error(f"FileExtension {extension!r} must be letters and digits",
                             'write it without the dot, e.g. "tsv"')
        if extension.lower() == "parquet":
            raise self.error("FileExtension parquet is for FileFormat Parquet",
                             'use "FileFormat": "Parquet"')
        return extension.lower(), self.delimited_format()

    def inferred_format(self, extension: Any) -> str:
        """The format when FileFormat is absent: from FileExtension, else from the names of
        the change files (Parquet when there are none yet)."""
        if isinstance(extension, str):
            return {"parquet": "Parquet", "csv": "CSV"}.get(extension.lower(), "DelimitedText")
        formats = self.formats()
        if len(formats) > 1:
            raise self.error("FileFormat is not declared and the folder holds both .parquet and "
                             ".csv change files", 'declare "FileFormat": "Parquet" or "CSV", and '
                             "remove the files of the other format")
        return "CSV" if formats == {"csv"} else "Parquet"

    def delimited_format(self) -> DelimitedFormat:
        properties = self.document.get("FileFormatTypeProperties", {})
        if not isinstance(properties, dict):
            raise self.error("FileFormatTypeProperties must be a JSON object",
                             'write "FileFormatTypeProperties": {"ColumnSeparator": ","}')
        properties = self.known(properties, tuple(FORMAT_PROPERTIES),
                                "FileFormatTypeProperties key", "FileFormatTypeProperties.")
        options: dict[str, Any] = {}
        for name, (field, allowed) in FORMAT_PROPERTIES.items():
            if name not in properties:
                continue
            value = properties[name]
            if allowed is not None and value not in allowed:
                raise self.error(f"FileFormatTypeProperties.{name} {value!r} is not supported",
                                 f"use one of {', '.join(repr(item) for item in allowed)}")
            if allowed is None and not isinstance(value, str):
                raise self.error(f"FileFormatTypeProperties.{name} must be a string",
                                 f'write "{name}": "..."')
            options[field] = value
        if "encoding" in options:
            options["encoding"] = _python_encoding(options["encoding"], self)
        return DelimitedFormat(**options)

    def schema_definition(self) -> tuple[ColumnDefinition, ...] | None:
        definition = self.document.get("SchemaDefinition")
        if definition is None:
            return None
        columns = (self.known(definition, ("Columns",), "SchemaDefinition key",
                              "SchemaDefinition.").get("Columns")
                   if isinstance(definition, dict) else None)
        if not isinstance(columns, list) or not columns:
            raise self.error("SchemaDefinition must hold a non-empty Columns list",
                             'write "SchemaDefinition": {"Columns": [{"Name": "id", '
                             '"DataType": "Int64"}]}')
        return tuple(self.column(index, column) for index, column in enumerate(columns))

    def column(self, index: int, column: Any) -> ColumnDefinition:
        where = f"SchemaDefinition.Columns[{index}]"
        if isinstance(column, dict):
            column = self.known(column, SCHEMA_COLUMN_KEYS, f"{where} key", f"{where}.")
        if not isinstance(column, dict) or not isinstance(column.get("Name"), str):
            raise self.error(f"{where} needs a Name", '{"Name": "id", "DataType": "Int64"}')
        written = column.get("DataType", "String")
        data_type = next((name for name in DATA_TYPES
                          if isinstance(written, str) and name.lower() == written.lower()), None)
        if data_type is None:
            raise self.error(f"{where} ({_shown(column['Name'])}) has DataType "
                             f"{_shown(written)}", f"use one of {', '.join(DATA_TYPES)}")
        nullable = column.get("IsNullable", True)
        if not isinstance(nullable, bool):
            raise self.error(f"{where} ({_shown(column['Name'])}) IsNullable must be true or "
                             "false", '"IsNullable": false')
        return ColumnDefinition(column["Name"], data_type, nullable)


def _shown(value: Any) -> str:
    """A publisher's value for a message: as JSON, cut short."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else f"{text[:60]}..."


def _python_encoding(name: str, parser: _MetadataParser) -> str:
    import codecs

    try:
        return codecs.lookup(name).name
    except LookupError as error:
        raise parser.error(f"FileFormatTypeProperties.Encoding {name!r} is unknown",
                           "use UTF-8, ascii, utf-16, windows-1252 or latin-1") from error
