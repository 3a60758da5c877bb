"""Landing zone → staging → dbt `mirror` strategy → mirrored Delta table, on the embedded engine,
compared row for row with the reference model."""

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import obstore
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakemirror.staging.ingest as ingest_module
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.service import MirrorService

from conftest import Zone, as_multiset, copy_project, mirrored_rows
from zone_kinds import (  # noqa: F401 (published_zone is a fixture)
    WITH_AZURITE,
    WITH_S3,
    Published,
    published_zone,
)

pytestmark = pytest.mark.slow

M = ROW_MARKER
EMPLOYEE = pa.schema([("EmployeeID", pa.string()), ("EmployeeLocation", pa.string()),
                      (M, pa.int32())])
PAIR = pa.schema([("a", pa.int64()), ("b", pa.string()), ("v", pa.int64()), (M, pa.int32())])


# The contract's edge cases, file by file, for the Sales.schema/Pairs table (keys a, b).
EDGE_CASES = [
    [{"a": 1, "b": "x", "v": 1, M: 0}, {"a": 1, "b": "x", "v": 2, M: 0},  # duplicate insert
     {"a": 2, "b": "y", "v": 3, M: 1},                                   # update of missing
     {"a": 3, "b": "z", "v": None, M: 2},                                # delete of missing
     {"a": None, "b": "n", "v": 4, M: 4}],                               # null key part
    [{"a": 1, "b": "x", "v": 5, M: 4}, {"a": 1, "b": "x", "v": 6, M: 0},  # upsert then insert
     {"a": None, "b": "n", "v": 7, M: 1}, {"a": 2, "b": "y", "v": None, M: 2}],
]


def data_rows(rows):
    return [{name: value for name, value in row.items() if name != M} for row in rows]


@pytest.mark.parametrize("published_zone", WITH_AZURITE, indirect=True)
def test_contract_examples_update_and_key_change(published_zone, tmp_path):
    zone, service = published_zone.zone, published_zone.service(tmp_path)
    zone.table("Employees", ["EmployeeID"])
    files = [
        [{"EmployeeID": "E0001", "EmployeeLocation": "Redmond", M: 0},
         {"EmployeeID": "E0003", "EmployeeLocation": "Seattle", M: 0}],
        [{"EmployeeID": "E0001", "EmployeeLocation": "Bellevue", M: 1}],
        [{"EmployeeID": "E0001", "EmployeeLocation": None, M: 2},
         {"EmployeeID": "E0002", "EmployeeLocation": "Bellevue", M: 0}],
    ]
    zone.write("Employees", 1, files[0], EMPLOYEE)
    [status] = service.run()
    assert (status.status, status.last_sequence, status.rows) == ("replicating", 1, 2)
    zone.write("Employees", 2, files[1], EMPLOYEE)
    zone.write("Employees", 3, files[2], EMPLOYEE)
    [status] = service.run()
    assert (status.status, status.last_sequence, status.rows) == ("replicating", 3, 2)
    assert mirrored_rows(service.settings.warehouse, "dbo", "employees") == as_multiset([
        {"EmployeeID": "E0002", "EmployeeLocation": "Bellevue"},
        {"EmployeeID": "E0003", "EmployeeLocation": "Seattle"}])


@pytest.mark.parametrize("published_zone", WITH_S3, indirect=True)
def test_semantics_edge_cases_match_reference(published_zone, tmp_path):
    zone, service = published_zone.zone, published_zone.service(tmp_path)
    zone.table("Sales.schema/Pairs", ["a", "b"])
    for sequence, rows in enumerate(EDGE_CASES, 1):
        zone.write("Sales.schema/Pairs", sequence, rows, PAIR)
        service.run()
    expected = apply_changes(EDGE_CASES, ["a", "b"])
    assert (mirrored_rows(service.settings.warehouse, "sales", "pairs")
            == as_multiset(data_rows(expected)))


def test_large_file_with_many_row_groups_ends_with_each_keys_last_row(zone, service):
    zone.table("Big", ["a", "b"])
    rows = [{"a": i % 50, "b": "x", "v": i, M: 4 if i % 7 else 0} for i in range(120_000)]
    zone.write("Big", 1, rows, PAIR, row_group_size=5_000)
    [status] = service.run()
    assert status.status == "replicating"
    expected = apply_changes([rows], ["a", "b"])
    assert (mirrored_rows(service.settings.warehouse, "dbo", "big")
            == as_multiset(data_rows(expected)))


def test_rerun_and_new_process_merge_instead_of_rebuilding(zone, service):
    zone.table("T", ["a", "b"])
    zone.write("T", 1, [{"a": 1, "b": "x", "v": 1, M: 0}], PAIR)
    service.run()
    zone.write("T", 2, [{"a": 1, "b": "x", "v": 2, M: 1}], PAIR)
    service.run()
    service.run()
    fresh = MirrorService(service.settings)
    fresh.run()
    assert (mirrored_rows(service.settings.warehouse, "dbo", "t")
            == as_multiset([{"a": 1, "b": "x", "v": 2}]))
    operations = [entry["operation"] for entry in
                  DeltaTable(str(service.settings.warehouse / "dbo" / "t")).history()]
    assert operations.count("MERGE") >= 1
    assert len([op for op in operations if "CREATE" in op]) == 1


def test_crash_after_merge_before_bookkeeping_reapplies_safely(zone, service):
    zone.table("T", ["a", "b"])
    files = [[{"a": 1, "b": "x", "v": 1, M: 0}, {"a": 2, "b": "x", "v": 1, M: 0}],
             [{"a": 1, "b": "x", "v": 2, M: 0}, {"a": 2, "b": "x", "v": None, M: 2},
              {"a": 3, "b": "x", "v": 3, M: 4}]]
    zone.write("T", 1, files[0], PAIR)
    service.run()
    zone.write("T", 2, files[1], PAIR)
    service.run()
    # The state a crash between the MERGE and the post-hook leaves: no 'applied' records.
    batches = DeltaTable(str(service.settings.warehouse / "_lakemirror/control/mirror_batches"))
    batches.delete("kind = 'applied'")
    service.run()
    expected = apply_changes(files, ["a", "b"])
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(data_rows(expected))


CRASHES = [*((kind, "after staging, before the move") for kind in WITH_AZURITE),
           *((kind, "between the copy and the delete") for kind in ("azurite", "s3"))]


@pytest.mark.parametrize("published_zone, crash_point", CRASHES, indirect=["published_zone"])
def test_a_crash_during_a_move_applies_each_file_once(published_zone, crash_point, tmp_path,
                                                      monkeypatch):
    """Killed once file 2 is staged, while file 1 moves to _ProcessedFiles/: before the move,
    or (object stores move by copy + delete) with file 1 in both folders. The next run moves
    it and applies no file twice (inserts of one key would show it: each adds a row)."""
    zone, service = published_zone.zone, published_zone.service(tmp_path)
    zone.table("T", ["a", "b"])
    files = [[{"a": 1, "b": "x", "v": 1, M: 0}], [{"a": 2, "b": "y", "v": 2, M: 0}],
             [{"a": 1, "b": "x", "v": 3, M: 0}]]
    for sequence, rows in enumerate(files, 1):
        zone.write("T", sequence, rows, PAIR)
    move_processed = ingest_module.move_processed

    def crash_before_moving(table, paths, **options):
        if paths:
            raise KeyboardInterrupt(f"killed {crash_point}")
        return move_processed(table, paths, **options)

    def crash(*args):
        raise KeyboardInterrupt(f"killed {crash_point}")

    if crash_point == "after staging, before the move":
        monkeypatch.setattr(ingest_module, "move_processed", crash_before_moving)
    else:
        monkeypatch.setattr(obstore, "delete", crash)
    with pytest.raises(KeyboardInterrupt):
        service.run()
    monkeypatch.undo()
    assert "00000000000000000001.parquet" in published_zone.names("T")
    assert ("00000000000000000001.parquet" in published_zone.names("T/_ProcessedFiles")) == (
        crash_point == "between the copy and the delete")
    [status] = service.run()
    assert (status.status, status.last_sequence) == ("replicating", 3), status.error
    expected = apply_changes(files, ["a", "b"])
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(
        data_rows(expected))
    assert "00000000000000000001.parquet" not in published_zone.names("T")


# `lakemirror ...` that SIGKILLs itself at the step of a move named by KILL_AT, on an object
# store: before the copy (the file is staged), between the copy and the delete, after the delete.
KILL_AT = """
import os, signal
import obstore
from lakemirror.cli.main import cli
from lakemirror.landing.object_zone import ObjectZone

step, move, delete = os.environ["KILL_AT"], ObjectZone.move, obstore.delete

def die(now):
    if now:
        os.kill(os.getpid(), signal.SIGKILL)

def killing_move(door, path, folder):
    die(step == "before the copy")
    moved = move(door, path, folder)
    die(step == "after the delete")
    return moved

def killing_delete(*args, **kwargs):
    die(step == "before the delete")
    return delete(*args, **kwargs)

ObjectZone.move, obstore.delete = killing_move, killing_delete
cli(prog_name="lakemirror")
"""
KILLS = {  # step: where file 1 is once the run is killed there ("T" and/or "_ProcessedFiles")
    "before the copy": (True, False), "before the delete": (True, True),
    "after the delete": (False, True)}


def test_a_run_killed_at_each_step_of_a_move_applies_each_file_once(s3_server, zone, tmp_path):
    """Real kills (SIGKILL, in the middle of the move of file 1 once file 2 is staged), one
    run each, then a run to the end: no file applied twice (each is an insert of one key) and
    none lost."""
    published = Published(zone, s3_server)
    zone.table("T", ["a", "b"])
    files = [[{"a": 1, "b": "x", "v": sequence, M: 0}] for sequence in range(1, 4)]
    for sequence, rows in enumerate(files, 1):
        zone.write("T", sequence, rows, PAIR)
    published.publish()
    env = {**os.environ, **published.environment, "LAKEMIRROR_HOME": str(tmp_path / "home")}
    args = ["run", "--landing-zone", s3_server.url(published.prefix), "--warehouse",
            str(tmp_path / "wh"), "--project-dir", str(copy_project(tmp_path / "project"))]
    for step, (in_table, processed) in KILLS.items():
        killed = subprocess.run([sys.executable, "-c", KILL_AT, *args], env={
            **env, "KILL_AT": step}, capture_output=True, text=True, timeout=120)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert ("00000000000000000001.parquet" in published.names("T"),
                "00000000000000000001.parquet" in published.names("T/_ProcessedFiles")) == (
            in_table, processed), step
    done = subprocess.run([sys.executable, "-c", KILL_AT, *args], env={**env, "KILL_AT": ""},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert mirrored_rows(tmp_path / "wh", "dbo", "t") == as_multiset(
        data_rows(apply_changes(files, ["a", "b"])))
    assert published.names("T/_ProcessedFiles") == ["00000000000000000001.parquet"]
    assert "00000000000000000001.parquet" not in published.names("T")


def test_failed_table_does_not_stop_others(zone, service):
    zone.table("Good", ["a", "b"])
    zone.table("Bad", ["a", "b"])
    zone.write("Good", 1, [{"a": 1, "b": "x", "v": 1, M: 0}], PAIR)
    zone.write("Bad", 1, [{"a": 1, "b": "x", "v": 1, M: 7}], PAIR)
    statuses = {s.table: s for s in service.run()}
    assert statuses["good"].status == "replicating" and statuses["good"].rows == 1
    assert statuses["bad"].status == "failed" and "__rowMarker__=7" in statuses["bad"].error


changes = st.lists(
    st.fixed_dictionaries({
        "a": st.integers(0, 2), "b": st.sampled_from(["x", "y"]), "v": st.integers(0, 99),
        M: st.sampled_from([0, 1, 2, 4])}),
    min_size=1, max_size=8)


streams = {"files": st.lists(changes, min_size=2, max_size=4), "split": st.integers(1, 3)}
UNHURRIED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=5, deadline=None, suppress_health_check=UNHURRIED)
@given(**streams)
def test_random_change_streams_match_reference(files, split):
    mirror_and_compare(None, files, split)


@settings(max_examples=2, deadline=None, suppress_health_check=UNHURRIED)
@pytest.mark.parametrize("kind", ["azurite", "s3"])
@given(**streams)
def test_random_change_streams_from_object_storage_match_reference(request, kind, files, split):
    """As above with the zone on each server: fewer examples, the suite's budget."""
    mirror_and_compare(request.getfixturevalue(f"{kind}_server"), files, split)


def mirror_and_compare(server, files, split):
    """Publish `files` (a zone on disk, or on `server`), mirror after file `split` and after
    the last, and compare the mirrored table with the reference."""
    with tempfile.TemporaryDirectory() as directory:
        published = Published(Zone(Path(directory) / "LandingZone"), server)
        zone, service = published.zone, published.service(Path(directory))
        zone.table("T", ["a", "b"])
        for sequence, rows in enumerate(files, 1):
            zone.write("T", sequence, rows, PAIR)
            if sequence in (split, len(files)):
                service.run()
        expected = apply_changes(files, ["a", "b"])
        assert (mirrored_rows(service.settings.warehouse, "dbo", "t")
                == as_multiset(data_rows(expected)))
