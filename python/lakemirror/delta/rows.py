"""Rows of a Delta table, also when its features (deletion vectors, column mapping) keep
delta-rs's Arrow reader out: delta-rs's SQL engine then reads it and applies them."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import DeltaProtocolError

from lakemirror.delta.access import delta_table, is_delta_table
from lakemirror.storage.location import Location


def table_row_count(path: Location) -> int | None:
    """Row count of the Delta table at `path`, or None when it is not a Delta table."""
    if not is_delta_table(path):
        return None
    return loaded_row_count(delta_table(path))


def loaded_row_count(table: DeltaTable) -> int:
    """Row count of a loaded Delta table."""
    counted = _count_in_log(table)
    if counted is not None:
        return counted
    try:
        return int(table.to_pyarrow_dataset().count_rows())
    except DeltaProtocolError:
        counted = _sql(table, "select count(*) as row_count from delta_table")
        return int(counted.column("row_count")[0].as_py())


def _count_in_log(table: DeltaTable) -> int | None:
    """The row count the log's file statistics give, less the rows the files' deletion vectors
    remove, without reading a data file (or pyarrow.dataset, which is slow to import); None
    when a file has no count."""
    actions = table.get_add_actions(flatten=True)
    if "num_records" not in list(actions.schema.names):
        return None
    records = pa.chunked_array(actions.column("num_records"))
    if records.null_count:
        return None
    return int(pc.sum(records).as_py() or 0) - _deleted_rows(table)


def _deleted_rows(table: DeltaTable) -> int:
    """Rows the table's deletion vectors remove (none without the feature)."""
    if "deletionVectors" not in (table.protocol().reader_features or ()):
        return 0
    vectors = pa.RecordBatchReader.from_stream(table.deletion_vectors()).read_all().column(
        "selection_vector")
    kept = pc.sum(pc.list_flatten(vectors)).as_py() or 0
    return int(pc.sum(pc.list_value_length(vectors)).as_py() or 0) - int(kept)


def read_table(path: Location) -> pa.Table:
    """All rows of the Delta table at `path`."""
    table = delta_table(path)
    try:
        return table.to_pyarrow_table()
    except DeltaProtocolError:
        return _sql(table, "select * from delta_table")


def stream_table(path: Location) -> pa.RecordBatchReader:
    """All rows of the Delta table at `path` as a stream of batches (bounded memory), through
    delta-rs's SQL engine, which applies any feature; text comes as views (`without_views`)."""
    result = QueryBuilder().register("delta_table", delta_table(path)).execute(
        "select * from delta_table")
    return pa.RecordBatchReader.from_stream(result)


def without_views(rows: pa.Table) -> pa.Table:
    """`rows` with the view types delta-rs's SQL engine returns (string_view, binary_view)
    cast to plain string and binary: Arrow cannot join, look up or sort on views. Only the
    columns holding views are cast: Arrow refuses to cast a NULL struct (an outer join's)
    whose fields are not nullable, even to its own type."""
    for index, field in enumerate(rows.schema):
        plain = _plain(field.type)
        if plain != field.type:
            rows = rows.set_column(index, field.with_type(plain),
                                   rows.column(index).cast(plain))
    return rows


def _plain(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_binary_view(kind):
        return pa.binary()
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_plain(field.type)) for field in kind])
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_plain(kind.value_type)))
    if pa.types.is_large_list(kind):
        return pa.large_list(kind.value_field.with_type(_plain(kind.value_type)))
    if pa.types.is_map(kind):
        return pa.map_(kind.key_field.with_type(_plain(kind.key_type)),
                       kind.item_field.with_type(_plain(kind.item_type)))
    return kind


def read_control_table(table: Location | DeltaTable) -> pa.Table:
    """All rows of a small Delta table (at a path, or a version already open), through
    delta-rs's SQL engine: without pyarrow.dataset, which takes most of a second to import
    (commands such as `status`, idle runs)."""
    return query_table(table, "select * from delta_table")


def query_table(table: Location | DeltaTable, query: str) -> pa.Table:
    """The result of a SQL query over a Delta table (named `delta_table` in it)."""
    return _sql(table if isinstance(table, DeltaTable) else delta_table(table), query)


def query_tables(tables: Mapping[str, Location], query: str) -> pa.Table:
    """The result of a SQL query over several Delta tables, each registered under its name."""
    builder = QueryBuilder()
    for name, path in tables.items():
        builder = builder.register(name, delta_table(path))
    return without_views(pa.RecordBatchReader.from_stream(builder.execute(query)).read_all())


def _sql(table: DeltaTable, query: str) -> pa.Table:
    """The query's result, in plain types (the SQL engine gives text as string_view)."""
    result = QueryBuilder().register("delta_table", table).execute(query)
    return without_views(pa.RecordBatchReader.from_stream(result).read_all())
