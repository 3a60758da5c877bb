"""Liquid clustering (config cluster_by): on Delta Lake on Spark a clustered mirror model keeps
equal to the reference over several runs, its Delta log records the clustering columns, and
`lakemirror maintain --target spark` reclusters it with OPTIMIZE; the embedded engine (Sail),
which cannot write clustered tables, refuses cluster_by before anything is written."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from lakemirror.cli.main import cli
from lakemirror.maintenance import NO_ENGINE
from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import SPARK_UNAVAILABLE, as_multiset, mirror_setup, mirrored_rows
from test_delta_settings import configure

M = ROW_MARKER
HOSTILE = "Re`gion-Nr"  # a landing-zone column name: quoted in CLUSTER BY
SCHEMA = pa.schema([("id", pa.int64()), (HOSTILE, pa.string()), ("v", pa.string()),
                    (M, pa.int32())])
CHANGES = [  # inserts; updates, deletes and an upsert; a deleted key inserted again
    [{"id": i, HOSTILE: f"r{i % 3}", "v": f"v{i}", M: 0} for i in range(1, 9)],
    [{"id": 2, HOSTILE: "r9", "v": "new", M: 1}, {"id": 3, HOSTILE: None, "v": None, M: 2},
     {"id": 11, HOSTILE: "r1", "v": "up", M: 4}, {"id": 5, HOSTILE: None, "v": None, M: 2}],
    [{"id": 3, HOSTILE: "r0", "v": "again", M: 0}, {"id": 8, HOSTILE: None, "v": None, M: 2}],
]
# One column: OPTIMIZE of two or more clustering columns needs Delta's generated HilbertStates
# class, which a Delta jar built without its code generation step lacks.
CLUSTERED = "dbo:\n  dbo__customers: {+cluster_by: %s}" % json.dumps([HOSTILE])


def clustered_setup(root, target):
    zone, service = mirror_setup(root, target)
    zone.table("Customers", ["id"])
    configure(service, CLUSTERED.split("\n"))
    return zone, service


def clustering_columns(table) -> list[list[str]]:
    """The clustering columns the table's Delta log records (domain `delta.clustering`)."""
    log = sorted((table / "_delta_log").glob("*.json"))
    actions = [json.loads(line) for path in log for line in path.read_text().splitlines()]
    clustering = [action["domainMetadata"] for action in actions
                  if action.get("domainMetadata", {}).get("domain") == "delta.clustering"]
    return json.loads(clustering[-1]["configuration"])["clusteringColumns"]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.skipif(SPARK_UNAVAILABLE is not None,
                    reason=f"spark target skipped: {SPARK_UNAVAILABLE}")
def test_a_clustered_mirror_equals_the_reference_and_maintain_reclusters_it(tmp_path,
                                                                           monkeypatch):
    zone, service = clustered_setup(tmp_path, "spark")
    table = service.settings.warehouse / "dbo" / "customers"
    (service.settings.project_dir / "models" / "regions.sql").write_text(  # a model of one's own
        "{{ config(materialized='table', cluster_by='v') }}\n"
        "select v, count(*) as customers from {{ ref('dbo__customers') }} group by v\n")
    for sequence, rows in enumerate(CHANGES, 1):
        zone.write("Customers", sequence, rows, SCHEMA)
        statuses = service.run()
        assert [status.status for status in statuses] == ["replicating"], statuses
        expected = [{k: v for k, v in row.items() if k != M}
                    for row in apply_changes(CHANGES[:sequence], ["id"])]
        assert mirrored_rows(service.settings.warehouse, "dbo", "customers") \
            == as_multiset(expected)
    assert clustering_columns(table) == [[HOSTILE]]
    assert [model.status for model in service.run_models if model.name == "regions"] \
        == ["success"], service.run_models
    regions, = service.settings.warehouse.glob("*/regions")
    assert clustering_columns(regions) == [["v"]]
    assert "clustering" in DeltaTable(str(table)).protocol().writer_features
    maintain = ["maintain", "--warehouse", str(service.settings.warehouse), "--json"]
    untouched = CliRunner().invoke(cli, maintain)
    assert untouched.exit_code == 0, untouched.output
    assert NO_ENGINE in untouched.output
    monkeypatch.chdir(service.settings.project_dir)
    result = CliRunner().invoke(cli, maintain + ["--target", "spark"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])["tables"][0]
    assert report["optimized"] is True, report
    operations = [entry["operation"] for entry in DeltaTable(str(table)).history()]
    assert operations[0] == "OPTIMIZE"
    assert mirrored_rows(service.settings.warehouse, "dbo", "customers") \
        == as_multiset([{k: v for k, v in row.items() if k != M}
                        for row in apply_changes(CHANGES, ["id"])])


def test_maintain_compacts_a_table_without_clustering_with_delta_rs_as_before(tmp_path):
    from lakemirror.maintenance import maintain_tables
    from lakemirror.staging import Warehouse

    zone, service = mirror_setup(tmp_path)
    zone.table("Customers", ["id"])
    zone.write("Customers", 1, CHANGES[0], SCHEMA)
    assert [status.status for status in service.run()] == ["replicating"]
    plain, = maintain_tables(Warehouse(service.settings.warehouse), ["dbo.customers"],
                             optimize=lambda locations: pytest.fail("OPTIMIZE of a plain table"))
    assert not plain.optimized and plain.skipped == ()


def test_the_embedded_engine_refuses_cluster_by_before_writing(tmp_path):
    zone, service = clustered_setup(tmp_path, "embedded")
    zone.write("Customers", 1, CHANGES[0], SCHEMA)
    status, = service.run()
    assert status.status == "failed"
    assert ("model dbo__customers asks for cluster_by " + HOSTILE
            + ", which the embedded engine (Sail) cannot do") in status.error, status.error
    assert "Use the spark or connect target" in status.error
    assert not DeltaTable.is_deltatable(str(service.settings.warehouse / "dbo" / "customers"))
