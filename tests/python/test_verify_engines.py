"""`lakemirror verify` of mirrors the `spark` target built (with deletion vectors, which
verify's reader applies) and of a warehouse in S3 (moto's server): verified ok, and a row
changed or deleted behind lakemirror's back reported with its key, exit 1; and every mirror
scenario of test_spark_scenarios.py (evolving and widening columns, nested and naive-timestamp
columns, ConditionalUpdateColumn, keyless, recreated tables, a crash between the MERGEs and
their bookkeeping) verified ok on both engines."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from lakemirror.delta.access import delta_table

from conftest import ENGINES, deletion_vectors_added, engine_param, mirror_setup, spark_session
from test_spark_scenarios import built
from test_object_mirror import object_mirror
from test_verify import FILES, SCHEMA, ROWS, at, differences, verified

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("target", [engine_param("spark")])
def test_a_spark_built_mirror_and_its_history_are_verified(tmp_path, target):
    zone, service = mirror_setup(tmp_path, target)
    service.settings = replace(service.settings, dbt_vars={"lakemirror_history": ["*"]})
    zone.table("T", ["id"])
    for sequence, rows in enumerate(FILES, 1):
        zone.write("T", sequence, rows, SCHEMA)
        assert {s.status for s in service.run()} == {"replicating"}
    warehouse = service.settings.warehouse
    assert deletion_vectors_added(warehouse / "dbo" / "t") > 0  # the MERGE marked rows removed

    code, document = verified(warehouse)

    assert code == 0, document
    proof = document["tables"]["dbo.t"]
    assert (proof["mirror"]["actual_rows"], proof["history"]["actual_rows"]) == (ROWS, 9)

    spark = spark_session()
    spark.sql(f"update delta.`{warehouse / 'dbo' / 't'}` set v = 'spark' where id = 5").collect()
    spark.sql(f"delete from delta.`{warehouse / 'dbo' / 't'}` where id = 6").collect()
    code, document = verified(warehouse)
    assert code == 1
    assert differences(document["tables"]["dbo.t"]) == {
        ("changed", (("id", 5),), at(1, 4), (("v", "v5", "spark"),)),
        ("missing", (("id", 6),), at(1, 5), ())}


def test_a_warehouse_in_s3_is_verified(tmp_path, monkeypatch, s3_server):
    setup = object_mirror(tmp_path, monkeypatch, s3_server)
    settings = setup.project / "dbt_project.yml"
    settings.write_text(settings.read_text().replace(
        "vars:\n", "vars:\n  lakemirror_history: ['dbo.customers']\n"))
    assert setup.run().exit_code == 0
    for folder in ("Customers", "Sales.schema/Orders"):
        setup.publish(folder, 3)
    assert setup.run().exit_code == 0
    url = str(setup.warehouse)

    code, document = verified(url)

    assert code == 0, json.dumps(document)
    assert set(document["tables"]) == {"dbo.customers", "sales.orders"}
    assert document["tables"]["dbo.customers"]["history"]["actual_rows"] == 6

    delta_table(setup.warehouse / "sales" / "orders").delete("id = 4")
    code, document = verified(url)
    assert code == 1 and document["tables"]["dbo.customers"]["status"] == "ok"
    assert differences(document["tables"]["sales.orders"]) == {
        ("missing", (("id", 4),), at(3, 0), ())}


@pytest.mark.parametrize("target", ENGINES)
def test_every_mirror_scenario_is_verified(tmp_path_factory, target):
    mirrored = built(target, tmp_path_factory)

    code, document = verified(mirrored.service.settings.warehouse)

    assert code == 0, [(name, table["error"], table["notes"]) for name, table in
                       document["tables"].items() if table["status"] != "ok"]
    assert len(document["tables"]) > 10
