"""pandas' index in a Parquet file: row labels are left out, a named index is a data column
before `__rowMarker__`, whether pandas stored it as a column or only as a range."""

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakemirror.landing import discover_tables
from lakemirror.landing.pandas_index import column_layout
from lakemirror.reference import ROW_MARKER
from lakemirror.staging import Warehouse, ingest_table
from deltalake import DeltaTable

M = ROW_MARKER


def read_back(zone, tmp_path, frame: pd.DataFrame) -> list[dict]:
    """Stage the frame as pandas writes it and return the staged rows in order."""
    folder = zone.table("T", ["id"])
    frame.to_parquet(folder / "00000000000000000001.parquet")
    [table] = discover_tables(zone.root)
    result = ingest_table(table, Warehouse(tmp_path / "wh"))
    assert result.status == "replicating", result.error
    staged = DeltaTable(str(Warehouse(tmp_path / "wh").staging_path("dbo", "t")))
    rows = staged.to_pyarrow_table().sort_by("_lm_position").to_pylist()
    return [{k: v for k, v in row.items() if k != "_lm_position"} for row in rows]


@pytest.mark.parametrize("ids", [[1, 2, 3], [3, 7, 8]], ids=["as a range", "as a column"])
def test_a_named_index_is_a_data_column_before_the_marker(zone, tmp_path, ids):
    frame = pd.DataFrame({"id": ids, "v": ["a", "b", "c"], M: [0, 0, 4]}).set_index("id")
    assert read_back(zone, tmp_path, frame) == [
        {"v": v, "id": i, M: m} for i, v, m in zip(ids, ["a", "b", "c"], [0, 0, 4])]


@pytest.mark.parametrize("labels", [[10, 20, 30], [30, 10, 20]], ids=["range", "stored"])
def test_an_unnamed_index_is_left_out(zone, tmp_path, labels):
    frame = pd.DataFrame({"id": [1, 2, 3], M: [0, 0, 0]}).set_index(pd.Index(labels))
    assert read_back(zone, tmp_path, frame) == [{"id": i, M: 0} for i in [1, 2, 3]]


def test_a_range_index_is_filled_across_batches():
    schema = pa.schema([("v", pa.int64())], metadata={b"pandas": b'{"index_columns": '
                       b'[{"kind": "range", "name": "id", "start": 5, "stop": 0, "step": -1}]}'})
    layout = column_layout(schema)
    batches = [pa.record_batch([pa.array([1, 2])], schema=schema),
               pa.record_batch([pa.array([3])], schema=schema)]
    values = [row for batch in layout.batches(iter(batches)) for row in batch.to_pylist()]
    assert values == [{"v": 1, "id": 5}, {"v": 2, "id": 4}, {"v": 3, "id": 3}]


@pytest.mark.parametrize("metadata", [None, b"not json", b"[1]", b'{"index_columns": 7}',
                                      b'{"index_columns": [{"kind": "range", "name": "i", '
                                      b'"start": "x", "step": 1}]}'])
def test_files_not_written_by_pandas_are_read_as_they_are(metadata):
    schema = pa.schema([("id", pa.int64()), (M, pa.int32())],
                       metadata=None if metadata is None else {b"pandas": metadata})
    assert column_layout(schema) is None
