"""Schema evolution of staging tables (no dbt): added, missing, widened and changed columns,
and incarnations of table folders."""

import shutil

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.landing import discover_tables
from lakemirror.landing.incarnation import MARKER, read_incarnation
from lakemirror.reference import ROW_MARKER
from lakemirror.run.dbt import invoke_dbt
from lakemirror.run.log import RunLog
from lakemirror.run.retire import drop_retired
from lakemirror.service import RunSettings
from lakemirror.staging import Warehouse, ingest_table
from lakemirror.staging.evolution import delta_type_name
from lakemirror.staging.lifecycle import drop_table_data, find_retirements

from conftest import copy_project

M = ROW_MARKER


def schema(*fields):
    return pa.schema([*fields, (M, pa.int32())])


def ingest(zone, tmp_path):
    [result] = [ingest_table(table, Warehouse(tmp_path / "warehouse"))
                for table in discover_tables(zone.root)]
    return result


def staged_table(tmp_path, table="t"):
    return DeltaTable(str(tmp_path / "warehouse/_lakemirror/staging/dbo" / table))


def staged_rows(tmp_path, table="t"):
    rows = staged_table(tmp_path, table).to_pyarrow_table().sort_by("_lm_position").to_pylist()
    return [{name: value for name, value in row.items() if name != "_lm_position"}
            for row in rows]


def staged_types(tmp_path, table="t"):
    arrow = pa.schema(staged_table(tmp_path, table).schema().to_arrow())
    return {field.name: delta_type_name(field.type) for field in arrow}


def test_new_column_is_added_and_missing_column_reads_null(zone, tmp_path):
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "a": "x", M: 0}], schema(("id", pa.int64()), ("a", pa.string())))
    zone.write("T", 2, [{"id": 2, "b": 2.5, M: 0}], schema(("id", pa.int64()), ("b", pa.float64())))
    result = ingest(zone, tmp_path)
    assert (result.status, result.last_sequence) == ("replicating", 2), result.error
    assert staged_rows(tmp_path) == [{"id": 1, "a": "x", M: 0, "b": None},
                                     {"id": 2, "a": None, M: 0, "b": 2.5}]


@pytest.mark.parametrize("narrow, wide, big", [
    (pa.int8(), pa.int16(), 30_000),
    (pa.int16(), pa.int32(), 2_000_000),
    (pa.int32(), pa.int64(), 3_000_000_000),
    (pa.float32(), pa.float64(), 1e300),
])
def test_a_wider_type_rewrites_staging_and_a_narrower_one_is_cast_up(zone, tmp_path, narrow,
                                                                    wide, big):
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": 7, M: 0}], schema(("id", pa.int64()), ("v", narrow)))
    zone.write("T", 2, [{"id": 2, "v": big, M: 0}], schema(("id", pa.int64()), ("v", wide)))
    zone.write("T", 3, [{"id": 3, "v": 8, M: 0}], schema(("id", pa.int64()), ("v", narrow)))
    result = ingest(zone, tmp_path)
    assert (result.status, result.last_sequence) == ("replicating", 3), result.error
    assert [row["v"] for row in staged_rows(tmp_path)] == [7, big, 8]
    assert staged_types(tmp_path)["v"] == delta_type_name(wide)
    assert staged_table(tmp_path).history(1)[0]["lakemirror.sequence"] == "3"


def test_a_null_typed_column_waits_for_its_first_real_type(zone, tmp_path):
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "n": None, M: 0}], schema(("id", pa.int64()), ("n", pa.null())))
    zone.write("T", 2, [{"id": 2, "n": 5, M: 0}], schema(("id", pa.int64()), ("n", pa.int64())))
    zone.write("T", 3, [{"id": 3, "n": None, M: 0}], schema(("id", pa.int64()), ("n", pa.null())))
    result = ingest(zone, tmp_path)
    assert result.status == "replicating", result.error
    assert [row["n"] for row in staged_rows(tmp_path)] == [None, 5, None]
    assert staged_types(tmp_path)["n"] == "long"


def test_type_change_fails_the_table_and_stages_nothing_of_the_file(zone, tmp_path):
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": 1, M: 0}], schema(("id", pa.int64()), ("v", pa.int64())))
    zone.write("T", 2, [{"id": 2, "v": "two", M: 0}], schema(("id", pa.int64()), ("v", pa.string())))
    result = ingest(zone, tmp_path)
    assert (result.status, result.error_type, result.last_sequence) == (
        "failed", "SchemaChangeError", 1)
    assert "column 'v' changed type from long to string" in result.error
    assert "00000000000000000002.parquet" in result.error and "recreate" in result.error
    assert len(staged_rows(tmp_path)) == 1


def test_wide_to_narrow_across_families_is_a_type_change(zone, tmp_path):
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": 1, M: 0}], schema(("id", pa.int64()), ("v", pa.int64())))
    zone.write("T", 2, [{"id": 2, "v": 1.5, M: 0}], schema(("id", pa.int64()), ("v", pa.float64())))
    result = ingest(zone, tmp_path)
    assert result.error_type == "SchemaChangeError" and "from long to double" in result.error


def test_missing_non_nullable_column_fails(zone, tmp_path):
    zone.table("T", ["id"])
    required = pa.schema([("id", pa.int64()), pa.field("r", pa.string(), nullable=False),
                          (M, pa.int32())])
    zone.write("T", 1, [{"id": 1, "r": "x", M: 0}], required)
    zone.write("T", 2, [{"id": 2, M: 0}], schema(("id", pa.int64())))
    result = ingest(zone, tmp_path)
    assert result.error_type == "SchemaChangeError", result.error
    assert "column 'r' is declared non-nullable but is missing" in result.error


def test_columns_with_spaces_and_punctuation_are_staged(zone, tmp_path):
    names = ["first name", "a,b;c", "x.y", "Größe", "c=d", "(p)"]
    zone.table("T", ["first name"])
    fields = [(name, pa.string()) for name in names]
    zone.write("T", 1, [{**{name: name for name in names}, M: 0}], schema(*fields))
    result = ingest(zone, tmp_path)
    assert result.status == "replicating", result.error
    assert staged_rows(tmp_path) == [{**{name: name for name in names}, M: 0}]


def test_folder_is_marked_and_a_recreated_folder_is_found(zone, tmp_path):
    folder = zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, M: 0}], schema(("id", pa.int64())))
    ingest(zone, tmp_path)
    incarnation = read_incarnation(folder)
    assert incarnation and staged_table(tmp_path).history(1)[0]["lakemirror.incarnation"] == \
        incarnation
    warehouse = Warehouse(tmp_path / "warehouse")
    assert find_retirements(discover_tables(zone.root), warehouse) == []

    (folder / MARKER).unlink()  # what deleting and creating the folder again leaves
    [retirement] = find_retirements(discover_tables(zone.root), warehouse)
    assert (retirement.qualified_name, retirement.reason) == ("dbo.t", "recreated")
    result = ingest(zone, tmp_path)
    assert (result.status, result.error_type) == ("failed", "MetadataError")
    assert "deleted and created again" in result.error

    drop_table_data(warehouse, retirement)
    assert not staged_table_exists(tmp_path)
    result = ingest(zone, tmp_path)
    assert result.status == "replicating" and read_incarnation(folder) != incarnation


def staged_table_exists(tmp_path):
    return DeltaTable.is_deltatable(str(tmp_path / "warehouse/_lakemirror/staging/dbo/t"))


def test_deleted_folder_is_found(zone, tmp_path):
    folder = zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, M: 0}], schema(("id", pa.int64())))
    ingest(zone, tmp_path)
    shutil.rmtree(folder)
    retirements = find_retirements(discover_tables(zone.root), Warehouse(tmp_path / "warehouse"))
    assert [(r.qualified_name, r.reason) for r in retirements] == [("dbo.t", "deleted")]


def test_an_empty_landing_zone_drops_nothing(zone, tmp_path):
    folder = zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, M: 0}], schema(("id", pa.int64())))
    ingest(zone, tmp_path)
    shutil.rmtree(folder)
    messages = []
    settings = RunSettings.given(zone.root, tmp_path / "warehouse",
                                 copy_project(tmp_path / "project"))
    assert drop_retired(settings, RunLog(messages.append), invoke_dbt,
                        discover_tables(zone.root)) == []
    assert staged_table_exists(tmp_path)
    assert any("holds no table folder" in message for message in messages)
