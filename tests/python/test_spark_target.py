"""The `spark` target (Apache Spark + Delta Lake, session method) as a process uses it: several
warehouses in one process, a clean run from the command line, and staging and control tables
that Delta on Spark can read whatever the column types. (The mirror scenarios themselves, on
both engines: test_spark_scenarios.py.)

Runs where Delta's JVM jars are present: `make test` sets LAKEMIRROR_DELTA_JARS to
../shared/delta-4.0.0 when that folder exists; elsewhere these tests skip and say why.
"""

import datetime
import decimal
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

import lakemirror.staging.ingest as ingest_module
from lakemirror.delta.listed_features import list_used_features, unlisted_features
from lakemirror.engine.spark import make_delta_jars_absolute
from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import (
    ENGINES,
    SPARK_UNAVAILABLE,
    as_multiset,
    mirror_setup,
    mirrored_rows,
    spark_session,
)

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
BIN = Path(sys.executable).parent
spark_only = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(SPARK_UNAVAILABLE is not None,
                                 reason=f"spark target skipped: {SPARK_UNAVAILABLE}")]


def data_rows(rows):
    return [{name: value for name, value in row.items() if name != M} for row in rows]


def run_spark_cli(zone, service, cwd, **env):
    """`lakemirror run --target spark` on the zone and warehouse in a process of its own."""
    return subprocess.run(
        [str(BIN / "lakemirror"), "run", "--target", "spark", "--landing-zone", str(zone.root),
         "--warehouse", str(service.settings.warehouse),
         "--project-dir", str(service.settings.project_dir)],
        cwd=cwd, capture_output=True, text=True, timeout=600,
        env={**os.environ, "LAKEMIRROR_HOME": str(service.settings.warehouse.parent / "home"),
             **env})


@pytest.mark.slow
@pytest.mark.parametrize("target", ENGINES)
def test_one_process_mirrors_several_warehouses_each_with_its_own_catalog(tmp_path, target):
    """Two warehouses with a table of the same name, mirrored in turns by one process (one of
    them warm, as `run --watch` keeps its session): each sees only its own tables."""
    setups = [mirror_setup(tmp_path / name, target) for name in ("first", "second")]
    setups[0][1].warm = True
    streams: list[list[list[dict[str, object]]]] = [[], []]
    for index, sequence in ((0, 1), (1, 1), (0, 2)):
        zone, service = setups[index]
        zone.table("T", ["id"])
        rows = [{"id": index * 10 + sequence, "v": f"w{index}-{sequence}", M: 0},
                {"id": index * 10 + 1, "v": f"w{index}-update-{sequence}", M: 4}]
        zone.write("T", sequence, rows, SCHEMA)
        streams[index].append(rows)
        [status] = service.run()
        assert status.status == "replicating", status.error
    for (zone, service), files in zip(setups, streams):
        expected = data_rows(apply_changes(files, ["id"]))
        assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(expected)
        history = DeltaTable(str(service.settings.warehouse / "dbo" / "t")).history()
        assert [entry["operation"] for entry in reversed(history)][1:] == ["MERGE"] * (
            len(files) - 1)


@pytest.mark.parametrize("target", [pytest.param("spark", marks=spark_only)])
def test_a_spark_run_from_the_command_line_is_quiet_and_leaves_no_stray_files(tmp_path, target):
    zone, service = mirror_setup(tmp_path, target)
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    run = run_spark_cli(zone, service, cwd=workdir)
    assert run.returncode == 0, run.stderr
    assert re.search(r"dbo\.t\s+T\s+replicating", run.stdout), run.stdout
    for noise in ("Exception", "Using an existing Spark session", "derby"):
        assert noise not in run.stdout + run.stderr, run.stderr
    # Spark's own start-up lines come before its log level is set; nothing is logged after.
    after_start = run.stderr.split('Setting Spark log level to "ERROR".')[-1]
    assert " WARN " not in after_start and " ERROR " not in after_start, run.stderr
    assert sorted(path.name for path in workdir.iterdir()) == []
    project = service.settings.project_dir
    assert not list(project.glob("*.log")), list(project.iterdir())
    assert not (service.settings.warehouse / "_lakemirror" / "metastore_db").exists()


@pytest.mark.parametrize("target", [pytest.param("spark", marks=spark_only)])
def test_a_spark_run_without_delta_jars_names_the_setting_to_fix(tmp_path, target):
    zone, service = mirror_setup(tmp_path, target)
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    (tmp_path / "no-jars").mkdir()
    run = run_spark_cli(zone, service, cwd=tmp_path, LAKEMIRROR_DELTA_JARS="no-jars")
    assert run.returncode == 2, run.stderr
    assert ("the spark target cannot start: no delta-spark_*.jar in LAKEMIRROR_DELTA_JARS=no-jars "
            "(a relative path is read from the folder lakemirror runs in: "
            f"{tmp_path.resolve() / 'no-jars'})") in run.stderr
    for noise in ("Traceback", "Ivy", "JAVA_GATEWAY"):  # refused before the JVM started
        assert noise not in run.stderr, run.stderr


def test_a_relative_delta_jars_folder_is_resolved_against_the_current_folder(tmp_path,
                                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    environ = {"LAKEMIRROR_DELTA_JARS": "jars"}
    make_delta_jars_absolute(environ)
    assert environ == {"LAKEMIRROR_DELTA_JARS": str(tmp_path.resolve() / "jars")}
    make_delta_jars_absolute(environ)  # an absolute folder stays as it is
    assert environ == {"LAKEMIRROR_DELTA_JARS": str(tmp_path.resolve() / "jars")}


EVERY_TYPE = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("naive", pa.timestamp("us")),
    pa.field("aware", pa.timestamp("us", tz="UTC")),
    pa.field("day", pa.date32()),
    pa.field("amount", pa.decimal128(12, 3)),
    pa.field("raw", pa.binary()),
    pa.field("flag", pa.bool_()),
    pa.field("ratio", pa.float32()),
    pa.field("tags", pa.list_(pa.string())),
    pa.field("point", pa.struct([pa.field("x", pa.int32(), nullable=False),
                                 pa.field("y", pa.int32())])),
    pa.field("attributes", pa.map_(pa.string(), pa.int64())),
    pa.field(M, pa.int32()),
])


def every_type_row(key, marker, second=0):
    return {"id": key, "naive": datetime.datetime(2024, 5, 1, 12, 30, second),
            "aware": datetime.datetime(2024, 5, 1, 10, 0, second, tzinfo=datetime.timezone.utc),
            "day": datetime.date(2024, 5, key), "amount": decimal.Decimal(f"{key}.125"),
            "raw": bytes([key, 0, 255]), "flag": key % 2 == 0, "ratio": 0.5,
            "tags": ["a", None], "point": {"x": key, "y": None},
            "attributes": [("k", key)], M: marker}


def spark_reads(warehouse):
    """Every Delta table of the warehouse, by its folder below the warehouse, as Delta on Spark
    reads it: its rows sorted, an aware timestamp as its epoch (Spark gives it naive, in the
    process's time zone). Each must list the features it uses."""
    session = spark_session()
    tables = {}
    for log in sorted(warehouse.glob("**/_delta_log")):
        assert unlisted_features(DeltaTable(str(log.parent))) == [], log.parent
        rows = [row.asDict(recursive=True)
                for row in session.read.format("delta").load(str(log.parent)).collect()]
        tables[log.parent.relative_to(warehouse).as_posix()] = sorted(
            ({**row, "aware": row["aware"].timestamp()} if "aware" in row else row
             for row in rows), key=repr)
    return tables


def epoch(second):
    """The epoch of `every_type_row`'s aware timestamp at `second`."""
    return datetime.datetime(2024, 5, 1, 10, 0, second, tzinfo=datetime.timezone.utc).timestamp()


def picked(rows, *names):
    """The values of the columns `names` of each row, as tuples."""
    return [tuple(row[name] for name in names) for row in rows]


@pytest.mark.parametrize("target", [pytest.param("spark", marks=spark_only)])
def test_staging_of_every_column_type_is_readable_by_delta_on_spark(zone, service, monkeypatch):
    """Naive timestamps give staging a table-features protocol, and its NOT NULL columns need
    `invariants` listed there; tables staged before lakemirror listed it are repaired. Delta on
    Spark then reads every table back with the values written."""
    zone.table("T", ["id"])
    files = [[every_type_row(1, 0), every_type_row(2, 0)],
             [every_type_row(1, 1, second=9), every_type_row(2, 2), every_type_row(3, 4)]]
    zone.write("T", 1, files[0], EVERY_TYPE)
    monkeypatch.setattr(ingest_module.StagingTable, "list_used_features", lambda self: None)
    service.ingest_only()  # as lakemirror staged it before
    staging = DeltaTable(str(service.settings.layout.staging_path("dbo", "t")))
    assert unlisted_features(staging) == ["invariants"]
    monkeypatch.undo()
    service.ingest_only()  # no new file: the ingest repairs the table it finds
    staged = service.settings.layout.staging_path("dbo", "t")
    assert unlisted_features(DeltaTable(str(staged))) == []

    zone.write("T", 2, files[1], EVERY_TYPE)
    [status] = service.run()
    assert status.status == "replicating", status.error
    tables = spark_reads(service.settings.warehouse)
    assert list(tables) == ["_lakemirror/control/mirror_batches", "_lakemirror/control/relations",
                            "_lakemirror/control/table_monitor", "_lakemirror/staging/dbo/t",
                            "dbo/t"]
    # Staging keeps every change: file 1's two inserts, then file 2's update of 1 (second 9),
    # delete of 2 and upsert of 3, each at its position (file · 10¹⁰ + row).
    assert sorted(picked(tables["_lakemirror/staging/dbo/t"], "_lm_position", "id", M,
                         "naive", "aware")) == [
        (10_000_000_000, 1, 0, datetime.datetime(2024, 5, 1, 12, 30, 0), epoch(0)),
        (10_000_000_001, 2, 0, datetime.datetime(2024, 5, 1, 12, 30, 0), epoch(0)),
        (20_000_000_000, 1, 1, datetime.datetime(2024, 5, 1, 12, 30, 9), epoch(9)),
        (20_000_000_001, 2, 2, datetime.datetime(2024, 5, 1, 12, 30, 0), epoch(0)),
        (20_000_000_002, 3, 4, datetime.datetime(2024, 5, 1, 12, 30, 0), epoch(0))]
    # The mirror: 1 as updated, 2 deleted, 3 upserted; every type's value as written.
    assert tables["dbo/t"] == [
        {"id": 1, "naive": datetime.datetime(2024, 5, 1, 12, 30, 9), "aware": epoch(9),
         "day": datetime.date(2024, 5, 1), "amount": decimal.Decimal("1.125"),
         "raw": b"\x01\x00\xff", "flag": False, "ratio": 0.5, "tags": ["a", None],
         "point": {"x": 1, "y": None}, "attributes": {"k": 1}, "_lm_position": 20_000_000_000},
        {"id": 3, "naive": datetime.datetime(2024, 5, 1, 12, 30, 0), "aware": epoch(0),
         "day": datetime.date(2024, 5, 3), "amount": decimal.Decimal("3.125"),
         "raw": b"\x03\x00\xff", "flag": False, "ratio": 0.5, "tags": ["a", None],
         "point": {"x": 3, "y": None}, "attributes": {"k": 3}, "_lm_position": 20_000_000_002}]
    mirrored = spark_session().read.format("delta").load(str(service.settings.warehouse / "dbo/t"))
    assert mirrored.schema["naive"].dataType.simpleString() == "timestamp_ntz"
    [monitor] = tables["_lakemirror/control/table_monitor"]
    assert {name: monitor[name] for name in (
        "schema", "table", "status", "last_sequence_staged", "last_sequence_applied", "rows",
        "files_pending", "processed_rows", "error")} == {
        "schema": "dbo", "table": "t", "status": "replicating", "last_sequence_staged": 2,
        "last_sequence_applied": 2, "rows": 2, "files_pending": 0, "processed_rows": 5,
        "error": None}
    assert picked(tables["_lakemirror/control/relations"], "schema_name", "table_name",
                  "format") == [("_lakemirror_staging", "dbo__t", "delta"),
                                ("dbo", "t", "delta")]
    assert sorted(picked(tables["_lakemirror/control/mirror_batches"], "relation_name", "kind",
                         "batch_end")) == [("dbo.t", "applied", 20_000_000_002),
                                           ("dbo.t", "claimed", 20_000_000_002)]


def test_unlisted_features_are_added_keeping_the_commit_bookkeeping(tmp_path):
    from deltalake import CommitProperties, write_deltalake

    path = str(tmp_path / "t")
    schema = pa.schema([pa.field("_lm_position", pa.int64(), nullable=False),
                        pa.field("at", pa.timestamp("us")),
                        pa.field("items", pa.list_(pa.field("item", pa.int64(), nullable=False)))])
    data = pa.Table.from_pylist([{"_lm_position": 1, "at": None, "items": [1]}], schema=schema)
    write_deltalake(path, data, commit_properties=CommitProperties(
        custom_metadata={"lakemirror.sequence": "7", "other": "x"}))
    table = DeltaTable(path)
    assert unlisted_features(table) == ["invariants"]
    assert list_used_features(table) == ["invariants"]
    table = DeltaTable(path)
    assert unlisted_features(table) == [] and list_used_features(table) == []
    [last] = table.history(limit=1)
    assert last["operation"] == "ADD FEATURE" and last["lakemirror.sequence"] == "7"
    assert "other" not in last and table.version() == 1

    nullable = str(tmp_path / "nullable")
    write_deltalake(nullable, pa.table({"at": pa.array([None], pa.timestamp("us")),
                                        "items": pa.array([[1]], pa.list_(pa.int64()))}))
    assert unlisted_features(DeltaTable(nullable)) == []  # only timestampNtz, listed by delta-rs
