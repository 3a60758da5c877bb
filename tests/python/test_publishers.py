"""Change files as real publishers write them, each written here by code (no network) and
mirrored exactly: the contract's published delimited-text example, `_metadata.json` in other
casings, CSV without FileFormat, pandas `to_parquet` (tz-aware timestamps, Decimal precision
drifting between files, index columns), duckdb `COPY ... TO parquet`, a CDC tool's `.state/`
folder, and GUID-named files with LastUpdateTimeFileDetection, some still being written.

One landing zone holds every shape, mirrored through dbt in two runs (initial files, then
changes), so the whole module costs two builds; each test checks one table against the
reference model applied to the values the publisher meant, converted by the documented rules."""

from __future__ import annotations

import decimal
import gzip
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from lakemirror.delta.rows import read_table
from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import Zone
from zone_kinds import WITH_AZURITE, Published

pd = pytest.importorskip("pandas", reason="pandas is a dev dependency (pip install -e '.[dev]')")
duckdb = pytest.importorskip("duckdb", reason="duckdb is a dev dependency")

pytestmark = pytest.mark.slow
M = ROW_MARKER
D = decimal.Decimal
UTC = timezone.utc

# The delimited-text example of Fabric's "Open mirroring landing zone requirements and format"
# page: its keys and values as published, with its one JSON syntax error (an unescaped
# backslash, "EscapeCharacter": "\") written as the backslash it means.
CONTRACT_EXAMPLE = r"""{
   "KeyColumns": [ "id" ],
   "ConditionalUpdateColumn": "seqNum",
   "SchemaDefinition": {
      "Columns": [
         { "Name": "id", "DataType": "Int32" },
         { "Name": "name", "DataType": "String", "IsNullable": true },
         { "Name": "age", "DataType": "Int32", "IsNullable": true },
         { "Name": "seqNum", "DataType": "Int64", "IsNullable": false },
         { "Name": "lastModified", "DataType": "DateTime" }
      ]
   },
   "FileFormat": "DelimitedText",
   "FileExtension": "tsv",
   "FileFormatTypeProperties": {
      "FirstRowAsHeader": true,
      "RowSeparator": "\r\n",
      "ColumnSeparator": "\t",
      "QuoteCharacter": "'",
      "EscapeCharacter": "\\",
      "NullValue": "N/A",
      "Encoding": "UTF-8"
   }
}"""
CONTRACT_COLUMNS = ("id", "name", "age", "seqNum", "lastModified")
CONTRACT_FILES = [
    [{"id": 1, "name": "Ann", "age": 30, "seqNum": 1, "lastModified": datetime(2024, 1, 1, 9),
      M: 0},
     {"id": 2, "name": "Bo\tb 'the' ox", "age": None, "seqNum": 1,
      "lastModified": datetime(2024, 1, 1, 9, 30, 0, 250000), M: 0}],
    [{"id": 1, "name": "Ann B", "age": 31, "seqNum": 3, "lastModified": datetime(2024, 2, 1),
      M: 1},
     {"id": 1, "name": "stale", "age": 99, "seqNum": 2, "lastModified": datetime(2024, 1, 15),
      M: 4},  # older than seqNum 3: skipped
     {"id": 2, "name": None, "age": None, "seqNum": 5, "lastModified": None, M: 2},
     {"id": 3, "name": "N/A is null", "age": 7, "seqNum": 1,
      "lastModified": datetime(2024, 3, 1), M: 4}],
]


def tsv(rows: list[dict]) -> bytes:
    """Rows as the example's TSV: CRLF rows, ' quotes, \\ escapes, N/A for NULL."""
    def field(value) -> str:
        if value is None:
            return "N/A"
        text = value.isoformat(sep=" ") if isinstance(value, datetime) else str(value)
        if any(c in text for c in "\t\r\n'\\") or text == "N/A":
            return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return text
    lines = ["\t".join([*CONTRACT_COLUMNS, M])]
    lines += ["\t".join(field(row[name]) for name in [*CONTRACT_COLUMNS, M]) for row in rows]
    return ("\r\n".join(lines) + "\r\n").encode()


# -- pandas ------------------------------------------------------------------------------------

NEW_YORK = "America/New_York"
PANDAS_FILES = [  # amounts drift from decimal(4,2) to decimal(7,2) to decimal(9,4)
    {"id": [5, 3, 1], "amount": [D("1.50"), D("22.25"), None],
     "at": ["2024-03-10 03:30", "2024-11-03 08:30", "2024-06-01 12:00"], M: [0, 0, 0]},
    {"id": [3, 7], "amount": [D("12345.67"), D("0.01")],
     "at": ["2024-12-24 18:00", "2025-01-01 00:00"], M: [1, 4]},
    {"id": [5, 7], "amount": [D("1.2345"), None], "at": ["2025-02-01 00:00", None], M: [4, 2]},
]


def pandas_frame(data: dict):
    frame = pd.DataFrame({"id": data["id"], "amount": data["amount"],
                          "at": pd.to_datetime(data["at"]).tz_localize(NEW_YORK),
                          M: data[M]})
    return frame.set_index(pd.Index([10 * i for i in data["id"]]))  # not a RangeIndex: stored


def pandas_expected(data: dict) -> list[dict]:
    """The rows pandas was given, timestamps as the same instant in UTC, no index."""
    instants = [None if at is None else
                pd.Timestamp(at).tz_localize(NEW_YORK).tz_convert("UTC").to_pydatetime()
                for at in data["at"]]
    return [{"id": i, "amount": a, "at": t, M: m}
            for i, a, t, m in zip(data["id"], data["amount"], instants, data[M])]


def write_pandas_2_shape(path: Path, data: dict) -> None:
    """What pandas 2 writes for the same frame: nanosecond timestamps in the frame's zone,
    the index as `__index_level_0__` after every column, named in the pandas metadata."""
    frame = pandas_frame(data)
    table = pa.Table.from_pandas(frame, preserve_index=True)
    assert table.column_names[-1] == "__index_level_0__"
    at = table.schema.get_field_index("at")
    table = table.set_column(at, "at", table["at"].cast(pa.timestamp("ns", tz=NEW_YORK)))
    pq.write_table(table, path)


KEYED_FILES = [  # ids evenly spaced (pandas stores a range), then not (a column)
    {"id": [1, 2, 3], "v": ["a", "b", "c"], M: [0, 0, 0]},
    {"id": [3, 7, 1], "v": ["c2", "g", None], M: [1, 0, 2]},
]


# -- duckdb ------------------------------------------------------------------------------------

DUCKDB_FILES = [
    """SELECT * FROM (VALUES
         (1::BIGINT, 18446744073709551615::UBIGINT, TIMESTAMPTZ '2024-01-01 10:00:00+02',
          TIME '12:34:56.789', 12.345::DECIMAL(18,3),
          '0f8fad5b-d9cb-469f-a165-70867728950e'::UUID, 'a'::ENUM('a', 'b'), [1, 2],
          {'k': 1}, MAP {'x': 1}, 0::INTEGER),
         (2::BIGINT, 7::UBIGINT, NULL, NULL, NULL, NULL, 'b'::ENUM('a', 'b'), [], NULL, NULL,
          0::INTEGER))
       AS t(id, big, happened, clock, price, uid, kind, items, info, attrs, __rowMarker__)""",
    """SELECT * FROM (VALUES
         (2::BIGINT, 9::UBIGINT, TIMESTAMPTZ '2024-07-01 00:00:00-07', TIME '00:00:00',
          1.5::DECIMAL(18,3), '7c9e6679-7425-40de-944b-e07fc1f90ae7'::UUID,
          'a'::ENUM('a', 'b'), [3], {'k': 2}, MAP {'y': 2}, 1::INTEGER))
       AS t(id, big, happened, clock, price, uid, kind, items, info, attrs, __rowMarker__)""",
]
DUCKDB_EXPECTED = [
    [{"id": 1, "big": D(18446744073709551615), "happened": datetime(2024, 1, 1, 8, tzinfo=UTC),
      "clock": "12:34:56.789000", "price": D("12.345"),
      "uid": "0f8fad5b-d9cb-469f-a165-70867728950e", "kind": "a", "items": [1, 2],
      "info": {"k": 1}, "attrs": [("x", 1)], M: 0},
     {"id": 2, "big": D(7), "happened": None, "clock": None, "price": None, "uid": None, "kind": "b",
      "items": [], "info": None, "attrs": None, M: 0}],
    [{"id": 2, "big": D(9), "happened": datetime(2024, 7, 1, 7, tzinfo=UTC), "clock": "00:00:00.000000",
      "price": D("1.500"), "uid": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "kind": "a",
      "items": [3], "info": {"k": 2}, "attrs": [("y", 2)], M: 1}],
]


# -- the zone ----------------------------------------------------------------------------------

def settled(path: Path, seconds_ago: float) -> None:
    moment = time.time() - seconds_ago
    os.utime(path, (moment, moment))


def publish(zone, phase: int) -> None:
    """Write each publisher's files of one phase (0: initial, 1: changes)."""
    root = zone.root
    contract = root / "Contract"
    contract.mkdir(exist_ok=True)
    (contract / "_metadata.json").write_text(CONTRACT_EXAMPLE)
    (contract / f"{phase + 1:020d}.tsv").write_bytes(tsv(CONTRACT_FILES[phase]))

    plain = root / "PlainCsv"  # keys only: the format comes from the files' names
    plain.mkdir(exist_ok=True)
    (plain / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    body = [b"id,name,__rowMarker__\r\n1,a,0\r\n2,b,0\r\n", b"id,name,__rowMarker__\r\n2,,2\r\n"]
    name = f"{phase + 1:020d}.csv" + (".gz" if phase else "")
    (plain / name).write_bytes(gzip.compress(body[phase]) if phase else body[phase])

    for folder, writer in (("Pandas", _pandas_writer), ("Pandas2", write_pandas_2_shape)):
        (root / folder).mkdir(exist_ok=True)
        (root / folder / "_metadata.json").write_text('{"keyColumns": ["id"]}')
        for index in ([0] if phase == 0 else [1, 2]):
            writer(root / folder / f"{index + 1:020d}.parquet", PANDAS_FILES[index])

    keyed = root / "PandasKeyed"  # df.set_index("id"): the key lives in the index
    keyed.mkdir(exist_ok=True)
    (keyed / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    frame = pd.DataFrame(KEYED_FILES[phase]).set_index("id")
    frame.to_parquet(keyed / f"{phase + 1:020d}.parquet")

    mariadb = root / "shop.schema" / "DuckOrders"
    mariadb.mkdir(parents=True, exist_ok=True)
    (root / ".state").mkdir(exist_ok=True)  # the CDC sample's own state, at the zone root
    (root / ".state" / "binlog.json").write_text('{"file": "mysql-bin.000003", "pos": 4}')
    (mariadb / "_metadata.json").write_text('{"keyColumns": ["id"]}')
    duckdb.sql(f"COPY ({DUCKDB_FILES[phase]}) TO '{mariadb / f'{phase + 1:020d}.parquet'}' "
               "(FORMAT parquet)")

    guid = root / "GuidNamed"
    guid.mkdir(exist_ok=True)
    (guid / "_metadata.json").write_text(json.dumps(
        {"keycolumns": ["id"], "FILEDETECTIONSTRATEGY": "LastUpdateTimeFileDetection"}))
    schema = pa.schema([("id", pa.int32()), ("v", pa.string()), (M, pa.int32())])
    for name, rows, age in GUID_FILES[phase]:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), guid / name)
        settled(guid / name, age)
    if phase == 0:
        (guid / IN_FLIGHT).write_bytes(b"")  # being written: the table waits for it


def _pandas_writer(path: Path, data: dict) -> None:
    pandas_frame(data).to_parquet(path)


IN_FLIGHT = "e1a7c0de-0000-4000-8000-000000000003.parquet"
GUID_FILES = [
    [("9b0d3f5e-1111-4c1e-9f00-000000000002.parquet", [{"id": 1, "v": "b", M: 1}], 50),
     ("0c2a7d11-2222-4d2e-8e00-000000000001.parquet",
      [{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "x", M: 0}], 100)],
    [(IN_FLIGHT, [{"id": 2, "v": "y", M: 1}, {"id": 3, "v": "z", M: 0}], 10)],
]


@pytest.fixture(scope="module", params=WITH_AZURITE)
def mirrored(request, tmp_path_factory):
    """The zone after the initial files and after the changes, and each run's statuses; the
    zone on disk and in Azurite."""
    root = tmp_path_factory.mktemp("publishers")
    server = None if request.param == "local" else request.getfixturevalue(
        f"{request.param}_server")
    published = Published(Zone(root / "LandingZone"), server)
    zone, service = published.zone, published.service(root)
    publish(zone, 0)
    first = {status.table: status for status in service.run()}
    publish(zone, 1)
    second = {status.table: status for status in service.run()}
    return service, first, second


def rows(service, schema: str, table: str) -> dict:
    """The mirrored table's rows by id, without lakemirror's columns."""
    stored = read_table(service.settings.warehouse / schema / table).to_pylist()
    return {row["id"]: {k: v for k, v in row.items() if not k.startswith("_lm_")}
            for row in stored}


def mirrored_types(service, schema: str, table: str) -> dict:
    arrow = pa.schema(DeltaTable(str(service.settings.warehouse / schema / table)
                                 ).schema().to_arrow())
    return {field.name: field.type for field in arrow}


def reference(files, **options) -> dict:
    """The reference model's rows by id, without the marker."""
    return {row["id"]: {k: v for k, v in row.items() if k != M}
            for row in apply_changes(files, ["id"], **options)}


def healthy(statuses, table: str, last_sequence: int) -> None:
    status = statuses[table]
    assert (status.status, status.last_sequence) == ("replicating", last_sequence), status.error


def test_the_contracts_delimited_example_mirrors_as_published(mirrored):
    service, first, second = mirrored
    healthy(first, "contract", 1)
    healthy(second, "contract", 2)
    assert rows(service, "dbo", "contract") == reference(CONTRACT_FILES,
                                                         conditional_column="seqNum")
    types = mirrored_types(service, "dbo", "contract")
    assert (types["id"], types["seqNum"]) == (pa.int32(), pa.int64())
    assert types["lastModified"] == pa.timestamp("us")  # DateTime is timestamp_ntz


def test_csv_files_without_file_format_mirror_as_csv(mirrored):
    service, first, second = mirrored
    healthy(second, "plaincsv", 2)
    assert rows(service, "dbo", "plaincsv") == {"1": {"id": "1", "name": "a"}}


@pytest.mark.parametrize("table", ["pandas", "pandas2"])
def test_pandas_files_mirror_with_utc_instants_widened_decimals_and_no_index(mirrored, table):
    service, first, second = mirrored
    healthy(first, table, 1)
    healthy(second, table, 3)
    expected = reference([pandas_expected(data) for data in PANDAS_FILES])
    assert rows(service, "dbo", table) == expected
    types = mirrored_types(service, "dbo", table)
    assert types["amount"] == pa.decimal128(9, 4)
    assert types["at"] == pa.timestamp("us", tz="UTC")
    assert "__index_level_0__" not in types


def test_a_pandas_index_holding_the_key_is_mirrored_as_the_key_column(mirrored):
    service, first, second = mirrored
    healthy(second, "pandaskeyed", 2)
    files = [[dict(zip(data, values)) for values in zip(*data.values())] for data in KEYED_FILES]
    assert rows(service, "dbo", "pandaskeyed") == reference(files)


def test_duckdb_copy_files_mirror_with_the_documented_types(mirrored):
    service, first, second = mirrored
    healthy(first, "duckorders", 1)
    healthy(second, "duckorders", 2)
    assert rows(service, "shop", "duckorders") == reference(DUCKDB_EXPECTED)


def test_a_cdc_tools_hidden_state_folder_is_ignored_with_a_warning(mirrored):
    service, first, second = mirrored
    assert ".state" not in {status.table for status in [*first.values(), *second.values()]}
    assert not any(status.unhealthy for status in second.values())
    [warning] = service.run_warnings
    assert "'.state'" in warning


def test_guid_named_files_apply_by_update_time_and_wait_for_one_in_flight(mirrored):
    service, first, second = mirrored
    status = first["guidnamed"]
    assert (status.status, status.last_sequence) == ("waiting", 2)
    assert IN_FLIGHT in status.error and "0 bytes" in status.error
    healthy(second, "guidnamed", 3)
    ordered = [GUID_FILES[0][1][1], GUID_FILES[0][0][1], GUID_FILES[1][0][1]]  # by mtime
    assert rows(service, "dbo", "guidnamed") == reference(ordered)
