"""Delta settings from dbt config (isolation_level, tblproperties, delta_features) end to end
on the embedded engine, checked in the Delta log that delta-rs reads independently."""

import json
import re
from dataclasses import replace

import pyarrow as pa
import pytest
from deltalake import DeltaTable, TableFeatures, write_deltalake

from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import (
    as_multiset,
    deletion_vectors_added,
    mirror_setup,
    on_dbt_events,
    owner_session,
)

pytestmark = pytest.mark.slow

M = ROW_MARKER
ROWS = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])


def configure(service, settings):
    """Add `settings` (yml lines under models: lakemirror: mirror:) to the project copy."""
    path = service.settings.project_dir / "dbt_project.yml"
    original = path.with_suffix(".original")
    if not original.exists():
        original.write_text(path.read_text())
    path.write_text(original.read_text().replace(
        "    mirror:\n", "    mirror:\n" + "".join(f"      {line}\n" for line in settings)))


def log_of(service, table, schema="dbo"):
    delta = DeltaTable(str(service.settings.warehouse / schema / table))
    protocol = delta.protocol()
    return {
        "protocol": (protocol.min_reader_version, protocol.min_writer_version),
        "features": set(protocol.reader_features or []) | set(protocol.writer_features or []),
        "configuration": delta.metadata().configuration,
        "operations": [entry["operation"] for entry in reversed(delta.history())],
    }


def engine_rows(service, table):
    """Rows as the engine reads them (delta-rs cannot read tables with deletion vectors)."""
    spark = owner_session()
    try:
        data = spark.read.format("delta").load(str(service.settings.warehouse / "dbo" / table))
        return as_multiset([row.asDict() for row in data.select("id", "v").collect()])
    finally:
        spark.stop()


def publish(zone, table, sequence, ids, marker=0):
    zone.write(table, sequence, [{"id": i, "v": f"v{i}", M: marker} for i in ids], ROWS)


def settings_statements(monkeypatch):
    """A function returning the reads of Delta tables' state (their _delta_log) and the
    ALTERs of their properties that dbt ran since it was last called."""
    statements: list[str] = []
    on_dbt_events(monkeypatch, lambda event: statements.append(str(event.data.sql).lower())
                  if event.info.name == "SQLQuery" else None)

    def since() -> tuple[list[str], list[str]]:
        found = ([sql for sql in statements if "_delta_log" in sql],
                 [sql for sql in statements if "tblproperties" in sql])
        statements.clear()
        return found
    return since


def test_settings_apply_at_create_then_only_when_they_change(tmp_path, monkeypatch):
    """Cold runs (a fresh engine session and dbt invocation each), whose service hands each
    build the states it read; dbt without them (plain dbt) reads the table's state."""
    zone, service = mirror_setup(tmp_path)
    assert not service.settings.warm
    statements = settings_statements(monkeypatch)
    configure(service, [
        "+isolation_level: Serializable",
        "+delta_features: [deletionVectors, timestampNtz]",
        "+tblproperties: {team.owner: sales, delta.logRetentionDuration: interval 60 days}",
    ])
    zone.table("T", ["id"])
    publish(zone, "T", 1, [1, 2, 3])
    [status] = service.run()
    assert status.status == "replicating", status.error
    assert status.rows == 3
    log = log_of(service, "t")
    assert log["protocol"] == (3, 7)
    assert {"deletionVectors", "timestampNtz"} <= log["features"]
    assert log["configuration"]["delta.isolationLevel"] == "Serializable"
    assert log["configuration"]["delta.enableDeletionVectors"] == "true"
    assert log["configuration"]["team.owner"] == "sales"
    assert log["configuration"]["delta.logRetentionDuration"] == "interval 60 days"
    assert log["operations"] == ["CREATE TABLE"]

    # Unchanged settings: the run commits its data and no metadata, and reads no state
    # either: no commit came since the last run read the table.
    statements()
    publish(zone, "T", 2, [2], marker=2)
    [status] = service.run()
    assert status.status == "replicating", status.error
    assert statements() == ([], [])
    assert status.rows == 2  # counted from the log: delta-rs cannot read deletion vectors
    assert log_of(service, "t")["operations"] == ["CREATE TABLE", "MERGE"]
    assert engine_rows(service, "t") == as_multiset([{"id": 1, "v": "v1"}, {"id": 3, "v": "v3"}])

    # A changed value is set, a removed key unset, both before the run's data (from the
    # state the last run saw: still no other commit).
    configure(service, [
        "+isolation_level: Serializable",
        "+delta_features: [deletionVectors, timestampNtz, checkConstraints]",
        "+tblproperties: {delta.logRetentionDuration: interval 90 days}",
    ])
    publish(zone, "T", 3, [4])
    [status] = service.run()
    assert status.status == "replicating", status.error
    reads, alters = statements()
    assert reads == [] and len(alters) == 2
    log = log_of(service, "t")
    assert log["operations"] == ["CREATE TABLE", "MERGE", "SET TBLPROPERTIES",
                                 "UNSET TBLPROPERTIES", "MERGE"]
    assert "team.owner" not in log["configuration"]
    assert log["configuration"]["delta.logRetentionDuration"] == "interval 90 days"
    assert "checkConstraints" in log["features"]
    assert engine_rows(service, "t") == as_multiset(
        [{"id": 1, "v": "v1"}, {"id": 3, "v": "v3"}, {"id": 4, "v": "v4"}])

    # Another writer changes a property: the next run reads the table and sets it back.
    DeltaTable(str(service.settings.warehouse / "dbo" / "t")).alter.set_table_properties(
        {"delta.logRetentionDuration": "interval 7 days"})
    publish(zone, "T", 4, [5])
    [status] = service.run()
    assert status.status == "replicating", status.error
    reads, alters = statements()
    assert len(reads) == 1 and len(alters) == 1
    log = log_of(service, "t")
    assert log["configuration"]["delta.logRetentionDuration"] == "interval 90 days"
    assert log["operations"][-3:] == ["SET TBLPROPERTIES", "SET TBLPROPERTIES", "MERGE"]

    # dbt without the run's states (plain dbt) reads the table's state, and sets nothing.
    publish(zone, "T", 5, [6])
    service.ingest_only()
    assert not [node for node in service.dbt(service.settings, "build") if node.failed]
    reads, alters = statements()
    assert len(reads) == 1 and alters == []

    # Staging and control tables stay on the lowest protocol.
    lowest = [path.parent for path in
              (service.settings.warehouse / "_lakemirror").glob("**/_delta_log")]
    assert len(lowest) == 4  # staging dbo/t; control mirror_batches, table_monitor, relations
    for path in lowest:
        protocol = DeltaTable(str(path)).protocol()
        assert (protocol.min_reader_version, protocol.min_writer_version) == (1, 2), path


def test_bad_settings_fail_only_their_table_before_any_sql(tmp_path):
    """Every table of one run: the bad settings fail their own table before it is written,
    the good ones (the change data feed among them) do not."""
    zone, service = mirror_setup(tmp_path)
    configure(service, [
        "dbo:",
        "  dbo__unknown: {+delta_features: [deletionVector]}",
        "  dbo__cdf: {+delta_features: [changeDataFeed]}",
        "  dbo__cdf_property: {+tblproperties: {delta.enableChangeDataFeed: true}}",
        "  dbo__level: {+isolation_level: Snapshot}",
        "  dbo__append: {+delta_features: [appendOnly]}",
        "  dbo__versions: {+tblproperties: {delta.minWriterVersion: 4}}",
    ])
    tables = ["Unknown", "Cdf", "Cdf_property", "Level", "Append", "Versions", "Fine"]
    for table in tables:
        zone.table(table, ["id"])
        publish(zone, table, 1, [1])
    statuses = {status.table: status for status in service.run()}
    assert statuses["fine"].status == "replicating", statuses["fine"].error
    # The feed, by either config, is written on this engine too (through delta-rs).
    for table in ("cdf", "cdf_property"):
        assert statuses[table].status == "replicating", statuses[table].error
        location = str(service.settings.warehouse / "dbo" / table)
        assert DeltaTable(location).metadata().configuration[
            "delta.enableChangeDataFeed"] == "true"
    expected = {
        "unknown": "unknown Delta table feature 'deletionVector' in delta_features. "
                   "the embedded engine (Sail) can write: appendOnly, invariants, "
                   "checkConstraints, columnMapping, deletionVectors, timestampNtz, typeWidening",
        "level": "isolation_level 'Snapshot' is not an isolation level; use Serializable or "
                 "WriteSerializable",
        "append": "appendOnly cannot be used on a mirrored table",
        "versions": "tblproperties delta.minWriterVersion: list the features in delta_features",
    }
    for table, message in expected.items():
        assert statuses[table].status == "failed"
        assert message in statuses[table].error, statuses[table].error
        assert f"model dbo__{table}" in statuses[table].error
        assert not DeltaTable.is_deltatable(str(service.settings.warehouse / "dbo" / table))


def test_open_source_delta_refuses_write_serializable_before_any_sql(tmp_path):
    zone, service = mirror_setup(tmp_path)
    configure(service, ["+isolation_level: WriteSerializable"])
    zone.table("T", ["id"])
    publish(zone, "T", 1, [1])
    service.ingest_only()
    [node] = [node for node in service.dbt(service.settings, "run", extra_vars={
        "lakemirror_engine": "spark"}) if node.unique_id.startswith("model.")]
    assert node.failed
    assert ("Delta Lake on Spark does not accept isolation_level 'WriteSerializable'; "
            "it accepts: Serializable") in node.message
    assert not DeltaTable.is_deltatable(str(service.settings.warehouse / "dbo" / "t"))


def test_column_mapping_is_set_at_create_and_refused_on_an_existing_table(tmp_path):
    zone, service = mirror_setup(tmp_path)
    configure(service, ["dbo:", "  dbo__mapped: {+delta_features: [columnMapping]}"])
    for table in ("Plain", "Mapped"):
        zone.table(table, ["id"])
        publish(zone, table, 1, [1, 2])
    assert {status.status for status in service.run()} == {"replicating"}
    mapped = log_of(service, "mapped")
    assert mapped["protocol"] == (3, 7) and "columnMapping" in mapped["features"]
    assert engine_rows(service, "mapped") == as_multiset([{"id": 1, "v": "v1"},
                                                          {"id": 2, "v": "v2"}])

    configure(service, ["+delta_features: [columnMapping]"])
    for table in ("Plain", "Mapped"):
        publish(zone, table, 2, [3])
    statuses = {status.table: status for status in service.run()}
    assert statuses["mapped"].status == "replicating", statuses["mapped"].error
    assert statuses["plain"].status == "failed"
    assert ("the embedded engine (Sail) can turn on columnMapping only when it first creates "
            "the table; it cannot add it to dbo.plain, which exists") in statuses["plain"].error
    assert log_of(service, "plain")["operations"] == ["CREATE TABLE"]


def run_macro(service, capsys, body):
    """Render `body` in a run-operation of the project and return what it printed."""
    (service.settings.project_dir / "macros" / "probe.sql").write_text(
        "{% macro probe() %}" + body + "{% endmacro %}")
    capsys.readouterr()
    # dbt prints nothing at log level none
    service.settings = replace(service.settings, quiet=False)
    results = service.dbt(service.settings, "run-operation", "probe")
    assert not any(node.failed for node in results), results
    return capsys.readouterr().out


# Lowest protocols from Databricks' "Delta Lake feature compatibility and protocols" table.
LOWEST = [
    ("spark", ["changeDataFeed"], {"delta.minReaderVersion": "1",
                                   "delta.minWriterVersion": "4"}),
    ("spark", ["checkConstraints", "appendOnly"], {"delta.minReaderVersion": "1",
                                                   "delta.minWriterVersion": "3"}),
    ("spark", ["columnMapping"], {"delta.minReaderVersion": "2", "delta.minWriterVersion": "5"}),
    ("spark", ["changeDataFeed", "deletionVectors"], {
        "delta.feature.changeDataFeed": "supported",
        "delta.feature.deletionVectors": "supported"}),
    ("sail", ["appendOnly"], {}),
    ("sail", ["checkConstraints", "deletionVectors"], {
        "delta.feature.checkConstraints": "supported",
        "delta.feature.deletionVectors": "supported"}),
]


def test_lowest_protocol_for_a_feature_set(tmp_path, capsys):
    _, service = mirror_setup(tmp_path)
    cases = "".join(
        "{% do print(tojson(lakemirror._protocol_properties(" + json.dumps(features)
        + ", lakemirror.delta_feature_catalog(), {'legacy_protocols': "
        + ("true" if engine == "spark" else "false") + "}))) %}"
        for engine, features, _ in LOWEST)
    printed = re.findall(r"^\{.*\}$", run_macro(service, capsys, cases), re.MULTILINE)
    assert [json.loads(line) for line in printed] == [expected for _, _, expected in LOWEST]


def test_delta_state_is_read_from_commits_or_from_the_last_checkpoint(tmp_path, capsys):
    _, service = mirror_setup(tmp_path)
    data = pa.table({"id": [1]})
    paths = {name: tmp_path / name for name in ("commits", "checkpointed")}
    for name, path in paths.items():
        write_deltalake(str(path), data, configuration={"delta.appendOnly": "false"})
        DeltaTable(str(path)).alter.set_table_properties(
            {"delta.appendOnly": "true", "delta.logRetentionDuration": "interval 9 days"})
        DeltaTable(str(path)).alter.add_feature(TableFeatures.TimestampWithoutTimezone,
                                                allow_protocol_versions_increase=True)
        write_deltalake(str(path), data, mode="append")
    checkpointed = DeltaTable(str(paths["checkpointed"]))
    checkpointed.create_checkpoint()
    for commit in (paths["checkpointed"] / "_delta_log").glob("*.json"):
        commit.unlink()
    calls = "".join("{% do print(tojson(lakemirror.read_delta_state('" + str(path) + "'))) %}"
                    for path in paths.values())
    printed = re.findall(r"^\{.*\}$", run_macro(service, capsys, calls), re.MULTILINE)
    for path, line in zip(paths.values(), printed):
        state, delta = json.loads(line), DeltaTable(str(path))
        protocol = delta.protocol()
        assert state["configuration"] == delta.metadata().configuration
        assert (state["reader"], state["writer"]) == (protocol.min_reader_version,
                                                     protocol.min_writer_version)
        assert set(state["features"]) == {*protocol.reader_features, *protocol.writer_features}


def test_drop_feature_is_refused_on_the_embedded_engine_and_for_undroppable_features(tmp_path):
    _, service = mirror_setup(tmp_path)
    cases = {
        "deletionVectors": "the embedded engine (Sail) cannot drop table features (it has no "
                           "ALTER TABLE ... DROP FEATURE). Run this operation on a target with "
                           "Delta Lake 3.x or later on Spark, or Databricks",
        "appendOnly": "Delta cannot drop the table feature 'appendOnly'. Droppable features: "
                      "checkConstraints, columnMapping, deletionVectors, typeWidening, "
                      "v2Checkpoint, vacuumProtocolCheck, inCommitTimestamp, "
                      "collations-preview, checkpointProtection",
    }
    for feature, message in cases.items():
        [node] = service.dbt(service.settings, "run-operation", "lakemirror.drop_feature",
                             "--args", json.dumps({"relation": "dbo.t", "feature": feature}))
        assert node.failed and message in node.message, node.message


OWN_MODEL = """{{{{ config(materialized='{materialized}', unique_key='id',
    isolation_level='Serializable', delta_features=['checkConstraints'],
    tblproperties={{'team.owner': '{owner}'}}) }}}}
select 1 as id, 'x' as v
"""


def test_your_own_table_and_incremental_models_take_the_settings(tmp_path):
    _, service = mirror_setup(tmp_path)
    models = service.settings.project_dir / "models" / "own"
    models.mkdir(parents=True)

    def build(owner):
        for materialized in ("table", "incremental"):
            (models / f"own_{materialized}.sql").write_text(
                OWN_MODEL.format(materialized=materialized, owner=owner))
        results = service.dbt(service.settings, "run", "--select", "own_table", "own_incremental")
        assert not [node.message for node in results if node.failed]

    def log(materialized):
        return log_of(service, f"own_{materialized}", schema="analytics")

    build("sales")
    build("sales")
    for materialized in ("table", "incremental"):  # a replace, an append: no metadata commit
        state = log(materialized)
        assert state["operations"] == ["CREATE TABLE", "WRITE"], materialized
        assert "checkConstraints" in state["features"]
        assert state["configuration"]["team.owner"] == "sales"
        assert state["configuration"]["delta.isolationLevel"] == "Serializable"

    build("finance")
    for materialized in ("table", "incremental"):
        state = log(materialized)
        assert state["configuration"]["team.owner"] == "finance"
    # A kept table is updated before the run's data, a replaced one after its replace.
    assert log("incremental")["operations"] == ["CREATE TABLE", "WRITE", "SET TBLPROPERTIES",
                                                "WRITE"]
    assert log("table")["operations"] == ["CREATE TABLE", "WRITE", "WRITE", "SET TBLPROPERTIES"]


def test_new_mirrored_tables_get_deletion_vectors_unless_a_reader_needs_copy_on_write(
        tmp_path):
    zone, service = mirror_setup(tmp_path)
    configure(service, ["dbo:", "  dbo__arrow: {+lakemirror_readers: [delta-4.0, "
                                "delta-rs-pyarrow]}"])
    files = [[{"id": i, "v": f"v{i}", M: 0} for i in range(1, 6)],
             [{"id": 2, "v": None, M: 2}, {"id": 3, "v": "w3", M: 1}]]
    for table in ("T", "Arrow"):
        zone.table(table, ["id"])
        for sequence, rows in enumerate(files, 1):
            zone.write(table, sequence, rows, ROWS)
    statuses = {status.table: status for status in service.run()}
    assert {status.status for status in statuses.values()} == {"replicating"}
    expected = as_multiset([{k: v for k, v in row.items() if k != M}
                            for row in apply_changes(files, ["id"])])

    log = log_of(service, "t")  # the default reader set reads deletion vectors
    assert log["protocol"] == (3, 7) and "deletionVectors" in log["features"]
    assert log["configuration"]["delta.enableDeletionVectors"] == "true"
    publish(zone, "T", 3, [4], marker=2)  # a MERGE on the table's one file
    [status] = service.run(["dbo.t"])
    assert status.status == "replicating", status.error
    assert deletion_vectors_added(service.settings.warehouse / "dbo" / "t", commits=1) == 1
    assert status.rows == 3  # counted past the deletion vector
    assert engine_rows(service, "t") == expected - as_multiset([{"id": 4, "v": "v4"}])

    arrow = log_of(service, "arrow")  # delta-rs-pyarrow cannot: copy-on-write
    assert arrow["protocol"] == (1, 2) and not arrow["features"]
    assert "delta.enableDeletionVectors" not in arrow["configuration"]
    rows = DeltaTable(str(service.settings.warehouse / "dbo" / "arrow")).to_pyarrow_table()
    assert as_multiset(rows.select(["id", "v"]).to_pylist()) == expected

    # The reader set decides for new tables only: an existing table keeps its protocol.
    configure(service, [])
    publish(zone, "Arrow", 3, [6])
    [status] = service.run(["dbo.arrow"])
    assert status.status == "replicating", status.error
    assert log_of(service, "arrow")["protocol"] == (1, 2)


def test_reader_set_from_the_var_and_its_mistakes(tmp_path):
    zone, service = mirror_setup(tmp_path)
    configure(service, ["dbo:",
                        "  dbo__unknown: {+lakemirror_readers: 'delta-4.0, spark-9'}",
                        "  dbo__both: {+delta_features: [deletionVectors]}",
                        "  dbo__opted_out: {+tblproperties: {delta.enableDeletionVectors: false}}"])
    service.settings = replace(service.settings,
                               dbt_vars={"lakemirror_readers": "delta-rs-pyarrow,dbr-14.3"})
    for table in ("Plain", "Unknown", "Both", "Opted_out"):
        zone.table(table, ["id"])
        publish(zone, table, 1, [1])
    statuses = {status.table: status for status in service.run()}
    assert statuses["plain"].status == "replicating", statuses["plain"].error
    assert log_of(service, "plain")["protocol"] == (1, 2)
    assert statuses["unknown"].status == "failed"
    assert ("model dbo__unknown: unknown reader 'spark-9' in lakemirror_readers; use names "
            "from: delta-1.0,") in statuses["unknown"].error
    assert statuses["both"].status == "failed"
    assert ("model dbo__both: delta_features turn on deletionVectors, which delta-rs-pyarrow in "
            "lakemirror_readers cannot read; remove one or the other") in statuses["both"].error

    # the default set: deletion vectors, unless the config says no
    service.settings = replace(service.settings, dbt_vars={})
    for table in ("New", "Opted_out"):
        zone.table(table, ["id"])
        publish(zone, table, 2 if table == "Opted_out" else 1, [2])
    statuses = {status.table: status for status in service.run(["dbo.new", "dbo.opted_out"])}
    assert "deletionVectors" in log_of(service, "new")["features"]
    assert statuses["opted_out"].status == "replicating", statuses["opted_out"].error
    opted_out = log_of(service, "opted_out")
    assert opted_out["protocol"] == (1, 2)
    assert opted_out["configuration"]["delta.enableDeletionVectors"] == "false"
