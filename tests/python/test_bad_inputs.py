"""A corpus of bad landing-zone inputs: each fails only its table with a specific error class
and message, keeps earlier data and other tables intact, moves nothing, and resumes once the
bad file is replaced under the same name."""

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from lakemirror.landing import discover_tables
from lakemirror.reference import ROW_MARKER
from lakemirror.staging import Warehouse, ingest_table

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
SECOND = "00000000000000000002.parquet"


def parquet(rows, schema=SCHEMA):
    def write(path: Path) -> None:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return write


def raw(data: bytes):
    def write(path: Path) -> None:
        path.write_bytes(data)
    return write


def good_bytes() -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist([{"id": 9, "v": "z", M: 0}], schema=SCHEMA), sink)
    return sink.getvalue().to_pybytes()


@dataclass
class Case:
    name: str
    error_type: str
    message: str
    second_file: Callable[[Path], None] | None = None
    file_name: str = SECOND
    metadata: dict | str | None = None  # replaces _metadata.json after file 1 is staged
    folder: str = "Bad"


CASES = [
    Case("truncated file", "UnreadableFileError", "not a readable Parquet file",
         raw(good_bytes()[:-20])),
    Case("corrupt file", "UnreadableFileError", "not a readable Parquet file",
         raw(b"PAR1" + b"\x00garbage" * 20)),
    Case("marker not last", "RowMarkerError", "must be the last column",
         parquet([{M: 0, "id": 1, "v": "a"}],
                 pa.schema([(M, pa.int32()), ("id", pa.int64()), ("v", pa.string())]))),
    Case("marker 3", "RowMarkerError", "__rowMarker__=3", parquet([{"id": 1, "v": "a", M: 3}])),
    Case("marker -1", "RowMarkerError", "__rowMarker__=-1", parquet([{"id": 1, "v": "a", M: -1}])),
    Case("marker null", "RowMarkerError", "__rowMarker__=None",
         parquet([{"id": 1, "v": "a", M: None}])),
    Case("marker text", "RowMarkerError", "not an integer",
         parquet([{"id": 1, "v": "a", M: "upsert"}],
                 pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.string())]))),
    Case("update without keys", "RowMarkerError", "no keyColumns",
         parquet([{"id": 1, "v": "a", M: 1}]), folder="NoKeys"),
    Case("missing key column", "ColumnError", "columns ['id']",
         parquet([{"v": "a", M: 0}], pa.schema([("v", pa.string()), (M, pa.int32())]))),
    Case("reserved column", "ColumnError", "reserved prefix _lm_",
         parquet([{"id": 1, "_lm_x": "a", M: 0}],
                 pa.schema([("id", pa.int64()), ("_lm_x", pa.string()), (M, pa.int32())]))),
    Case("column differs only by case", "SchemaChangeError", "differs only by case",
         parquet([{"id": 1, "V": "a", M: 0}],
                 pa.schema([("id", pa.int64()), ("V", pa.string()), (M, pa.int32())]))),
    Case("two columns differ only by case", "ColumnError", "differ only by case",
         parquet([{"id": 1, "v": "a", "V": "b", M: 0}],
                 pa.schema([("id", pa.int64()), ("v", pa.string()), ("V", pa.string()),
                            (M, pa.int32())]))),
    Case("NUL in a column name", "ColumnError", "holds a NUL character",
         parquet([{"id": 1, "v": "a", "a\x00b": "c", M: 0}],
                 pa.schema([("id", pa.int64()), ("v", pa.string()), ("a\x00b", pa.string()),
                            (M, pa.int32())]))),
    Case("column name starting with #", "ColumnError", "starts with '#'",
         parquet([{"id": 1, "v": "a", "#b": "c", M: 0}],
                 pa.schema([("id", pa.int64()), ("v", pa.string()), ("#b", pa.string()),
                            (M, pa.int32())]))),
    Case("incompatible type change", "SchemaChangeError", "changed type from long to string",
         parquet([{"id": "1", "v": "a", M: 0}],
                 pa.schema([("id", pa.string()), ("v", pa.string()), (M, pa.int32())]))),
    Case("column type differs", "SchemaChangeError", "changed type from string to array<long>",
         parquet([{"id": 1, "v": [1, 2], M: 0}],
                 pa.schema([("id", pa.int64()), ("v", pa.list_(pa.int64())),
                            (M, pa.int32())]))),
    Case("19 digits", "FileNameError", "19 digits instead of 20",
         parquet([{"id": 1, "v": "a", M: 0}]), file_name="0000000000000000002.parquet"),
    Case("wrong extension", "FileNameError", "instead of '.parquet'",
         parquet([{"id": 1, "v": "a", M: 0}]), file_name="00000000000000000002.parq"),
    Case("duplicate number", "FileNameError", "two files carry sequence number 1",
         parquet([{"id": 1, "v": "a", M: 0}]), file_name="00000000000000000001.PARQUET"),
    Case("malformed metadata", "MetadataError", "line 1, column 17",
         metadata='{"keyColumns": [}'),
    Case("metadata not an object", "MetadataError", "must hold a JSON object", metadata="[1]"),
    Case("keyColumns not a list", "MetadataError",
         'keyColumns must be a JSON list of column names, not the string "id" '
         'Fix: write "keyColumns": ["id"]', metadata={"keyColumns": "id"}),
    Case("keyColumns holding an empty name", "MetadataError",
         'keyColumns[0] is an empty column name ("")', metadata={"keyColumns": [""]}),
    Case("keyColumns holding a number", "MetadataError", "keyColumns[1] is 7, not a column name",
         metadata={"keyColumns": ["id", 7]}),
    Case("key written in two casings", "MetadataError",
         'keyColumns is written twice, as "keyColumns" and "KeyColumns"',
         metadata={"keyColumns": ["id"], "KeyColumns": ["id"]}),
    Case("keyColumns repeated", "MetadataError", "repeats a column",
         metadata={"keyColumns": ["id", "id"]}),
    Case("keys changed", "MetadataError", "keyColumns changed", metadata={"keyColumns": ["v"]}),
    Case("unknown FileFormat", "MetadataError", "FileFormat 'Avro' is not supported",
         metadata={"keyColumns": ["id"], "FileFormat": "Avro"}),
    Case("DelimitedText without extension", "MetadataError", "FileExtension is required",
         metadata={"keyColumns": ["id"], "FileFormat": "DelimitedText"}),
    Case("bad detection strategy", "MetadataError", "fileDetectionStrategy 'Random'",
         metadata={"keyColumns": ["id"], "fileDetectionStrategy": "Random"}),
    Case("upsert default not boolean", "MetadataError", "must be true or false",
         metadata={"keyColumns": ["id"], "isUpsertDefaultRowMarker": "yes"}),
    Case("conditional column without keys", "MetadataError", "needs keyColumns",
         metadata={"ConditionalUpdateColumn": "v"}, folder="NoKeys"),
    Case("conditional column missing", "ColumnError", "columns ['ts']",
         parquet([{"id": 1, "v": "a", M: 0}]),
         metadata={"keyColumns": ["id"], "ConditionalUpdateColumn": "ts"}),
    Case("unknown SchemaDefinition type", "MetadataError", 'DataType "Decimal"',
         metadata={"keyColumns": ["id"], "FileFormat": "CSV", "SchemaDefinition": {
             "Columns": [{"Name": "id", "DataType": "Decimal"}]}}),
    Case("unsupported RowSeparator", "MetadataError", "RowSeparator ';' is not supported",
         metadata={"keyColumns": ["id"], "FileFormat": "CSV",
                   "FileFormatTypeProperties": {"RowSeparator": ";"}}),
    Case("unknown encoding", "MetadataError", "Encoding 'klingon' is unknown",
         metadata={"keyColumns": ["id"], "FileFormat": "CSV",
                   "FileFormatTypeProperties": {"Encoding": "klingon"}}),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_fails_only_its_table_and_resumes_when_fixed(zone, tmp_path, case):
    keys = ["id"] if case.folder == "Bad" else None
    bad_folder = zone.table(case.folder, keys)
    zone.table("Good", ["id"])
    first = [{"id": 1, "v": "a", M: 0}]
    zone.write(case.folder, 1, first, SCHEMA)
    zone.write("Good", 1, first, SCHEMA)
    warehouse = Warehouse(tmp_path / "wh")
    assert all(ingest_table(t, warehouse).status == "replicating"
               for t in discover_tables(zone.root))

    good_metadata = (bad_folder / "_metadata.json").read_text() if keys else None
    if case.metadata is not None:
        text = case.metadata if isinstance(case.metadata, str) else json.dumps(case.metadata)
        (bad_folder / "_metadata.json").write_text(text)
    bad_path = bad_folder / case.file_name
    if case.second_file:
        case.second_file(bad_path)
    zone.write("Good", 2, [{"id": 2, "v": "b", M: 0}], SCHEMA)

    results = {t.name: ingest_table(t, warehouse) for t in discover_tables(zone.root)}
    failed = results[case.folder.lower()]
    assert (failed.status, failed.error_type) == ("failed", case.error_type), failed.error
    assert case.message in failed.error
    assert f"dbo.{case.folder.lower()}" in failed.error and "Fix:" in failed.error
    assert results["good"].status == "replicating" and results["good"].last_sequence == 2
    staged = DeltaTable(str(warehouse.staging_path("dbo", case.folder.lower())))
    assert staged.to_pyarrow_table()["id"].to_pylist() == [1]
    assert (bad_folder / "00000000000000000001.parquet").exists()
    if case.second_file:
        assert bad_path.exists()

    # Replace the bad input with a good one under the same name: the table resumes.
    if case.metadata is not None:
        if good_metadata is None:
            (bad_folder / "_metadata.json").unlink()
        else:
            (bad_folder / "_metadata.json").write_text(good_metadata)
    if case.second_file:
        bad_path.unlink()
        zone.write(case.folder, 2, [{"id": 2, "v": "b", M: 0}], SCHEMA)
    [resumed] = [ingest_table(t, warehouse) for t in discover_tables(zone.root)
                 if t.name == case.folder.lower()]
    assert resumed.status == "replicating", resumed.error


def test_the_corpus_holds_the_cases_tallied_here_by_hand():
    """36 uniquely named cases, so many per error class: a case lost, or one that came to
    expect another error, shows here."""
    assert len({case.name for case in CASES}) == 36
    assert Counter(case.error_type for case in CASES) == {
        "MetadataError": 16, "RowMarkerError": 6, "ColumnError": 6, "SchemaChangeError": 3,
        "FileNameError": 3, "UnreadableFileError": 2}


def test_unknown_metadata_keys_warn_without_failing(zone, tmp_path):
    folder = zone.table("T", None)
    (folder / "_metadata.json").write_text(json.dumps({"KEYCOLUMNS": ["id"], "keyColumn": [],
                                                       "Color": "blue"}))
    zone.write("T", 1, [{"id": 1, "v": "a", M: 1}], SCHEMA)
    [table] = discover_tables(zone.root)
    result = ingest_table(table, Warehouse(tmp_path / "wh"))
    assert result.status == "replicating" and result.metadata.key_columns == ("id",)
    assert any('"keyColumn"' in w and "did you mean keyColumns" in w
               for w in result.metadata.warnings)
    assert any('"Color"' in w for w in result.metadata.warnings)
    assert len(result.metadata.warnings) == 2


CSV_METADATA = {"keyColumns": ["id"], "FileFormat": "CSV", "SchemaDefinition": {"Columns": [
    {"Name": "id", "DataType": "Int64", "IsNullable": False},
    {"Name": "amount", "DataType": "Double"}]}}
CSV_HEADER = b"id,amount,__rowMarker__\r\n"


@pytest.mark.parametrize("name, body, error_type, message", [
    ("value not a number", CSV_HEADER + b"2,1.5,0\r\n3,lots,0\r\n", "ValueParseError", "line 3"),
    ("null in non-nullable key", CSV_HEADER + b",1.5,0\r\n", "ValueParseError", "line 2"),
    ("too many fields", CSV_HEADER + b"2,1.5,0,extra\r\n", "UnreadableFileError", "line 2"),
    ("undecodable bytes", CSV_HEADER + b"2,\xff\xfe,0\r\n", "UnreadableFileError", "not valid utf-8"),
    ("unclosed quote", CSV_HEADER + b'2,"1.5,0\r\n', "UnreadableFileError", "quote"),
])
def test_bad_delimited_file_fails_only_its_table(zone, tmp_path, name, body, error_type, message):
    folder = zone.root / "Csv"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps(CSV_METADATA))
    (folder / "00000000000000000001.csv").write_bytes(CSV_HEADER + b"1,2.5,0\r\n")
    warehouse = Warehouse(tmp_path / "wh")
    [table] = discover_tables(zone.root)
    assert ingest_table(table, warehouse).status == "replicating"
    bad = folder / "00000000000000000002.csv"
    bad.write_bytes(body)
    failed = ingest_table(table, warehouse)
    assert (failed.status, failed.error_type) == ("failed", error_type), failed.error
    assert message in failed.error and "dbo.csv" in failed.error and str(bad) in failed.error
    assert bad.exists()
    bad.write_bytes(CSV_HEADER + b"2,3.5,0\r\n")
    assert ingest_table(table, warehouse).status == "replicating"
