"""Table settings of a downstream model with incremental_strategy 'apply_changes'
(docs/pages/building-on-mirrors.md): isolation_level, delta_features and tblproperties reach its
table at create, change on later runs only when its config does, and its MERGE of deletes
writes deletion vectors as the mirror's does; a feature the engine cannot write refuses the
model before it writes. Checked in the Delta log, which delta-rs reads independently."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.reference import ROW_MARKER as M

from conftest import ENGINES, deletion_vectors_added
from test_delta_settings import log_of
from test_mirror_changes import (
    MODELS,
    SCHEMA,
    assert_moving_equals_rebuilt,
    built,
    mirror_with_models,
)

pytestmark = pytest.mark.slow

INSERT, DELETE, UPSERT = 0, 2, 4
FIRST = [{"id": i, "name": f"n{i}", "amount": 10 + i, "country": "US", M: INSERT}
         for i in range(1, 9)]
DELETES = [{"id": 2, "name": None, "amount": None, "country": None, M: DELETE},
           {"id": 5, "name": None, "amount": None, "country": None, M: DELETE},
           {"id": 3, "name": "moved", "amount": 30, "country": "DE", M: UPSERT}]
LATER = [{"id": 9, "name": "n9", "amount": 19, "country": "FR", M: INSERT}]


def configure_moving(service, **settings):
    """Give the project's `moving` model (test_mirror_changes' MODELS) these config items."""
    items = "".join(f", {key}={value!r}" for key, value in settings.items())
    (service.settings.project_dir / "models/user/moving.sql").write_text(
        MODELS["moving"].replace("unique_key='id'", "unique_key='id'" + items, 1))


def moving_log(service):
    return log_of(service, "moving", schema="analytics")


@pytest.mark.parametrize("target", ENGINES)
def test_an_apply_changes_model_takes_its_table_settings(tmp_path, target):
    zone, service = mirror_with_models(tmp_path, target)
    configure_moving(service, isolation_level="Serializable", delta_features=["deletionVectors"],
                     tblproperties={"team.owner": "sales"})
    zone.write("Customers", 1, FIRST, SCHEMA)
    service.run()
    assert_moving_equals_rebuilt(service)
    log = moving_log(service)
    assert log["protocol"] == (3, 7) and "deletionVectors" in log["features"]
    assert log["configuration"]["delta.enableDeletionVectors"] == "true"
    assert log["configuration"]["delta.isolationLevel"] == "Serializable"
    assert log["configuration"]["team.owner"] == "sales"
    assert len(log["operations"]) == 1 and log["operations"][0].startswith("CREATE")

    # Deletes and an update, settings unchanged: one MERGE, no metadata commit, and it marks
    # the deleted rows with deletion vectors, as the mirror's own MERGE does.
    zone.write("Customers", 2, DELETES, SCHEMA)
    service.run()
    assert_moving_equals_rebuilt(service)
    assert moving_log(service)["operations"][1:] == ["MERGE"]
    mirror = deletion_vectors_added(service.settings.warehouse / "dbo" / "customers", 1)
    moving = deletion_vectors_added(service.settings.warehouse / "analytics" / "moving", 1)
    assert mirror > 0 and moving > 0

    # A changed property is set and a new one added, in one commit before the MERGE.
    configure_moving(service, isolation_level="Serializable", delta_features=["deletionVectors"],
                     tblproperties={"team.owner": "finance",
                                    "delta.logRetentionDuration": "interval 60 days"})
    zone.write("Customers", 3, LATER, SCHEMA)
    service.run()
    assert_moving_equals_rebuilt(service)
    log = moving_log(service)
    assert log["operations"][2:] == ["SET TBLPROPERTIES", "MERGE"]
    assert log["configuration"]["team.owner"] == "finance"
    assert log["configuration"]["delta.logRetentionDuration"] == "interval 60 days"


def test_the_embedded_engine_refuses_clustering_before_writing(tmp_path):
    """On the model's table as it exists, and on its first build (a model just added)."""
    settings, problem, fix = ({"cluster_by": ["id"]},
                              "asks for cluster_by id, which the embedded engine (Sail) cannot do",
                              "Use the spark or connect target")
    zone, service = mirror_with_models(tmp_path)
    zone.write("Customers", 1, FIRST, SCHEMA)
    service.run()
    table = service.settings.warehouse / "analytics" / "moving"
    version = DeltaTable(str(table)).version()
    configure_moving(service, **settings)
    fresh = service.settings.project_dir / "models/user/fresh.sql"
    fresh.write_text((service.settings.project_dir / "models/user/moving.sql").read_text())
    zone.write("Customers", 2, DELETES, SCHEMA)
    failed = {node.name: node.message for node in built(service)}
    assert set(failed) == {"moving", "fresh"}
    for name, message in failed.items():
        assert f"model {name}" in message and problem in message and fix in message, message
    assert DeltaTable(str(table)).version() == version
    assert not DeltaTable.is_deltatable(str(table.parent / "fresh"))


def test_the_embedded_engine_writes_an_apply_changes_models_change_data_feed(tmp_path):
    """Turned on for the model's existing table, and on a model's first build: the MERGE
    goes through delta-rs, which writes the deletes and the update's two images."""
    zone, service = mirror_with_models(tmp_path)
    zone.write("Customers", 1, FIRST, SCHEMA)
    service.run()
    configure_moving(service, delta_features=["changeDataFeed"])
    fresh = service.settings.project_dir / "models/user/fresh.sql"
    fresh.write_text((service.settings.project_dir / "models/user/moving.sql").read_text())
    table = service.settings.warehouse / "analytics" / "moving"
    before = DeltaTable(str(table)).version()
    zone.write("Customers", 2, DELETES, SCHEMA)
    service.run()
    assert_moving_equals_rebuilt(service)
    feed = pa.table(DeltaTable(str(table)).load_cdf(starting_version=before + 1).read_all())
    assert sorted((row["_change_type"], row["id"]) for row in feed.to_pylist()) == [
        ("delete", 2), ("delete", 5), ("update_postimage", 3), ("update_preimage", 3)]
    fresh_feed = DeltaTable(str(table.parent / "fresh")).load_cdf(starting_version=1)
    assert pa.table(fresh_feed.read_all()).num_rows == 6  # its first build's rows, inserted


def test_an_apply_changes_model_gets_deletion_vectors_unless_a_reader_needs_copy_on_write(
        tmp_path):
    zone, service = mirror_with_models(tmp_path)
    copy_on_write = service.settings.project_dir / "models/user/arrow.sql"
    copy_on_write.write_text(MODELS["moving"].replace(
        "unique_key='id'", "unique_key='id', lakemirror_readers=['delta-rs-pyarrow']", 1))
    for sequence, rows in enumerate([FIRST, DELETES], 1):
        zone.write("Customers", sequence, rows, SCHEMA)
        service.run()
    assert_moving_equals_rebuilt(service)
    log = moving_log(service)
    assert log["protocol"] == (3, 7) and "deletionVectors" in log["features"]
    assert deletion_vectors_added(service.settings.warehouse / "analytics" / "moving", 1) > 0
    arrow = log_of(service, "arrow", schema="analytics")
    assert arrow["protocol"] == (1, 2) and not arrow["features"]
    rows = DeltaTable(str(service.settings.warehouse / "analytics" / "arrow")).to_pyarrow_table()
    assert sorted(rows.column("id").to_pylist()) == [1, 3, 4, 6, 7, 8]
