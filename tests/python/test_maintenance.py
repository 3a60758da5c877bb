"""Staging compaction and table maintenance: after folding the applied changes, a rebuild from
staging gives the same table as the whole history, later changes (ConditionalUpdateColumn
included) apply as before, a crash mid-compaction loses nothing, and `maintain` compacts and
vacuums the mirrored table."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable, write_deltalake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakemirror import maintenance
from lakemirror.cli.main import cli
from lakemirror.errors import EngineError
from lakemirror.delta.rows import read_table, table_row_count, without_views
from lakemirror.landing import POSITION, ROWS_PER_FILE, discover_tables, sequence_file_name
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.service import MirrorService, RunSettings
from lakemirror.environment import MAINTENANCE_HOURS, read_settings
from lakemirror.staging import Warehouse, ingest_table
from lakemirror.staging.compaction import compact_staging

from conftest import (
    SPARK_UNAVAILABLE,
    Zone,
    as_multiset,
    copy_project,
    deletion_vectors_added,
    mirror_setup,
    mirrored_rows,
)
from test_delta_settings import configure

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("c", pa.int64()), ("v", pa.string()), (M, pa.int32())])

change = st.fixed_dictionaries({
    "id": st.integers(1, 4), "c": st.one_of(st.none(), st.integers(0, 5)),
    "v": st.sampled_from(["a", "b", "c"]), M: st.sampled_from([0, 1, 2, 4])})
streams = st.lists(st.lists(change, min_size=1, max_size=5), min_size=2, max_size=6)


def positioned(files):
    """The files' rows with the position each gets when staged, as a data column."""
    return [[{**row, POSITION: sequence * ROWS_PER_FILE + index}
             for index, row in enumerate(rows)] for sequence, rows in enumerate(files, 1)]


def stage(tmp_path, files, conditional):
    zone = Zone(tmp_path / "LandingZone")
    folder = zone.table("T", None)
    keys = '{"keyColumns": ["id"]%s}' % (', "ConditionalUpdateColumn": "c"' if conditional
                                         else "")
    (folder / "_metadata.json").write_text(keys)
    for sequence, rows in enumerate(files, 1):
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA),
                       folder / sequence_file_name(sequence))
    warehouse = Warehouse(tmp_path / "wh")
    [table] = discover_tables(zone.root)
    assert ingest_table(table, warehouse).status == "replicating"
    return warehouse


def rebuilt(rows, conditional):
    """The table the reference model builds from staged rows (one change log)."""
    ordered = sorted(rows, key=lambda row: row[POSITION])
    return as_multiset([{k: v for k, v in row.items() if k != M}
                        for row in apply_changes([ordered], ["id"],
                                                 conditional_column=conditional)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=streams, applied=st.integers(1, 5), conditional=st.booleans())
def test_a_rebuild_after_compaction_equals_the_whole_history(tmp_path_factory, files, applied,
                                                              conditional):
    tmp_path = tmp_path_factory.mktemp("compaction")
    column = "c" if conditional else None
    applied = min(applied, len(files) - 1)  # later files stay unapplied
    warehouse = stage(tmp_path, files, conditional)
    staging = warehouse.staging_path("dbo", "t")
    history = DeltaTable(str(staging)).to_pyarrow_table().to_pylist()
    watermark = max(row[POSITION] for row in history
                    if row[POSITION] < (applied + 1) * ROWS_PER_FILE)
    current = apply_changes(positioned(files[:applied]), ["id"], conditional_column=column)
    mirrored = tmp_path / "mirrored"
    write_deltalake(str(mirrored), pa.Table.from_pylist(
        [{k: v for k, v in row.items() if k != M} for row in current],
        schema=pa.schema([(POSITION, pa.int64()), *list(SCHEMA)[:-1]])))

    compact_staging(staging, mirrored, watermark, keys=["id"], conditional_column=column,
                    table="dbo.t")

    folded = DeltaTable(str(staging)).to_pyarrow_table().to_pylist()
    assert rebuilt(folded, column) == rebuilt(history, column)
    def after(rows):
        return sorted((row for row in rows if row[POSITION] > watermark),
                      key=lambda row: row[POSITION])
    assert after(folded) == after(history)
    assert len([row for row in folded if row[POSITION] <= watermark]) <= max(
        len(current) + len({row["id"] for row in history}), 1)


def test_a_crash_mid_compaction_leaves_staging_as_it_was(tmp_path, monkeypatch):
    files = [[{"id": 1, "c": 1, "v": "a", M: 0}], [{"id": 1, "c": 2, "v": "b", M: 1}]]
    warehouse = stage(tmp_path, files, False)
    staging = warehouse.staging_path("dbo", "t")
    before = DeltaTable(str(staging))
    mirrored = tmp_path / "mirrored"
    write_deltalake(str(mirrored), pa.table({POSITION: [2 * ROWS_PER_FILE], "id": [1], "c": [2],
                                             "v": ["b"]}))

    def crash(*args, **kwargs):
        raise OSError("disk vanished")
    monkeypatch.setattr("lakemirror.staging.compaction.write_delta", crash)
    with pytest.raises(OSError):
        compact_staging(staging, mirrored, 2 * ROWS_PER_FILE, keys=["id"],
                        conditional_column=None, table="dbo.t")
    after = DeltaTable(str(staging))
    assert after.version() == before.version()
    assert after.to_pyarrow_table().num_rows == 2


@pytest.mark.slow
def test_maintain_folds_compacts_and_vacuums_and_mirroring_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv(MAINTENANCE_HOURS, "never")
    zone, service = mirror_setup(tmp_path)
    folder = zone.table("T", None)
    (folder / "_metadata.json").write_text(
        '{"keyColumns": ["id"], "ConditionalUpdateColumn": "c"}')
    files = [[{"id": i, "c": 1, "v": "a", M: 0} for i in range(1, 6)],
             [{"id": 1, "c": 2, "v": "b", M: 1}, {"id": 2, "c": 9, "v": None, M: 2}],
             [{"id": 3, "c": 3, "v": "c", M: 4}, {"id": 1, "c": 5, "v": "d", M: 4}]]
    for sequence, rows in enumerate(files, 1):
        zone.write("T", sequence, rows, SCHEMA)
        assert all(not s.unhealthy for s in service.run())
    staging = service.settings.layout.staging_path("dbo", "t")
    mirrored = service.settings.layout.mirrored_path("dbo", "t")
    mirrored_files = len(DeltaTable(str(mirrored)).file_uris())
    assert deletion_vectors_added(mirrored) > 0  # the default: MERGEs marked rows removed

    [result] = maintenance.maintain(service.settings.warehouse)

    assert result.skipped == () and result.staged_rows_folded == 9
    assert result.snapshot_rows == 5  # 4 current rows + the delete holding id 2's high-water
    assert len(DeltaTable(str(mirrored)).file_uris()) < mirrored_files
    current = [{k: v for k, v in row.items() if k != M}
               for row in apply_changes(files, ["id"], conditional_column="c")]
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(current)  # compacted
    assert table_row_count(mirrored) == len(current)  # as status counts it
    for table in (staging, mirrored):  # days on, vacuum removes the replaced files, committing
        assert DeltaTable(str(table)).vacuum(retention_hours=0, enforce_retention_duration=False,
                                             dry_run=False)
    assert DeltaTable(str(staging)).history(limit=1)[0]["operation"] == "VACUUM END"
    later = [[{"id": 2, "c": 8, "v": "late and old", M: 4},  # below id 2's high-water 9: skipped
              {"id": 4, "c": 7, "v": "e", M: 1}]]
    zone.write("T", 4, later[0], SCHEMA)
    assert all(not s.unhealthy for s in service.run())
    expected = apply_changes(files + later, ["id"], conditional_column="c")
    data = [{k: v for k, v in row.items() if k != M} for row in expected]
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(data)
    rows = DeltaTable(str(staging)).to_pyarrow_table().num_rows
    assert rows == 5 + 2
    # A rebuild from the folded staging gives the same table.
    shutil.rmtree(mirrored)
    assert all(not s.unhealthy for s in service.run())
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(data)
    assert Counter(maintenance.due_tables(service.settings.warehouse, ["dbo.t"],
                                          hours=service.settings.env.maintenance_hours)
                   ) == Counter()


@pytest.mark.slow
def test_maintain_folds_a_table_with_deletion_vectors_and_text_keys(tmp_path, monkeypatch):
    """With deletion vectors delta-rs reads the mirrored table through its SQL engine, whose
    text columns (string_view) Arrow cannot join on: the fold of a text key with a
    ConditionalUpdateColumn still runs, and a rebuild gives the same table."""
    monkeypatch.setenv(MAINTENANCE_HOURS, "never")
    zone = Zone(tmp_path / "LandingZone")
    folder = zone.table("T", None)
    (folder / "_metadata.json").write_text(
        '{"keyColumns": ["code"], "ConditionalUpdateColumn": "c"}')
    project = copy_project(tmp_path / "project", delta_features=("deletionVectors",))
    service = MirrorService(RunSettings.given(zone.root, tmp_path / "warehouse", project,
                                              quiet=True))
    schema = pa.schema([("code", pa.string()), ("c", pa.int64()), ("v", pa.string()),
                        (M, pa.int32())])
    files = [[{"code": f"k{i}", "c": 1, "v": "a", M: 0} for i in range(1, 6)],
             [{"code": "k1", "c": 2, "v": "b", M: 1}, {"code": "k2", "c": 9, "v": None, M: 2}]]
    for sequence, rows in enumerate(files, 1):
        zone.write("T", sequence, rows, schema)
        assert all(not s.unhealthy for s in service.run())
    mirrored = service.settings.layout.mirrored_path("dbo", "t")
    assert "deletionVectors" in (DeltaTable(str(mirrored)).protocol().reader_features or ())

    [result] = maintenance.maintain(service.settings.warehouse)

    assert result.skipped == () and result.staged_rows_folded == 7
    assert result.snapshot_rows == 5  # 4 current rows + the delete holding k2's high-water
    expected = as_multiset([{k: v for k, v in row.items() if k != M}
                            for row in apply_changes(files, ["code"], conditional_column="c")])
    shutil.rmtree(mirrored)
    assert all(not s.unhealthy for s in service.run())
    rebuilt = read_table(mirrored)
    assert as_multiset(rebuilt.drop_columns([POSITION]).to_pylist()) == expected


def test_view_types_are_read_as_plain_types_nested_ones_included():
    def nested(text, data):
        return pa.struct([("name", text), ("tags", pa.list_(text)), ("more", pa.large_list(data)),
                          ("pairs", pa.map_(text, data))])
    views = pa.table({
        "code": pa.array(["a"], pa.string_view()),
        "nested": pa.array([{"name": "b", "tags": ["c"], "more": [b"d"], "pairs": [("k", b"v")]}],
                           nested(pa.string_view(), pa.binary_view()))})

    plain = without_views(views)

    assert plain.schema == pa.schema([("code", pa.string()),
                                      ("nested", nested(pa.string(), pa.binary()))])
    assert plain.to_pylist() == views.to_pylist()


@pytest.mark.slow
def test_run_maintains_a_table_when_its_maintenance_is_due(tmp_path):
    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    staging = service.settings.layout.staging_path("dbo", "t")
    zone.write("T", 1, [{"id": 1, "c": 1, "v": "a", M: 0}], SCHEMA)
    service.run()  # first seen: stamped, nothing to maintain yet
    zone.write("T", 2, [{"id": 1, "c": 2, "v": "b", M: 1}], SCHEMA)
    service.run()  # within the default 24 hours: not due
    assert DeltaTable(str(staging)).to_pyarrow_table().num_rows == 2
    service.settings = replace(service.settings, env=read_settings({MAINTENANCE_HOURS: "0"}))
    zone.write("T", 3, [{"id": 1, "c": 3, "v": "c", M: 1}], SCHEMA)
    [status] = service.run()
    assert status.status == "replicating" and service.run_warnings == []
    assert DeltaTable(str(staging)).to_pyarrow_table().num_rows == 1  # folded
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(
        [{"id": 1, "c": 3, "v": "c"}])


@pytest.mark.parametrize("value", ["-2", "daily", "inf"])
def test_a_bad_maintenance_interval_is_a_config_error(value):
    from lakemirror.errors import ConfigError

    with pytest.raises(ConfigError, match=MAINTENANCE_HOURS):
        read_settings({MAINTENANCE_HOURS: value})


def two_mirrored_tables(tmp_path, monkeypatch):
    """dbo.a and dbo.b, mirrored twice (so staging has applied changes to fold)."""
    monkeypatch.setenv(MAINTENANCE_HOURS, "never")
    zone, service = mirror_setup(tmp_path)
    for table in ("A", "B"):
        zone.table(table, ["id"])
        zone.write(table, 1, [{"id": i, "c": 1, "v": "a", M: 0} for i in range(1, 4)], SCHEMA)
        zone.write(table, 2, [{"id": 1, "c": 2, "v": "b", M: 1}], SCHEMA)
    assert all(not status.unhealthy for status in service.run())
    return service


def maintain_cli(service, *options):
    """`lakemirror maintain`'s exit code and JSON tables (or text, with --text)."""
    as_json = "--text" not in options
    arguments = ["maintain", "--warehouse", str(service.settings.warehouse),
                 *(option for option in options if option != "--text")]
    result = CliRunner().invoke(cli, arguments + (["--json"] if as_json else []))
    return result.exit_code, (json.loads(result.stdout)["tables"] if as_json
                              else result.stdout)


@pytest.mark.slow
def test_a_failed_step_fails_maintain_naming_it_and_the_other_tables_go_on(tmp_path,
                                                                          monkeypatch):
    """A mirror that differs from its staged changes: its staging compaction fails (the
    changes are kept as evidence); the other table is folded, and both are vacuumed."""
    service = two_mirrored_tables(tmp_path, monkeypatch)
    DeltaTable(str(service.settings.warehouse / "dbo" / "a")).delete("id = 3")

    unknown = CliRunner().invoke(cli, ["maintain", "--warehouse",
                                       str(service.settings.warehouse), "--table", "dbo.c"])
    assert unknown.exit_code == 2 and "has no table dbo.c" in unknown.output
    assert "name its tables as schema.table: dbo.a, dbo.b" in unknown.output

    code, text = maintain_cli(service, "--table", "dbo.a", "--text")
    assert code == 1
    assert text.startswith("dbo.a: 0 applied changes folded into 0 rows")
    assert ("files vacuumed; FAILED staging compaction: StorageError: [table dbo.a] the mirror "
            "differs from its staged changes (1 missing, 0 extra, 0 changed rows)") in text
    code, tables = maintain_cli(service)
    assert code == 1
    a, b = sorted(tables, key=lambda table: table["table"])
    assert a["staged_rows_folded"] == 0 and a["skipped"] == []
    [failure] = a["failed"]
    assert failure.startswith("staging compaction: StorageError: [table dbo.a] the mirror "
                              "differs") and "lakemirror verify dbo.a" in failure
    assert b["staged_rows_folded"] == 4 and b["failed"] == b["skipped"] == []

    # `run` maintains too: its outcome stands, with a warning naming the table and the step.
    monkeypatch.setenv(MAINTENANCE_HOURS, "0")
    service.settings = replace(service.settings, env=read_settings())
    assert all(not status.unhealthy for status in service.run())
    assert [warning for warning in service.run_warnings if "dbo.a" in warning] == [
        f"maintenance of dbo.a: {failure}"]


def test_an_optimize_that_fails_on_one_clustered_table_names_it_and_spares_the_others(
        tmp_path, monkeypatch):
    """OPTIMIZE runs once for every clustered table; when it fails, once per table, so only
    the table that fails is reported failed (the others reclustered); an engine without
    OPTIMIZE skips the step, which is no failure."""
    service = two_mirrored_tables(tmp_path, monkeypatch)
    monkeypatch.setattr(maintenance, "_clustered", lambda path: True)  # Sail cannot cluster
    calls: list[list[str]] = []

    def optimize(locations):
        calls.append([location.name for location in locations])
        if "a" in calls[-1]:
            raise EngineError("OPTIMIZE failed: NoClassDefFoundError", hint="see above")

    layout = service.settings.layout
    a, b = maintenance.maintain_tables(layout, ["dbo.a", "dbo.b"], optimize=optimize)
    assert calls == [["a", "b"], ["a"], ["b"]]
    assert a.failed == ("mirrored OPTIMIZE: EngineError: OPTIMIZE failed: "
                        "NoClassDefFoundError Fix: see above",) and not a.optimized
    assert b.optimized and b.failed == ()

    def no_optimize(locations):
        raise maintenance.StepSkipped("the engine has no OPTIMIZE")

    for table in maintenance.maintain_tables(layout, ["dbo.a", "dbo.b"], optimize=no_optimize):
        assert table.skipped == ("mirrored OPTIMIZE: the engine has no OPTIMIZE",)
        assert table.failed == () and not table.optimized


@pytest.mark.slow
def test_maintain_on_an_engine_without_optimize_skips_it_and_exits_0(tmp_path, monkeypatch):
    service = two_mirrored_tables(tmp_path, monkeypatch)
    monkeypatch.setattr(maintenance, "_clustered", lambda path: True)  # Sail cannot cluster
    monkeypatch.chdir(service.settings.project_dir)
    code, tables = maintain_cli(service, "--target", "embedded")
    assert code == 0
    for table in tables:
        assert table["skipped"] == [
            "mirrored OPTIMIZE: the embedded target's engine has no OPTIMIZE; give `lakemirror "
            "maintain` the spark or connect target (--target)"] and table["failed"] == []


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.skipif(SPARK_UNAVAILABLE is not None,
                    reason=f"spark target skipped: {SPARK_UNAVAILABLE}")
def test_an_optimize_the_delta_build_cannot_do_fails_maintain_saying_why(tmp_path, monkeypatch):
    """OPTIMIZE of a table clustered on two columns needs Delta's HilbertStates class: a Delta
    jar without it fails the step, and maintain says what is missing and what works. delta-rs
    cannot write a clustered table: its vacuum is skipped, which is no failure."""
    monkeypatch.setenv(MAINTENANCE_HOURS, "never")
    zone, service = mirror_setup(tmp_path, "spark")
    zone.table("T", ["id"])
    configure(service, ["dbo:", "  dbo__t: {+cluster_by: [id, v]}"])
    zone.write("T", 1, [{"id": i, "c": 1, "v": "a", M: 0} for i in range(1, 4)], SCHEMA)
    assert all(not status.unhealthy for status in service.run())
    monkeypatch.chdir(service.settings.project_dir)
    code, [table] = maintain_cli(service, "--target", "spark")
    assert table["skipped"] == [  # a clustered table's vacuum is the engine's to do
        "vacuum of t: delta-rs cannot write clustering, domainMetadata (the engine's OPTIMIZE "
        "and VACUUM can: run them on the spark target)"]
    if delta_jar_has("HilbertStates"):  # a Delta release jar
        assert code == 0 and table["optimized"] is True
        return
    assert code == 1 and not table["optimized"]
    assert table["failed"] == [
        "mirrored OPTIMIZE: EngineError: OPTIMIZE failed: this Delta Lake build lacks "
        "Hilbert-curve clustering (class HilbertStates), which OPTIMIZE needs for a table "
        "clustered on two or more columns Fix: use a Delta Lake release jar (delta-spark from "
        "Maven Central), or cluster the table on one column (cluster_by) and --full-refresh it"]


def delta_jar_has(name):
    """Whether the Delta jar of LAKEMIRROR_DELTA_JARS (else a release's, from Maven) holds a
    class `name`."""
    if not os.environ.get("LAKEMIRROR_DELTA_JARS"):
        return True
    [jar] = Path(os.environ["LAKEMIRROR_DELTA_JARS"]).glob("delta-spark_*.jar")
    return any(entry.endswith(f"/{name}.class") for entry in zipfile.ZipFile(jar).namelist())


@pytest.mark.parametrize("folder", ["missing", "empty", "landing zone"])
def test_maintain_refuses_a_folder_that_is_no_warehouse_and_writes_nothing(tmp_path, folder):
    path = tmp_path / folder
    if folder != "missing":
        path.mkdir()
    if folder == "landing zone":
        (path / "Customers").mkdir()
        (path / "Customers/_metadata.json").write_text('{"keyColumns": ["id"]}')
    before = sorted(tmp_path.rglob("*"))
    result = CliRunner().invoke(cli, ["maintain", "--warehouse", str(path)])
    assert result.exit_code == 2 and f"{path} is not a lakemirror warehouse" in result.output
    assert sorted(tmp_path.rglob("*")) == before
