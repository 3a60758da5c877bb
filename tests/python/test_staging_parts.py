"""Staged rows written as Parquet parts by pyarrow and committed in one Delta transaction:
the parts' statistics, a failed write leaving nothing behind, and a crash between a file's
added columns and its rows."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

import lakemirror.staging.parts as parts_module
from lakemirror.delta.rows import table_row_count
from lakemirror.landing import POSITION, discover_tables
from lakemirror.reference import ROW_MARKER
from lakemirror.staging import Warehouse, ingest_table
from lakemirror.staging.parts import write_parts

SCHEMA = pa.schema([pa.field(POSITION, pa.int64(), nullable=False), ("v", pa.string())])


def batches(count, rows=1_000, start=0):
    for index in range(count):
        first = start + index * rows
        yield pa.RecordBatch.from_pydict(
            {POSITION: list(range(first + rows - 1, first - 1, -1)),  # not in order in a batch
             "v": [f"row {n}" for n in range(first, first + rows)]}, schema=SCHEMA)


def test_parts_roll_over_and_each_add_action_counts_and_bounds_its_own_rows(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setattr(parts_module, "PART_BYTES", 20_000)  # a few batches per part
    actions = write_parts(str(tmp_path), SCHEMA, batches(7))
    assert len(actions) > 1
    assert {path.name for path in tmp_path.iterdir()} == {action.path for action in actions}
    seen = []
    for action in actions:
        rows = pq.read_table(tmp_path / action.path)
        stats = json.loads(action.stats)
        assert stats["numRecords"] == rows.num_rows
        assert (stats["minValues"][POSITION], stats["maxValues"][POSITION]) == (
            min(rows[POSITION].to_pylist()), max(rows[POSITION].to_pylist()))
        assert stats["nullCount"] == {POSITION: 0}
        assert action.size == (tmp_path / action.path).stat().st_size
        seen += rows["v"].to_pylist()
    assert seen == [f"row {n}" for n in range(7_000)]


def test_parts_carry_parquet_statistics_of_the_change_position_only(tmp_path):
    [action] = write_parts(str(tmp_path), SCHEMA, batches(2))
    group = pq.ParquetFile(tmp_path / action.path).metadata.row_group(0)
    position, value = group.column(0), group.column(1)
    assert position.is_stats_set and (position.statistics.min, position.statistics.max) == (0, 999)
    assert not value.is_stats_set  # nothing filters staging on its data columns


def test_a_stream_failing_midway_raises_and_leaves_no_part(tmp_path, monkeypatch):
    monkeypatch.setattr(parts_module, "PART_BYTES", 20_000)

    def failing():
        yield from batches(5)
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        write_parts(str(tmp_path), SCHEMA, failing())
    assert list(tmp_path.iterdir()) == []


def test_staged_parts_give_the_row_count_from_the_log_and_position_skipping(zone, tmp_path):
    zone.table("T", ["id"])
    schema = pa.schema([("id", pa.int64()), (ROW_MARKER, pa.int32())])
    for sequence in (1, 2):
        zone.write("T", sequence, [{"id": n, ROW_MARKER: 4} for n in range(10 * sequence)],
                   schema)
    [table] = discover_tables(zone.root)
    warehouse = Warehouse(tmp_path / "warehouse")
    assert ingest_table(table, warehouse).staged_rows == 30
    staging = warehouse.staging_path("dbo", "t")
    assert table_row_count(staging) == 30
    second_file = pa.compute.field(POSITION) >= 2 * 10**10  # the rows of file 2
    [part] = DeltaTable(str(staging)).to_pyarrow_dataset().get_fragments(filter=second_file)
    assert part.count_rows() == 20


def test_a_crash_between_added_columns_and_the_rows_stages_the_file_once(zone, tmp_path,
                                                                         monkeypatch):
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, ROW_MARKER: 0}],
               pa.schema([("id", pa.int64()), (ROW_MARKER, pa.int32())]))
    zone.write("T", 2, [{"id": 2, "new": "x", ROW_MARKER: 0}],
               pa.schema([("id", pa.int64()), ("new", pa.string()), (ROW_MARKER, pa.int32())]))
    warehouse = Warehouse(tmp_path / "warehouse")
    staging = warehouse.staging_path("dbo", "t")
    real_append = DeltaTable.create_write_transaction

    def crash(self, *args, **kwargs):
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as patch:
        patch.setattr(DeltaTable, "create_write_transaction", crash)
        [table] = discover_tables(zone.root)
        failed = ingest_table(table, warehouse)
    assert failed.status == "failed" and failed.last_sequence == 1
    assert "new" in DeltaTable(str(staging)).schema().to_arrow().names  # the columns came first
    assert DeltaTable.create_write_transaction is real_append
    [table] = discover_tables(zone.root)
    result = ingest_table(table, warehouse)
    assert (result.status, result.last_sequence, result.staged_rows) == ("replicating", 2, 1)
    rows = DeltaTable(str(staging)).to_pyarrow_table().sort_by(POSITION).to_pylist()
    assert [(row["id"], row["new"]) for row in rows] == [(1, None), (2, "x")]
