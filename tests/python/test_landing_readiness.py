"""What publishers leave in a landing zone besides complete change files: files still being
written (0 bytes, or within the settle window), hidden entries (`.state/`), partition folders,
and the warnings a run reports about them, per table and per run, in its JSON."""

import json
import os
import re
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from lakemirror.cli.main import cli
from lakemirror.errors import ConfigError
from lakemirror.landing import discover_tables
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.environment import SETTLE_SECONDS, read_settings
from lakemirror.staging import Warehouse, ingest_table

from conftest import as_multiset, copy_project, mirrored_rows

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
FIRST, SECOND = "00000000000000000001.parquet", "00000000000000000002.parquet"
CSV = b"id,v,__rowMarker__\r\n1,a,0\r\n"


def parquet_bytes(rows) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), sink)
    return sink.getvalue().to_pybytes()


def ingest(zone_root, warehouse, settle_seconds=0.0):
    [table] = discover_tables(zone_root)
    return ingest_table(table, Warehouse(warehouse), settle_seconds=settle_seconds)


def staged_ids(warehouse):
    staged = DeltaTable(str(Warehouse(warehouse).staging_path("dbo", "t")))
    return staged.to_pyarrow_table().sort_by("_lm_position")["id"].to_pylist()


@pytest.fixture
def table_folder(zone):
    return zone.table("T", ["id"])


def age(path, seconds):
    past = time.time() - seconds
    os.utime(path, (past, past))


# -- files in flight ---------------------------------------------------------------------------

def test_a_zero_byte_file_waits_naming_it_and_is_staged_once_written(zone, table_folder,
                                                                       tmp_path):
    (table_folder / FIRST).write_bytes(parquet_bytes([{"id": 1, "v": "a", M: 0}]))
    (table_folder / SECOND).write_bytes(b"")
    age(table_folder / SECOND, 3600)  # however old: an empty file is never complete
    result = ingest(zone.root, tmp_path / "wh")
    assert (result.status, result.last_sequence, result.files_pending) == ("waiting", 1, 1)
    assert SECOND in result.error and "0 bytes" in result.error
    (table_folder / SECOND).write_bytes(parquet_bytes([{"id": 2, "v": "b", M: 0}]))
    result = ingest(zone.root, tmp_path / "wh")
    assert (result.status, result.last_sequence) == ("replicating", 2), result.error
    assert staged_ids(tmp_path / "wh") == [1, 2]


def test_files_after_one_in_flight_wait_for_it(zone, table_folder, tmp_path):
    (table_folder / FIRST).write_bytes(b"")
    (table_folder / SECOND).write_bytes(parquet_bytes([{"id": 2, "v": "b", M: 0}]))
    result = ingest(zone.root, tmp_path / "wh")
    assert (result.status, result.last_sequence, result.files_pending) == ("waiting", 0, 2)


def test_a_complete_parquet_file_is_staged_at_once_within_the_settle_window(
        zone, table_folder, tmp_path):
    (table_folder / FIRST).write_bytes(parquet_bytes([{"id": 1, "v": "a", M: 0}]))
    result = ingest(zone.root, tmp_path / "wh", settle_seconds=600)
    assert (result.status, result.last_sequence) == ("replicating", 1), result.error


def test_a_truncated_parquet_file_waits_within_the_window_then_fails(zone, table_folder,
                                                                       tmp_path):
    (table_folder / FIRST).write_bytes(parquet_bytes([{"id": 1, "v": "a", M: 0}])[:-30])
    result = ingest(zone.root, tmp_path / "wh", settle_seconds=600)
    assert result.status == "waiting" and "settle window" in result.error
    assert FIRST in result.error and SETTLE_SECONDS in result.error
    age(table_folder / FIRST, 601)
    result = ingest(zone.root, tmp_path / "wh", settle_seconds=600)
    assert (result.status, result.error_type) == ("failed", "UnreadableFileError"), result.error


def test_a_delimited_file_is_staged_once_it_settled(zone, tmp_path):
    folder = zone.table("T", None)
    (folder / "00000000000000000001.csv").write_bytes(CSV)
    result = ingest(zone.root, tmp_path / "wh", settle_seconds=600)
    assert result.status == "waiting" and "00000000000000000001.csv" in result.error
    age(folder / "00000000000000000001.csv", 601)
    result = ingest(zone.root, tmp_path / "wh", settle_seconds=600)
    assert (result.status, result.last_sequence) == ("replicating", 1), result.error


def test_guid_named_files_wait_while_in_flight_by_update_time(zone, tmp_path):
    folder = zone.table("T", None)
    (folder / "_metadata.json").write_text(json.dumps(
        {"keyColumns": ["id"], "fileDetectionStrategy": "LastUpdateTimeFileDetection"}))
    done, writing = "3f2504e0-4f89-11d3-9a0c-0305e82c3301.parquet", "9b2c.parquet"
    (folder / done).write_bytes(parquet_bytes([{"id": 1, "v": "a", M: 0}]))
    age(folder / done, 10)
    (folder / writing).write_bytes(b"")
    result = ingest(zone.root, tmp_path / "wh")
    assert (result.status, result.last_sequence, result.files_pending) == ("waiting", 1, 1)
    assert writing in result.error
    (folder / writing).write_bytes(parquet_bytes([{"id": 1, "v": "b", M: 1}]))
    result = ingest(zone.root, tmp_path / "wh")
    assert (result.status, result.last_sequence) == ("replicating", 2), result.error


def csv_text(rows) -> bytes:
    return ("id,v,__rowMarker__\r\n" + "".join(
        f"{row['id']},{row['v']},{row[M]}\r\n" for row in rows)).encode()


@pytest.mark.slow
def test_a_one_shot_run_waits_out_the_window_of_files_that_just_landed(zone, tmp_path):
    """An hourly job stages a file that changed just before it in this run, not the next."""
    folder = zone.table("T", ["id"])
    files = [[{"id": "1", "v": "a", M: 0}, {"id": "2", "v": "b", M: 0}],
             [{"id": "1", "v": "a2", M: 1}, {"id": "2", "v": "b", M: 2}]]
    for sequence, rows in enumerate(files, 1):
        (folder / f"{sequence:020d}.csv").write_bytes(csv_text(rows))
    result = CliRunner().invoke(cli, [
        "run", "--landing-zone", str(zone.root), "--warehouse", str(tmp_path / "wh"),
        "--project-dir", str(copy_project(tmp_path / "project"))],
        env={SETTLE_SECONDS: "1.5"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert re.search(r"waiting [01]\.\d s for 00000000000000000001\.csv to settle "
                     rf"\({SETTLE_SECONDS}=1\.5\)", result.output), result.output
    assert re.search(r"dbo\.t\s+T\s+replicating\s+2\s+1", result.output), result.output
    expected = [{k: v for k, v in row.items() if k != M} for row in apply_changes(files, ["id"])]
    assert mirrored_rows(tmp_path / "wh", "dbo", "t") == as_multiset(expected)


def test_a_file_still_changing_after_the_wait_keeps_its_table_waiting(zone, table_folder,
                                                                        tmp_path):
    (table_folder / "00000000000000000001.csv").write_bytes(CSV)
    waits = []

    def settle(settling):  # the publisher is still writing while the run waits
        waits.append(settling)
        (table_folder / "00000000000000000001.csv").write_bytes(CSV + b"2,b,0\r\n")

    [table] = discover_tables(zone.root)
    result = ingest_table(table, Warehouse(tmp_path / "wh"), settle=settle, settle_seconds=600)
    assert (result.status, result.last_sequence) == ("waiting", 0)
    assert "settle window" in result.error
    [waited] = waits  # once, for at most the window
    assert waited.path.name == "00000000000000000001.csv" and 599 < waited.seconds <= 600


@pytest.mark.parametrize("value", ["-1", "soon", "inf", "nan"])
def test_a_bad_settle_window_is_a_config_error(value):
    with pytest.raises(ConfigError, match=SETTLE_SECONDS):
        read_settings({SETTLE_SECONDS: value})


def test_the_settle_window_defaults_to_two_seconds():
    assert read_settings({}).settle_seconds == 2.0


# -- hidden entries, partition folders, warnings in the JSON -----------------------------------

def run_json(zone, tmp_path, *args):
    env = {"LAKEMIRROR_LANDING_ZONE": str(zone.root),
           "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh")}
    project = copy_project(tmp_path / "project")
    result = CliRunner().invoke(cli, ["ingest", "--json", "--project-dir", str(project), *args],
                                env=env)
    return result.exit_code, json.loads(result.stdout)


def test_hidden_entries_are_ignored_with_one_warning_and_exit_code_0(zone, table_folder,
                                                                       tmp_path):
    (zone.root / ".state").mkdir()
    (zone.root / ".state" / "binlog.pos").write_text("mysql-bin.000042:1234")
    (zone.root / ".lock").write_text("")
    (zone.root / "Sales.schema" / ".tmp").mkdir(parents=True)
    (table_folder / FIRST).write_bytes(parquet_bytes([{"id": 1, "v": "a", M: 0}]))
    (table_folder / ".00000000000000000002.parquet.crc").write_bytes(b"\x00" * 8)
    (table_folder / ".part-0001").mkdir()
    code, document = run_json(zone, tmp_path)
    assert code == 0
    [table] = document["tables"]
    assert (table["table"], table["status"], table["last_sequence"]) == ("t", "replicating", 1)
    [run_warning] = document["warnings"]
    assert "3 hidden entries" in run_warning
    assert all(name in run_warning for name in ("'.lock'", "'.state'", "'Sales.schema/.tmp'"))
    [table_warning] = table["warnings"]
    assert "2 hidden entries" in table_warning and "'.part-0001'" in table_warning


def test_unknown_metadata_keys_are_warnings_in_the_json_and_in_status(zone, tmp_path):
    folder = zone.table("T", None)
    (folder / "_metadata.json").write_text(json.dumps(
        {"KeyColumns": ["id"], "isPartitionEnabled": False}))
    (folder / FIRST).write_bytes(parquet_bytes([{"id": 1, "v": "a", M: 0}]))
    code, document = run_json(zone, tmp_path)
    assert code == 0 and document["warnings"] == []
    [table] = document["tables"]
    [warning] = table["warnings"]
    assert '"isPartitionEnabled" is ignored' in warning
    env = {"LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh")}
    status = json.loads(CliRunner().invoke(cli, ["status", "--json"], env=env).stdout)
    assert status["tables"][0]["warnings"] == [warning]
    text = CliRunner().invoke(cli, ["status"], env=env).stdout
    assert "isPartitionEnabled" in text


def test_partition_folders_fail_the_table_saying_they_are_not_supported(zone, tmp_path):
    folder = zone.table("T", ["id"])
    (folder / "_metadata.json").write_text(json.dumps(
        {"keyColumns": ["id"], "isPartitionEnabled": True,
         "fileDetectionStrategy": "LastUpdateTimeFileDetection"}))
    partition = folder / "Year=2024" / "Region=x"
    partition.mkdir(parents=True)
    (partition / "0b6f.parquet").write_bytes(parquet_bytes([{"id": 1, "v": "a", M: 0}]))
    code, document = run_json(zone, tmp_path)
    [table] = document["tables"]
    assert code == 1 and (table["status"], table["error_class"]) == ("failed", "user")
    assert "'Year=2024'" in table["error"]
    assert "partitioned landing folders are not supported" in table["error"]
    assert "Fix:" in table["error"]
    assert (partition / "0b6f.parquet").exists()


# -- _partnerEvents.json as the SDKs write it ---------------------------------------------------

@pytest.mark.parametrize("document, expected", [
    ({"partnerName": "Contoso", "sourceInfo": {"sourceType": "SQL", "sourceVersion": "2019",
                                               "additionalInformation": {"region": "eu"}}},
     ("Contoso", "SQL", "2019", '{"region": "eu"}')),
    ({"PartnerName": "Fabrikam", "SourceInfo": {"SourceType": "MongoDB", "SourceVersion": 7.0}},
     ("Fabrikam", "MongoDB", "7.0", None)),
    ({"partnerName": "hygge", "sourceInfo": {"sourceType": "mssql", "sourceVersion": None}},
     ("hygge", "mssql", None, None)),
    ({"partnerName": "MariaDB CDC", "sourceInfo": {"sourceType": "MariaDB",
                                                   "sourceVersion": 11}}, ("MariaDB CDC",
                                                                           "MariaDB", "11", None)),
    ({"partnerName": "bare"}, ("bare", None, None, None)),
])
def test_partner_events_in_every_sdk_shape_are_recorded(tmp_path, document, expected):
    from lakemirror.monitor import parse_partner_events

    path = tmp_path / "_partnerEvents.json"
    path.write_text(json.dumps(document))
    info = parse_partner_events(path)
    assert (info.partner_name, info.source_type, info.source_version,
            info.additional_information) == expected
