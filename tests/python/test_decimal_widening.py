"""Lossless widening of decimals: staging takes the exact union type of the staged and the
incoming decimal, rewrites itself once, and the mirrored table follows; a union wider than 38
digits fails the table, as do integer → decimal and date → timestamp."""

from decimal import Decimal

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.landing import discover_tables
from lakemirror.reference import ROW_MARKER
from lakemirror.service import MirrorService, RunSettings
from lakemirror.staging import Warehouse, ingest_table
from lakemirror.staging.evolution import delta_type_name

from conftest import as_multiset, copy_project, mirrored_rows

M = ROW_MARKER


def schema(column_type):
    return pa.schema([("id", pa.int64()), ("v", column_type), (M, pa.int32())])


def publish(zone, files):
    """Files of one column `v`, each as (type, values); ids count on across files."""
    zone.table("T", ["id"])
    ids = iter(range(1, 1000))
    for sequence, (column_type, values) in enumerate(files, 1):
        rows = [{"id": next(ids), "v": value, M: 0} for value in values]
        zone.write("T", sequence, rows, schema(column_type))


def ingest(zone, tmp_path):
    [result] = [ingest_table(table, Warehouse(tmp_path / "warehouse"))
                for table in discover_tables(zone.root)]
    return result


def staged(tmp_path):
    table = DeltaTable(str(tmp_path / "warehouse/_lakemirror/staging/dbo/t"))
    rows = table.to_pyarrow_table().sort_by("_lm_position")
    return delta_type_name(rows.schema.field("v").type), rows.column("v").to_pylist(), table


D = Decimal


@pytest.mark.parametrize("files, union", [
    ([(pa.decimal128(7, 2), [D("12345.67")]), (pa.decimal128(10, 2), [D("12345678.91")])],
     "decimal(10,2)"),
    ([(pa.decimal128(7, 2), [D("-12345.67")]), (pa.decimal128(6, 4), [D("-12.3456")])],
     "decimal(9,4)"),
    ([(pa.decimal128(6, 4), [D("12.3456")]), (pa.decimal128(7, 2), [D("12345.67")])],
     "decimal(9,4)"),
    ([(pa.decimal128(30, 0), [D(10**29)]), (pa.decimal128(10, 8), [D("0.00000001")])],
     "decimal(38,8)"),
], ids=["more-whole-digits", "more-fraction-digits", "mixed-the-other-way", "38-digits"])
def test_a_wider_file_rewrites_staging_with_the_union_type(zone, tmp_path, files, union):
    publish(zone, files)
    result = ingest(zone, tmp_path)
    assert (result.status, result.last_sequence) == ("replicating", 2), result.error
    staged_type, values, table = staged(tmp_path)
    assert staged_type == union
    assert values == [value for _, file_values in files for value in file_values]
    assert table.history(1)[0]["operationParameters"]["mode"] == "Overwrite"


def test_a_narrower_decimal_is_cast_up_without_a_rewrite(zone, tmp_path):
    publish(zone, [(pa.decimal128(10, 4), [D("123456.7891")]),
                   (pa.decimal128(5, 1), [D("-1234.5")]),
                   (pa.decimal128(4, 4), [D("0.0001"), None])])
    result = ingest(zone, tmp_path)
    assert (result.status, result.last_sequence) == ("replicating", 3), result.error
    staged_type, values, table = staged(tmp_path)
    assert (staged_type, values) == ("decimal(10,4)", [D("123456.7891"), D("-1234.5"),
                                                       D("0.0001"), None])
    assert [commit["operationParameters"]["mode"] for commit in table.history()] == [
        "Append", "Append", "ErrorIfExists"]  # the first file's commit creates the table


@pytest.mark.parametrize("files, change, union", [
    ([(pa.decimal128(38, 2), [D(1)]), (pa.decimal128(10, 4), [D(1)])],
     "from decimal(38,2) to decimal(10,4)", "decimal(40,4)"),
    ([(pa.decimal128(20, 0), [D(1)]), (pa.decimal128(38, 20), [D(1)])],
     "from decimal(20,0) to decimal(38,20)", "decimal(40,20)"),
])
def test_a_union_wider_than_38_digits_fails_the_table(zone, tmp_path, files, change, union):
    publish(zone, files)
    result = ingest(zone, tmp_path)
    assert (result.status, result.error_type, result.last_sequence) == (
        "failed", "SchemaChangeError", 1)
    assert f"column 'v' changed type {change}" in result.error
    assert f"holding both takes {union}, more than the 38 digits" in result.error
    assert "00000000000000000002.parquet" in result.error
    assert "Fix: publish the earlier type, or recreate the table folder" in result.error
    assert staged(tmp_path)[1] == [D(1)]


@pytest.mark.parametrize("first, second, change", [
    (pa.int64(), pa.decimal128(20, 0), "from long to decimal(20,0)"),
    (pa.decimal128(20, 0), pa.int64(), "from decimal(20,0) to long"),
    (pa.decimal128(10, 2), pa.float64(), "from decimal(10,2) to double"),
    (pa.date32(), pa.timestamp("us", tz="UTC"), "from date to timestamp"),
    (pa.date32(), pa.timestamp("us"), "from date to timestamp_ntz"),
    (pa.timestamp("us"), pa.date32(), "from timestamp_ntz to date"),
])
def test_integers_are_not_widened_to_decimals_nor_dates_to_timestamps(zone, tmp_path, first,
                                                                      second, change):
    publish(zone, [(first, [None]), (second, [None])])
    result = ingest(zone, tmp_path)
    assert (result.status, result.error_type) == ("failed", "SchemaChangeError")
    assert f"column 'v' changed type {change}; only widening (" in result.error
    assert "decimal to more digits before or after the point" in result.error


# Three files whose decimals widen to decimal(12,4), as upserts (also mirrored on the spark
# target by test_spark_scenarios).
WIDENING_DECIMALS = [
    (pa.decimal128(7, 2), [(1, D("12345.67")), (2, D("-0.01")), (5, None)]),
    (pa.decimal128(10, 2), [(3, D("12345678.91")), (1, D("-99999999.99"))]),
    (pa.decimal128(9, 4), [(4, D("-12345.6789")), (2, D("0.0001"))]),
]


def widening_decimal_files():
    """WIDENING_DECIMALS as change files: (rows, schema) each."""
    return [([{"id": i, "v": v, M: 4} for i, v in rows], schema(decimal))
            for decimal, rows in WIDENING_DECIMALS]


@pytest.mark.slow
def test_decimals_widen_in_the_mirrored_table(zone, tmp_path):
    zone.table("T", ["id"])
    service = MirrorService(RunSettings.given(
        zone.root, tmp_path / "warehouse", copy_project(tmp_path / "project"), quiet=True))
    for sequence, (rows, file_schema) in enumerate(widening_decimal_files(), 1):
        zone.write("T", sequence, rows, file_schema)
        [status] = service.run()
        assert status.status == "replicating", status.error
    mirrored = DeltaTable(str(service.settings.warehouse / "dbo" / "t"))
    assert delta_type_name(pa.schema(mirrored.schema().to_arrow()).field("v").type) == \
        "decimal(12,4)"
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset([
        {"id": 1, "v": D("-99999999.99")}, {"id": 2, "v": D("0.0001")},
        {"id": 3, "v": D("12345678.91")}, {"id": 4, "v": D("-12345.6789")},
        {"id": 5, "v": None}])
