"""Delimited-text tables mirrored end to end through dbt, and nested Parquet types."""

import gzip
import json

import cramjam
import pyarrow as pa
import pytest

from lakemirror.delta.rows import read_table
from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import as_multiset, mirrored_rows

pytestmark = pytest.mark.slow
M = ROW_MARKER


# A typed TSV table: tab-separated, \n rows, NULL for NULL.
TSV_METADATA = {
    "keyColumns": ["id"], "FileFormat": "DelimitedText", "FileExtension": "tsv",
    "FileFormatTypeProperties": {"ColumnSeparator": "\t", "RowSeparator": "\n",
                                 "NullValue": "NULL"},
    "SchemaDefinition": {"Columns": [
        {"Name": "id", "DataType": "Int64", "IsNullable": False},
        {"Name": "note", "DataType": "String"},
        {"Name": "amount", "DataType": "Double"},
        {"Name": "paid", "DataType": "Boolean"},
        {"Name": "day", "DataType": "IDate"},
        {"Name": "at", "DataType": "DateTime"},
    ]}}


def test_typed_tsv_with_quotes_nulls_and_compression_matches_reference(zone, service):
    folder = zone.root / "Sales.schema" / "Orders"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps(TSV_METADATA))
    (folder / "00000000000000000001.tsv").write_text(
        "id\tnote\tamount\tpaid\tday\tat\t__rowMarker__\n"
        '1\t"tab\there, \\"quoted\\"\nand a newline"\t1.5\ttrue\t2024-01-31\t2024-01-31 10:00:00\t0\n'
        "2\tNULL\t2\t0\t2024-02-01\t2024-02-01T11:30:00\t0\n")
    (folder / "00000000000000000002.tsv.gz").write_bytes(gzip.compress(
        b"id\tnote\tamount\tpaid\tday\tat\t__rowMarker__\n"
        b"2\tupdated\t3.25\tTRUE\t2024-02-02\t2024-02-02 00:00:00\t1\n"
        b"1\tNULL\tNULL\tNULL\tNULL\tNULL\t2\n"))
    (folder / "00000000000000000003.tsv").write_text(
        "id\tnote\tamount\tpaid\tday\tat\t__rowMarker__\n")  # header only: zero rows
    [status] = service.run()
    assert (status.status, status.last_sequence, status.rows) == ("replicating", 3, 1), status.error
    [row] = mirrored_rows(service.settings.warehouse, "sales", "orders")
    assert dict(row)["note"] == "updated" and dict(row)["amount"] == 3.25
    assert dict(row)["paid"] is True and str(dict(row)["day"]) == "2024-02-02"


def test_csv_without_schema_definition_mirrors_strings(zone, service):
    folder = zone.root / "People"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"], "FileFormat": "CSV"}))
    (folder / "00000000000000000001.csv").write_bytes(
        "id,name,__rowMarker__\r\n1,Zoë,0\r\n2,\"Smith, J\",0\r\n".encode())
    (folder / "00000000000000000002.csv").write_bytes(b"id,name,__rowMarker__\r\n")  # 0 rows
    (folder / "00000000000000000003.csv").write_bytes(b"id,name,__rowMarker__\r\n2,,2\r\n")
    [status] = service.run()
    assert status.status == "replicating" and status.last_sequence == 3, status.error
    assert mirrored_rows(service.settings.warehouse, "dbo", "people") == as_multiset(
        [{"id": "1", "name": "Zoë"}])


def test_nested_parquet_types_are_mirrored_natively(zone, service):
    schema = pa.schema([
        ("id", pa.int64()),
        ("address", pa.struct([("city", pa.string()), ("zip", pa.string())])),
        ("tags", pa.list_(pa.string())),
        ("scores", pa.map_(pa.string(), pa.int64())),
        ("raw_json", pa.string()),
        (M, pa.int32()),
    ])
    zone.table("Nested", ["id"])
    files = [[{"id": 1, "address": {"city": "Oslo", "zip": "0150"}, "tags": ["a", "b"],
               "scores": [("x", 1)], "raw_json": '{"k": [1, 2]}', M: 0},
              {"id": 2, "address": None, "tags": [], "scores": [], "raw_json": None, M: 0}],
             [{"id": 1, "address": {"city": "Bergen", "zip": "5003"}, "tags": ["c"],
               "scores": [("y", 2)], "raw_json": '{"k": []}', M: 1}]]
    for sequence, rows in enumerate(files, 1):
        zone.write("Nested", sequence, rows, schema)
    [status] = service.run()
    assert status.status == "replicating", status.error
    stored = {row["id"]: row for row in
              read_table(service.settings.warehouse / "dbo/nested").to_pylist()}
    expected = {row["id"]: row for row in apply_changes(files, ["id"])}
    assert stored[1]["address"] == {"city": "Bergen", "zip": "5003"}
    assert stored[1]["tags"] == ["c"] and stored[1]["scores"] == [("y", 2)]
    assert stored[1]["raw_json"] == expected[1]["raw_json"]
    assert stored[2]["tags"] == [] and stored[2]["address"] is None


def test_parquet_compression_codecs(zone, service):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
    zone.table("Codecs", ["id"])
    files = [[{"id": n, "v": codec, M: 0}, {"id": 1, "v": f"from {codec}", M: 4}]
             for n, codec in enumerate(["none", "snappy", "gzip", "zstd"], 1)]
    for sequence, (rows, codec) in enumerate(zip(files, ["none", "snappy", "gzip", "zstd"]), 1):
        zone.write("Codecs", sequence, rows, schema, compression=codec)
    [status] = service.run()
    assert status.status == "replicating" and status.last_sequence == 4
    expected = [{k: v for k, v in row.items() if k != M} for row in apply_changes(files, ["id"])]
    assert mirrored_rows(service.settings.warehouse, "dbo", "codecs") == as_multiset(expected)


FORMATS = {  # folder → (metadata extras, FileFormatTypeProperties, file suffix, encoding)
    "Comma": ({"FileFormat": "CSV"}, {}, "csv", None),
    "Semicolon": ({"FileFormat": "CSV"}, {"ColumnSeparator": ";", "RowSeparator": "\n"}, "csv",
                  None),
    "Pipe": ({"FileFormat": "DelimitedText", "FileExtension": "psv"},
             {"ColumnSeparator": "|", "RowSeparator": "\r", "QuoteCharacter": "'"}, "psv", None),
    "Tab": ({"FileFormat": "DelimitedText", "FileExtension": "tsv"},
            {"ColumnSeparator": "\t", "EscapeCharacter": "/", "NullValue": "NULL"}, "tsv", None),
    "Doubled": ({"FileFormat": "CSV"}, {"EscapeCharacter": '"'}, "csv", None),
    "NoQuote": ({"FileFormat": "DelimitedText", "FileExtension": "txt"},
                {"QuoteCharacter": "", "EscapeCharacter": ""}, "txt", None),
    "Latin": ({"FileFormat": "CSV"}, {"Encoding": "latin-1"}, "csv.gz", "latin-1"),
    "Windows": ({"FileFormat": "CSV"}, {"Encoding": "windows-1252"}, "csv.zst", "cp1252"),
    "Wide": ({"FileFormat": "CSV"}, {"Encoding": "utf-16"}, "csv.snappy", "utf-16"),
    "Ascii": ({"FileFormat": "CSV", "isUpsertDefaultRowMarker": True}, {"Encoding": "ascii"},
              "csv", "ascii"),
}


def encode_rows(properties, rows, with_marker=True):
    """A small independent writer for the test: quote when needed, escape per the format."""
    sep = properties.get("ColumnSeparator", ",")
    eol = properties.get("RowSeparator", "\r\n")
    quote = properties.get("QuoteCharacter", '"')
    escape = properties.get("EscapeCharacter", "\\")
    null = properties.get("NullValue", "")

    def field(value):
        if value is None:
            return null
        text = str(value)
        if quote and any(c in text for c in (sep, quote, "\r", "\n", escape or quote)):
            inner = text.replace(escape, escape + escape) if escape and escape != quote else text
            inner = inner.replace(quote, (escape or quote) + quote)
            return quote + inner + quote
        return text

    names = ["id", "name"] + ([M] if with_marker else [])
    lines = [sep.join(names)] + [sep.join(field(row.get(n)) for n in names) for row in rows]
    return eol.join(lines) + eol


def compress(data: bytes, suffix: str) -> bytes:
    if suffix.endswith(".gz"):
        return gzip.compress(data)
    if suffix.endswith(".zst"):
        return pa.Codec("zstd").compress(data, asbytes=True)
    if suffix.endswith(".snappy"):
        return bytes(cramjam.snappy.compress(data))
    return data


def test_every_delimited_option_mirrors_like_the_reference(zone, service):
    special = {"Comma": "a, \"b\"\nc", "Semicolon": "x;y", "Pipe": "it's|here",
               "Tab": "a\tb / c", "Doubled": 'say "hi"', "NoQuote": "plain text",
               "Latin": "café", "Windows": "naïve €", "Wide": "日本", "Ascii": "ascii"}
    expected = {}
    for folder, (extras, properties, suffix, encoding) in FORMATS.items():
        path = zone.root / folder
        path.mkdir(parents=True)
        (path / "_metadata.json").write_text(json.dumps({
            "keyColumns": ["id"], **extras, "FileFormatTypeProperties": properties}))
        upsert = extras.get("isUpsertDefaultRowMarker", False)
        files = [[{"id": 1, "name": special[folder]}, {"id": 2, "name": None}],
                 [{"id": 2, "name": "two", M: 1}, {"id": 3, "name": "three", M: 0},
                  {"id": 1, "name": None, M: 2}]]
        if folder == "NoQuote":
            files[0][1]["name"] = "null free"
        for sequence, rows in enumerate(files, 1):
            text = encode_rows(properties, rows, with_marker=sequence == 2)
            data = text.encode(encoding or "utf-8")
            (path / f"{sequence:020d}.{suffix}").write_bytes(compress(data, suffix))
        reference = apply_changes(files, ["id"], default_marker=4 if upsert else 0)
        expected[folder.lower()] = [{"id": str(row["id"]), "name": row["name"]}
                                    for row in reference]
    statuses = {status.table: status for status in service.run()}
    for table, rows in expected.items():
        assert statuses[table].status == "replicating", statuses[table].error
        assert mirrored_rows(service.settings.warehouse, "dbo", table) == as_multiset(rows), table
