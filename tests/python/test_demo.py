"""`lakemirror demo`: the publisher simulator mirrored end to end, marts and their tests built."""

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from lakemirror.demo import run_demo
from lakemirror.demo.publisher import Publisher, incremental_changes, initial_load
from lakemirror.reference import apply_changes
from lakemirror.environment import read_settings

from conftest import as_multiset, copy_project, mirrored_rows

pytestmark = pytest.mark.slow


def published_files(zone, folder):
    files = sorted([*(zone / folder).glob("*.parquet"),
                    *(zone / folder / "_ProcessedFiles").glob("*.parquet")],
                   key=lambda path: path.name)
    return [pq.read_table(path).to_pylist() for path in files]


def test_demo_mirrors_every_table_like_the_reference_and_builds_the_marts(tmp_path):
    lines = []
    exit_code = run_demo(tmp_path / "demo", echo=lines.append, env=read_settings(),
                         project_dir=copy_project(tmp_path / "project"))
    output = "\n".join(lines)
    assert exit_code == 0, output
    assert "replicating" in output and "failed" not in output
    assert "Tailspin Toys SA" in output  # the sample query's result
    zone, warehouse = tmp_path / "demo/LandingZone", tmp_path / "demo/warehouse"
    for folder, schema, table, keys in [("Employees", "dbo", "employees", ["EmployeeID"]),
                                        ("Customers", "dbo", "customers", ["CustomerID"]),
                                        ("Sales.schema/OrderLines", "sales", "orderlines",
                                         ["OrderID", "LineNumber"])]:
        expected = apply_changes(published_files(zone, folder), keys)
        rows = [{k: v for k, v in row.items() if k != "__rowMarker__"} for row in expected]
        assert mirrored_rows(warehouse, schema, table) == as_multiset(rows)
    regions = DeltaTable(str(warehouse / "analytics/region_revenue")).to_pyarrow_table()
    assert dict(zip(regions["region"].to_pylist(), regions["amount"].to_pylist())) == {
        "Americas": 500.0, "Europe": 325.0}


def test_publisher_numbers_files_contiguously(tmp_path):
    publisher = Publisher(tmp_path)
    initial_load(publisher)
    incremental_changes(publisher)
    names = sorted(path.name for path in (tmp_path / "Employees").glob("*.parquet"))
    assert names == [f"{n:020d}.parquet" for n in (1, 2, 3)]
