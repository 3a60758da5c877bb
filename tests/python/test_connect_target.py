"""The `connect` target against a real standalone Spark cluster behind a Spark Connect server
with Delta (tests/python/spark_cluster.py, one for the session): mirroring with the profile's
default threads, two warehouses on one server, and the failures a user meets first."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import as_multiset, mirror_setup, mirrored_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
BATCHES = [
    [{"id": i, "v": f"v{i}", M: 0} for i in range(1, 5)],
    [{"id": 1, "v": "one", M: 1}, {"id": 2, "v": None, M: 2}, {"id": 5, "v": "e", M: 4}],
    [{"id": 2, "v": "back", M: 0}, {"id": 3, "v": None, M: 2}, {"id": 1, "v": "uno", M: 4}],
]
TABLES = ("Customers", "Sales.schema/Orders")


@pytest.fixture
def connect(spark_cluster, monkeypatch):
    monkeypatch.setenv("LAKEMIRROR_CONNECT_URL", spark_cluster.connect_url)
    monkeypatch.delenv("LAKEMIRROR_THREADS", raising=False)  # the profile's default: 4
    return spark_cluster


def mirror_batches(root: Path) -> Path:
    """A two-table zone mirrored batch by batch on the connect target, each batch's tables
    compared with the reference model; returns the warehouse."""
    zone, service = mirror_setup(root, "connect")
    for folder in TABLES:
        zone.table(folder, ["id"])
    for number, _ in enumerate(BATCHES, start=1):
        for folder in TABLES:
            zone.write(folder, number, BATCHES[number - 1], SCHEMA)
        statuses = service.run()
        assert [status.status for status in statuses] == ["replicating"] * 2, statuses
        expected = [{k: v for k, v in row.items() if k != M}
                    for row in apply_changes(BATCHES[:number], ["id"])]
        for schema, table in (("dbo", "customers"), ("sales", "orders")):
            assert mirrored_rows(service.warehouse, schema, table) == as_multiset(expected)
    return service.warehouse


def test_a_zone_mirrors_exactly_with_the_default_threads(tmp_path, connect):
    mirror_batches(tmp_path)
