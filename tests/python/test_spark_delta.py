"""The Delta features lakemirror exposes, on real Delta Lake 4.0 on Spark, end to end through
dbt and checked in the Delta log (read by delta-rs, independently of the engine): isolation
levels, tblproperties without needless commits, every table feature Delta 4.0 writes on its
lowest protocol, change data feed with column mapping, type widening in place or by rewrite,
and dropping features with and without truncating history, as `doctor` and `inspect` see it.

One warehouse, one table per case, three runs (module-scoped: a dbt run builds every table).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.node_result import NodeResult
from lakemirror.delta import Protocol
from lakemirror.reference import ROW_MARKER
from lakemirror.service import MirrorService
from lakemirror.status import TableStatus

from conftest import SPARK_UNAVAILABLE, Zone, as_multiset, mirror_setup
from test_delta_settings import configure, log_of
from test_inspect_doctor import doctor_json, inspect_json

pytestmark = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(SPARK_UNAVAILABLE is not None,
                                 reason=f"spark target skipped: {SPARK_UNAVAILABLE}")]

M = ROW_MARKER
NARROW = pa.schema([("id", pa.int32()), ("v", pa.string()), (M, pa.int32())])
WIDE = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
MODERN = ["deletionVectors", "rowTracking", "typeWidening", "v2Checkpoint", "inCommitTimestamp",
          "vacuumProtocolCheck", "timestampNtz", "variantType"]
# Tables checking a feature set's lowest protocol declare a reader that cannot read deletion
# vectors, so they stay without the default ones (copy-on-write).
COPY_ON_WRITE = "+lakemirror_readers: [delta-4.0, delta-rs-pyarrow]"
FIRST = {
    "settings": "{+isolation_level: Serializable, +delta_features: [deletionVectors], "
                "+tblproperties: {team.owner: sales, delta.logRetentionDuration: "
                "interval 60 days}}",
    "cdf_checks": "{+delta_features: [changeDataFeed, checkConstraints], " + COPY_ON_WRITE + "}",
    "modern": "{+delta_features: [" + ", ".join(MODERN) + "]}",
    "legacy": "{+delta_features: [invariants, generatedColumns, identityColumns], "
              + COPY_ON_WRITE + "}",
    "cdf_mapping": "{+delta_features: [changeDataFeed, columnMapping], " + COPY_ON_WRITE + "}",
    "clustering": "{+delta_features: [clustering]}",
    "level": "{+isolation_level: WriteSerializable}",
    "widening": "{+delta_features: [typeWidening], " + COPY_ON_WRITE + "}",
    "rewrite": "{" + COPY_ON_WRITE + "}",
    "dropped": "{+delta_features: [deletionVectors]}",
    "truncated": "{+delta_features: [deletionVectors]}",
    "defaults": "{}",  # deletion vectors by default
}
# The second run, of the tables it changes something in (deletes, widening, settings).
SECOND_TABLES = ("dbo.settings", "dbo.cdf_mapping", "dbo.widening", "dbo.rewrite",
                 "dbo.dropped", "dbo.truncated", "dbo.defaults")
# The third run, of these tables only: settings changed, dropped features left out.
THIRD_TABLES = ["dbo.settings", "dbo.dropped", "dbo.truncated"]
THIRD = {**FIRST, "dropped": "{}", "truncated": "{}",
         "settings": "{+isolation_level: Serializable, +delta_features: [deletionVectors, "
                     "checkConstraints], +tblproperties: {delta.logRetentionDuration: "
                     "interval 90 days}}"}


@dataclass
class Runs:
    """The warehouse after the runs, and what each run and operation said."""

    service: MirrorService
    statuses: list[dict[str, TableStatus]] = field(default_factory=list)
    drops: dict[str, list[tuple[list[NodeResult], str]]] = field(default_factory=dict)
    versions: dict[str, list[int]] = field(default_factory=dict)

    def log(self, table: str) -> dict[str, object]:
        return log_of(self.service, table)


def settings_lines(tables: dict[str, str]) -> list[str]:
    return ["dbo:"] + [f"  dbo__{name}: {config}" for name, config in tables.items()]


def drop_feature(service: MirrorService, table: str, *, truncate_history: bool
                 ) -> tuple[list[NodeResult], str]:
    """`dbt run-operation lakemirror.drop_feature` on the table; its results and output."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        results = service.dbt(
            replace(service.settings, quiet=False), "run-operation", "lakemirror.drop_feature",
            "--args", json.dumps({"relation": f"dbo.{table}", "feature": "deletionVectors",
                                  "truncate_history": truncate_history}))
    return results, output.getvalue()


def age_history(table: Path, days: float) -> None:
    """Make the table's commits `days` old, as if that time had passed since they were made."""
    then = time.time() - days * 86400
    for entry in (table / "_delta_log").iterdir():
        os.utime(entry, (then, then))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    zone, service = mirror_setup(tmp_path_factory.mktemp("spark_delta"), "spark")
    runs = Runs(service)

    def run(config: dict[str, str], tables: tuple[str, ...] = ()) -> None:
        configure(service, settings_lines(config))
        runs.statuses.append({status.table: status for status in service.run(tables)})
        for table in FIRST:
            path = service.settings.warehouse / "dbo" / table
            if DeltaTable.is_deltatable(str(path)):
                runs.versions.setdefault(table, []).append(DeltaTable(str(path)).version())

    publish_all(zone, 1, NARROW, [1, 2, 3], 0)
    run(FIRST)
    publish_all(zone, 2, NARROW, [2], 2)  # deletes: deletion vectors where they are on
    for table in ("widening", "rewrite"):
        zone.write(table.capitalize(), 2, [{"id": 2, "v": None, M: 2},
                                           {"id": 2**40, "v": "big", M: 0}], WIDE)
    run(FIRST, SECOND_TABLES)
    runs.drops["dropped"] = [drop_feature(service, "dropped", truncate_history=False)]
    truncated = service.settings.warehouse / "dbo" / "truncated"
    runs.drops["truncated"] = [drop_feature(service, "truncated", truncate_history=True)]
    age_history(truncated, days=2)  # the retention period (24 hours) has passed
    runs.drops["truncated"].append(drop_feature(service, "truncated", truncate_history=True))
    publish_all(zone, 3, NARROW, [4], 0)  # only the third run's tables take it in
    run(THIRD, tuple(THIRD_TABLES))
    return runs


def publish_all(zone: Zone, sequence: int, schema: pa.Schema, ids: list[int], marker: int
                ) -> None:
    for table in FIRST:
        folder = table.capitalize()
        zone.table(folder, ["id"])
        if not (table in ("widening", "rewrite") and sequence == 2):
            zone.write(folder, sequence, [{"id": i, "v": f"v{i}", M: marker} for i in ids],
                       schema)


def spark_table(service: MirrorService, table: str) -> Any:
    """The mirrored table, read by the Spark session of the last dbt invocation."""
    from pyspark.sql import SparkSession

    session = SparkSession._instantiatedSession
    assert session is not None
    return session.read.format("delta").load(str(service.settings.warehouse / "dbo" / table))


def spark_rows(service: MirrorService, table: str) -> object:
    rows = spark_table(service, table).select("id", "v").collect()
    return as_multiset([row.asDict() for row in rows])


def test_every_valid_table_replicates_on_every_run(runs):
    first, second, third = runs.statuses
    assert {name for name, status in first.items() if status.status != "replicating"} \
        == {"clustering", "level"}, {name: s.error for name, s in first.items()}
    for statuses, tables in ((second, SECOND_TABLES), (third, THIRD_TABLES)):
        assert {status.status for status in statuses.values()} == {"replicating"}
        assert sorted(statuses) == sorted(name.split(".")[1] for name in tables)


def test_isolation_level_serializable_is_recorded_and_write_serializable_refused(runs):
    assert runs.log("settings")["configuration"]["delta.isolationLevel"] == "Serializable"
    level = runs.statuses[0]["level"]
    assert level.status == "failed"
    assert ("Delta Lake on Spark does not accept isolation_level 'WriteSerializable'; it "
            "accepts: Serializable") in level.error
    assert not DeltaTable.is_deltatable(str(runs.service.settings.warehouse / "dbo" / "level"))


def test_settings_commit_only_when_they_change(runs):
    log = runs.log("settings")
    assert log["operations"] == ["CREATE OR REPLACE TABLE AS SELECT", "MERGE",
                                 "SET TBLPROPERTIES", "UNSET TBLPROPERTIES", "MERGE"]
    assert "team.owner" not in log["configuration"]
    assert log["configuration"]["delta.logRetentionDuration"] == "interval 90 days"
    assert {"deletionVectors", "checkConstraints"} <= log["features"]
    assert spark_rows(runs.service, "settings") == as_multiset(
        [{"id": 1, "v": "v1"}, {"id": 3, "v": "v3"}, {"id": 4, "v": "v4"}])


@pytest.mark.parametrize(("table", "protocol", "features"), [
    ("cdf_checks", (1, 4), {"changeDataFeed", "checkConstraints"}),
    ("cdf_mapping", (2, 5), {"changeDataFeed", "columnMapping"}),
    ("legacy", (1, 6), {"invariants", "generatedColumns", "identityColumns"}),
    # Table features list what was asked; Delta adds the legacy writer features of the
    # table's start (appendOnly, invariants) and domainMetadata, which rowTracking needs.
    ("modern", (3, 7), set(MODERN) | {"appendOnly", "invariants", "domainMetadata"}),
])
def test_each_feature_set_gets_the_lowest_protocol(runs, table, protocol, features):
    log = runs.log(table)
    assert log["protocol"] == protocol
    listed = tuple(sorted(log["features"]))
    implied = Protocol(*log["protocol"], listed, listed).features_to_write()
    assert features <= implied
    if protocol[1] == 7:
        assert log["features"] == features
    ids = [1, 3] if f"dbo.{table}" in SECOND_TABLES else [1, 2, 3]  # the second run's delete
    assert spark_rows(runs.service, table) == as_multiset([{"id": i, "v": f"v{i}"} for i in ids])


def test_a_new_mirrored_table_gets_deletion_vectors_by_default_and_uses_them(runs):
    log = runs.log("defaults")
    assert log["protocol"] == (3, 7)
    assert {"deletionVectors"} <= log["features"]
    assert log["configuration"]["delta.enableDeletionVectors"] == "true"
    [merge] = DeltaTable(str(runs.service.settings.warehouse / "dbo" / "defaults")).history(1)
    assert merge["operation"] == "MERGE"  # the second run's delete marked its row
    assert int(merge["operationMetrics"]["numTargetDeletionVectorsAdded"]) == 1
    assert runs.statuses[1]["defaults"].rows == 2  # counted past the deletion vector
    assert spark_rows(runs.service, "defaults") == as_multiset(
        [{"id": 1, "v": "v1"}, {"id": 3, "v": "v3"}])
    assert "deletionVectors" not in runs.log("cdf_checks")["features"]  # copy-on-write


def test_clustering_is_refused_clearly_before_any_sql(runs):
    error = runs.statuses[0]["clustering"].error
    assert "Delta Lake on Spark cannot write the Delta table feature 'clustering'" in error
    assert not DeltaTable.is_deltatable(str(runs.service.settings.warehouse / "dbo" / "clustering"))


def test_change_data_feed_with_column_mapping_is_created_then_enabled_then_filled(runs):
    log = runs.log("cdf_mapping")
    assert log["operations"][:4] == ["CREATE TABLE AS SELECT", "SET TBLPROPERTIES", "WRITE",
                                     "MERGE"]
    assert log["configuration"]["delta.enableChangeDataFeed"] == "true"
    assert log["configuration"]["delta.columnMapping.mode"] == "name"
    changes = spark_table(runs.service, "cdf_mapping").sparkSession.read.format("delta") \
        .option("readChangeFeed", "true").option("startingVersion", 2) \
        .load(str(runs.service.settings.warehouse / "dbo" / "cdf_mapping"))
    kinds = {(row["id"], row["_change_type"]) for row in changes.collect()}
    assert kinds == {(1, "insert"), (2, "insert"), (3, "insert"), (2, "delete")}


def test_type_widening_is_metadata_only_where_the_feature_is_on_and_a_rewrite_elsewhere(runs):
    expected = as_multiset([{"id": 1, "v": "v1"}, {"id": 3, "v": "v3"},
                            {"id": 2**40, "v": "big"}])
    for table in ("widening", "rewrite"):  # delta-rs cannot read typeWidening tables
        assert spark_table(runs.service, table).schema["id"].dataType.simpleString() == "bigint"
        assert spark_rows(runs.service, table) == expected, table
    widening, rewrite = runs.log("widening")["operations"], runs.log("rewrite")["operations"]
    assert widening[1:] == ["CHANGE COLUMN", "MERGE"]
    assert rewrite[1:] == ["CREATE OR REPLACE TABLE AS SELECT", "MERGE"]


def test_drop_feature_without_truncation_drops_it_at_once(runs):
    [(results, output)] = runs.drops["dropped"]
    assert not [node.message for node in results if node.failed]
    log = runs.log("dropped")
    assert "deletionVectors" not in log["features"]
    assert "checkpointProtection" in log["features"] and log["protocol"] == (1, 7)
    assert "deletionVectors dropped; protocol now reader 1 / writer 7" in output
    assert "Remove deletionVectors from the model's delta_features too" in output
    code, verdicts = doctor_json(runs.service.settings.warehouse, "delta-2.2,delta-3.2")
    assert verdicts["dbo.dropped"]["delta-2.2"]["can_read"]
    assert "checkpointProtection" in verdicts["dbo.dropped"]["delta-2.2"]["cannot_write"]
    [table] = inspect_json("dropped", "--warehouse", str(runs.service.settings.warehouse),
                           "--history", "20")
    assert (table["min_reader_version"], table["min_writer_version"]) == (1, 7)
    assert "deletionVectors" not in table["reader_features"] + table["writer_features"]
    assert "DROP FEATURE" in [entry["operation"] for entry in table["history"]]
    assert runs.statuses[2]["dropped"].status == "replicating"
    assert "deletionVectors" not in runs.log("dropped")["features"]  # not turned on again


def test_drop_feature_with_truncated_history_takes_two_runs_and_says_so(runs):
    [(first, said_first), (second, said_second)] = runs.drops["truncated"]
    [node] = first
    assert node.failed and "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD" in node.message
    assert "This is Delta's two-step downgrade" in said_first
    assert "delta.dropFeatureTruncateHistory.retentionDuration (24 hours)" in said_first
    assert not [node.message for node in second if node.failed]
    assert "deletionVectors dropped; protocol now reader 1 / writer 2" in said_second
    log = runs.log("truncated")
    assert log["protocol"] == (1, 2) and "checkpointProtection" not in log["features"]
    code, verdicts = doctor_json(runs.service.settings.warehouse, "delta-2.2")
    assert verdicts["dbo.truncated"]["delta-2.2"]["can_read"]
    assert verdicts["dbo.truncated"]["delta-2.2"]["can_write"]
    assert runs.statuses[2]["truncated"].status == "replicating"
