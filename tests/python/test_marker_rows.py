"""An invalid `__rowMarker__` names its row as the docs do: a Parquet file's row counted from 1,
a delimited file's line (the header is line 1, line breaks inside quoted values count)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lakemirror.landing import discover_tables
from lakemirror.landing.delimited.lines import row_line
from lakemirror.reference import ROW_MARKER
from lakemirror.staging import Warehouse, ingest_table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (ROW_MARKER, pa.int32())])


def failure(zone, tmp_path):
    [table] = discover_tables(zone.root)
    result = ingest_table(table, Warehouse(tmp_path / "warehouse"))
    assert (result.status, result.error_type) == ("failed", "RowMarkerError"), result.error
    return result.error


@pytest.mark.parametrize("keys, marker, words", [
    (["id"], 3, "row 3 has __rowMarker__=3"),
    (None, 1, "row 3 has __rowMarker__=1, but the table has no keyColumns"),
])
def test_a_parquet_row_is_counted_from_one(zone, tmp_path, keys, marker, words):
    zone.table("T", keys)
    zone.write("T", 1, [{"id": 1, "v": "a", ROW_MARKER: 0}, {"id": 2, "v": "b", ROW_MARKER: 0},
                        {"id": 3, "v": "c", ROW_MARKER: marker}], SCHEMA)
    assert words in failure(zone, tmp_path)


@pytest.mark.parametrize("keys, marker, words", [
    (["id"], 7, "line 5 has __rowMarker__=7"),
    (None, 2, "line 5 has __rowMarker__=2, but the table has no keyColumns"),
])
def test_a_delimited_row_is_named_by_its_line(zone, tmp_path, keys, marker, words):
    folder = zone.root / "Csv"
    folder.mkdir(parents=True)
    metadata = {"FileFormat": "CSV", "SchemaDefinition": {"Columns": [
        {"Name": "id", "DataType": "Int64"}, {"Name": "note", "DataType": "String"}]}}
    (folder / "_metadata.json").write_text(json.dumps({**metadata, "keyColumns": keys}
                                                      if keys else metadata))
    (folder / "00000000000000000001.csv").write_bytes(
        b'id,note,__rowMarker__\r\n1,"two\r\nlines",0\r\n2,x,0\r\n3,y,' + str(marker).encode()
        + b"\r\n")
    assert words in failure(zone, tmp_path)


def test_a_line_counts_the_breaks_of_earlier_batches_and_their_nulls():
    first = pa.record_batch({"id": [1, 2], "note": ["a\nb", None]})
    second = pa.record_batch({"id": [3, 4], "note": ["c\r\nd\re", "f\ng"]})
    assert row_line([first, second], 0, None) == 2
    assert row_line([first, second], 3, "\\N") == 2 + 3 + 1 + 2
    assert row_line([first, second], 3, "N\nA") == 2 + 3 + 1 + 2 + 1
