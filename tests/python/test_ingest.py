"""Landing zone → staging: discovery, ordering, gaps, bad files, file moves (no dbt)."""

import shutil

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemirror.errors import ConfigError
from lakemirror.landing import discover_tables
from lakemirror.reference import ROW_MARKER
from lakemirror.staging import Warehouse, ingest_table, register_relations

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (ROW_MARKER, pa.int32())])


def ingest_all(zone, tmp_path):
    warehouse = Warehouse(tmp_path / "warehouse")
    return {t.qualified_name: ingest_table(t, warehouse) for t in discover_tables(zone.root)}


def staged(tmp_path, schema, table):
    return DeltaTable(str(tmp_path / "warehouse/_lakemirror/staging" / schema / table)
                      ).to_pyarrow_table().sort_by("_lm_position").to_pylist()


def test_discovers_root_and_schema_folders_and_ignores_underscore_items(zone):
    zone.table("Customers", ["id"])
    zone.table("Sales.schema/Orders", ["id"])
    zone.table("_Hidden", ["id"])
    (zone.root / "_partnerEvents.json").write_text("{}")
    found = {(t.schema, t.name) for t in discover_tables(zone.root)}
    assert found == {("dbo", "customers"), ("sales", "orders")}


def test_missing_landing_zone_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        discover_tables(tmp_path / "nowhere")


def test_rows_keep_file_and_row_order_across_many_row_groups(zone, tmp_path):
    zone.table("T", ["id"])
    rows = [{"id": 1, "v": str(i), ROW_MARKER: 4} for i in range(200_000)]
    zone.write("T", 1, rows, SCHEMA, row_group_size=7_000)
    zone.write("T", 2, [{"id": 1, "v": "last", ROW_MARKER: 1}], SCHEMA)
    result = ingest_all(zone, tmp_path)["dbo.t"]
    assert (result.status, result.last_sequence, result.staged_rows) == ("replicating", 2, 200_001)
    values = [row["v"] for row in staged(tmp_path, "dbo", "t")]
    assert values == [str(i) for i in range(200_000)] + ["last"]


def test_gap_waits_naming_the_missing_file_and_later_files_wait(zone, tmp_path):
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", ROW_MARKER: 0}], SCHEMA)
    zone.write("T", 3, [{"id": 2, "v": "b", ROW_MARKER: 0}], SCHEMA)
    result = ingest_all(zone, tmp_path)["dbo.t"]
    assert result.status == "waiting" and result.last_sequence == 1
    assert "00000000000000000002.parquet" in result.error
    zone.write("T", 2, [{"id": 3, "v": "c", ROW_MARKER: 0}], SCHEMA)
    result = ingest_all(zone, tmp_path)["dbo.t"]
    assert result.status == "replicating" and result.last_sequence == 3
    assert [row["id"] for row in staged(tmp_path, "dbo", "t")] == [1, 3, 2]


def test_gap_in_a_delimited_table_names_the_file_with_its_own_extension(zone, tmp_path):
    folder = zone.root / "T"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(
        '{"keyColumns": ["id"], "FileFormat": "DelimitedText", "FileExtension": "csv"}')
    (folder / "00000000000000000001.csv").write_bytes(b"id,__rowMarker__\r\n1,0\r\n")
    (folder / "00000000000000000003.csv").write_bytes(b"id,__rowMarker__\r\n2,0\r\n")
    result = ingest_all(zone, tmp_path)["dbo.t"]
    assert result.status == "waiting"
    assert "waiting for missing file 00000000000000000002.csv" in result.error


def test_committed_files_move_except_the_newest(zone, tmp_path):
    folder = zone.table("T", ["id"])
    for sequence in (1, 2, 3):
        zone.write("T", sequence, [{"id": sequence, "v": "x", ROW_MARKER: 0}], SCHEMA)
    ingest_all(zone, tmp_path)
    assert sorted(p.name for p in folder.glob("*.parquet")) == ["00000000000000000003.parquet"]
    assert sorted(p.name for p in (folder / "_ProcessedFiles").iterdir()) == [
        "00000000000000000001.parquet", "00000000000000000002.parquet"]
    again = ingest_all(zone, tmp_path)["dbo.t"]
    assert again.staged_rows == 0 and again.last_sequence == 3


def test_file_without_marker_is_all_inserts(zone, tmp_path):
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a"}], pa.schema([("id", pa.int64()), ("v", pa.string())]))
    ingest_all(zone, tmp_path)
    assert [row[ROW_MARKER] for row in staged(tmp_path, "dbo", "t")] == [0]


@pytest.mark.parametrize("rows, schema, message", [
    ([{"id": 1, "v": "a", ROW_MARKER: 3}], SCHEMA, "__rowMarker__=3"),
    ([{ROW_MARKER: 0, "id": 1}],
     pa.schema([(ROW_MARKER, pa.int32()), ("id", pa.int64())]), "must be the last column"),
    ([{"v": "a", ROW_MARKER: 0}], pa.schema([("v", pa.string()), (ROW_MARKER, pa.int32())]),
     "columns ['id'] named in _metadata.json"),
])
def test_bad_file_fails_only_its_table_and_stays_in_place(zone, tmp_path, rows, schema, message):
    zone.table("Bad", ["id"])
    zone.table("Good", ["id"])
    bad = zone.write("Bad", 1, rows, schema)
    zone.write("Good", 1, [{"id": 1, "v": "a", ROW_MARKER: 0}], SCHEMA)
    results = ingest_all(zone, tmp_path)
    assert results["dbo.good"].status == "replicating"
    failed = results["dbo.bad"]
    assert failed.status == "failed" and message in failed.error
    assert "dbo.bad" in failed.error and str(bad) in failed.error and "Fix:" in failed.error
    assert bad.exists()
    assert not (tmp_path / "warehouse/_lakemirror/staging/dbo/bad/_delta_log").exists()


def test_corrupt_file_fails_with_file_named(zone, tmp_path):
    zone.table("T", ["id"])
    (zone.root / "T" / "00000000000000000001.parquet").write_bytes(b"PAR1 not really")
    result = ingest_all(zone, tmp_path)["dbo.t"]
    assert result.status == "failed" and "not a readable Parquet file" in result.error


def test_update_in_table_without_keys_fails_clearly(zone, tmp_path):
    zone.table("NoKeys", None)
    zone.write("NoKeys", 1, [{"id": 1, "v": "a", ROW_MARKER: 0},
                             {"id": 1, "v": "b", ROW_MARKER: 1}], SCHEMA)
    result = ingest_all(zone, tmp_path)["dbo.nokeys"]
    assert result.status == "failed"
    assert "no keyColumns" in result.error and "row 2 has" in result.error


def test_invalid_metadata_json_names_position(zone, tmp_path):
    folder = zone.table("T", None)
    (folder / "_metadata.json").write_text('{"keyColumns": [')
    result = ingest_all(zone, tmp_path)["dbo.t"]
    assert result.status == "failed" and "line 1" in result.error


def test_registry_adds_new_relations_once_and_forgets_deleted_tables(tmp_path):
    warehouse = Warehouse(tmp_path / "warehouse")
    kept, deleted = tmp_path / "warehouse/a/kept", tmp_path / "warehouse/a/deleted"
    for path in (kept, deleted):
        write_deltalake(str(path), pa.table({"x": [1]}))
    register_relations(warehouse, [("a", "kept", str(kept)), ("a", "deleted", str(deleted))])
    register_relations(warehouse, [("a", "kept", str(kept))])

    def registered():
        rows = DeltaTable(str(warehouse.relations_path)).to_pyarrow_table().to_pylist()
        return sorted(row["table_name"] for row in rows)

    assert registered() == ["deleted", "kept"]
    shutil.rmtree(deleted)
    register_relations(warehouse, [])
    assert registered() == ["kept"]
