"""`_metadata.json` of a landing-zone table: keys, file format and change-detection options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from lakemirror.errors import MetadataError
from lakemirror.landing.delimited import DATA_TYPES, ColumnDefinition, DelimitedFormat
from lakemirror.landing.discovery import LandingTable
from lakemirror.landing.zone import parse_json
from lakemirror.reference import INSERT, UPSERT

METADATA_FILE = "_metadata.json"
FileDetection = Literal["SequentialFileName", "LastUpdateTimeFileDetection"]
FILE_DETECTIONS: tuple[FileDetection, ...] = ("SequentialFileName", "LastUpdateTimeFileDetection")
TOP_LEVEL_KEYS = ("keyColumns", "fileDetectionStrategy", "isUpsertDefaultRowMarker", "FileFormat",
                  "FileExtension", "FileFormatTypeProperties", "SchemaDefinition",
                  "ConditionalUpdateColumn")
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


def read_metadata(table: LandingTable) -> TableMetadata:
    """Read the table's `_metadata.json`; a missing file means a keyless, insert-only Parquet
    table."""
    path = table.folder / METADATA_FILE
    data = table.door.read_control(path)
    if data is None:
        return TableMetadata()
    try:
        document = parse_json(data)
    except ValueError as error:
        raise MetadataError(
            f"{METADATA_FILE} is {error}", table=table.qualified_name, file=str(path),
            hint='write valid UTF-8 JSON such as {"keyColumns": ["id"]}') from error
    return _MetadataParser(document, table.qualified_name, str(path)).parse()


class _MetadataParser:
    """Checks each key of one `_metadata.json` document, naming the key and the fix."""

    def __init__(self, document: Any, table: str, file: str) -> None:
        self.document, self.table, self.file = document, table, file
        self.warnings: list[str] = []

    def error(self, message: str, hint: str) -> MetadataError:
        return MetadataError(f"{METADATA_FILE}: {message}", table=self.table, file=self.file,
                                hint=hint)

    def parse(self) -> TableMetadata:
        if not isinstance(self.document, dict):
            raise self.error("must hold a JSON object", 'write {"keyColumns": [...]}')
        self.warn_unknown(self.document, TOP_LEVEL_KEYS, "key")
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

    def warn_unknown(self, mapping: dict[str, Any], known: tuple[str, ...], kind: str) -> None:
        for name in mapping:
            if name not in known:
                close = [k for k in known if k.lower() == name.lower()]
                hint = f" (did you mean {close[0]}?)" if close else ""
                self.warnings.append(f"{METADATA_FILE}: unknown {kind} {name!r} is ignored{hint}")

    def key_columns(self) -> tuple[str, ...]:
        keys = self.document.get("keyColumns", [])
        if not isinstance(keys, list) or not all(isinstance(key, str) and key for key in keys):
            raise self.error("keyColumns must be a list of column names",
                             'write "keyColumns": ["id"]')
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
        kind = self.document.get("FileFormat", "Parquet")
        kind = kind.lower() if isinstance(kind, str) else kind
        extension = self.document.get("FileExtension")
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

    def delimited_format(self) -> DelimitedFormat:
        properties = self.document.get("FileFormatTypeProperties", {})
        if not isinstance(properties, dict):
            raise self.error("FileFormatTypeProperties must be a JSON object",
                             'write "FileFormatTypeProperties": {"ColumnSeparator": ","}')
        self.warn_unknown(properties, tuple(FORMAT_PROPERTIES), "FileFormatTypeProperties key")
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
        columns = definition.get("Columns") if isinstance(definition, dict) else None
        if not isinstance(columns, list) or not columns:
            raise self.error("SchemaDefinition must hold a non-empty Columns list",
                             'write "SchemaDefinition": {"Columns": [{"Name": "id", '
                             '"DataType": "Int64"}]}')
        return tuple(self.column(index, column) for index, column in enumerate(columns))

    def column(self, index: int, column: Any) -> ColumnDefinition:
        where = f"SchemaDefinition.Columns[{index}]"
        if not isinstance(column, dict) or not isinstance(column.get("Name"), str):
            raise self.error(f"{where} needs a Name", '{"Name": "id", "DataType": "Int64"}')
        data_type = column.get("DataType", "String")
        if data_type not in DATA_TYPES:
            raise self.error(f"{where} ({column['Name']}) has DataType {data_type!r}",
                             f"use one of {', '.join(DATA_TYPES)}")
        nullable = column.get("IsNullable", True)
        if not isinstance(nullable, bool):
            raise self.error(f"{where} ({column['Name']}) IsNullable must be true or false",
                             '"IsNullable": false')
        self.warn_unknown(column, ("Name", "DataType", "IsNullable"), f"{where} key")
        return ColumnDefinition(column["Name"], data_type, nullable)


def _python_encoding(name: str, parser: _MetadataParser) -> str:
    import codecs

    try:
        return codecs.lookup(name).name
    except LookupError as error:
        raise parser.error(f"FileFormatTypeProperties.Encoding {name!r} is unknown",
                           "use UTF-8, ascii, utf-16, windows-1252 or latin-1") from error
