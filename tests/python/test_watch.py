"""`lakemirror run --watch`: a warm process mirrors each file as it lands; Ctrl-C stops it."""

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.watch import zone_signature

from conftest import Zone, as_multiset, copy_project, fail_if_hung, mirror_setup, mirrored_rows
from zone_kinds import WITH_AZURITE, published_zone  # noqa: F401 (a fixture)

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])


def test_signature_changes_when_a_file_lands_but_not_for_processed_files(tmp_path):
    zone = Zone(tmp_path / "LandingZone")
    zone.table("T", ["id"])
    zone.table("Sales.schema/Orders", ["id"])
    (zone.root / "T" / "_lakemirror.json").write_text("{}")  # lakemirror's own mark
    before = zone_signature(zone.root, settle_seconds=0)
    zone.write("Sales.schema/Orders", 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    landed = zone_signature(zone.root, settle_seconds=0)
    assert landed != before
    processed = zone.root / "T" / "_ProcessedFiles"
    processed.mkdir()
    (processed / "00000000000000000001.parquet").write_bytes(b"old")
    assert zone_signature(zone.root, settle_seconds=0) == landed


def test_signature_changes_when_a_file_settles(tmp_path):
    """A table waiting for a file in the settle window runs again once the file settled,
    though nothing changed on disk."""
    zone = Zone(tmp_path / "LandingZone")
    path = zone.table("T", None) / "00000000000000000001.csv"
    path.write_text("id,__rowMarker__\r\n1,0\r\n")
    writing = zone_signature(zone.root, settle_seconds=600)
    assert zone_signature(zone.root, settle_seconds=600) == writing
    time.sleep(0.01)
    assert zone_signature(zone.root, settle_seconds=0.001) != writing  # the window has passed


def test_a_warm_run_leaves_a_settling_file_for_its_next_run_without_waiting(tmp_path):
    """`run --watch` runs again once the file settled (above), so it never waits it out."""
    zone, service = mirror_setup(tmp_path)
    (zone.table("T", ["id"]) / "00000000000000000001.csv").write_text("id,__rowMarker__\r\n1,0\r\n")
    service.settings = replace(service.settings, warm=True,  # as watch() sets it
                               env=replace(service.settings.env, settle_seconds=600))
    with fail_if_hung(60, "a warm run waited out the settle window"):
        [status] = service.run()
    assert status.status == "waiting" and "settle window" in status.error


def wait_for(condition, seconds=90):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("published_zone", WITH_AZURITE, indirect=True)
def test_watch_mirrors_each_file_as_it_lands_and_stops_on_ctrl_c(tmp_path, published_zone):
    zone = published_zone.zone
    zone.table("T", ["id"])
    files = [[{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "b", M: 0}],
             [{"id": 1, "v": "a2", M: 1}, {"id": 2, "v": None, M: 2}, {"id": 3, "v": "c", M: 0}]]
    zone.write("T", 1, files[0], SCHEMA)
    published_zone.publish()
    warehouse, project = tmp_path / "warehouse", copy_project(tmp_path / "project")
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "lakemirror"), "run", "--watch", "0.1", "--json",
         "--landing-zone", str(published_zone.location), "--warehouse", str(warehouse),
         "--project-dir", str(project)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, **published_zone.environment,
             "LAKEMIRROR_HOME": str(tmp_path / "home")})
    try:
        table = warehouse / "dbo" / "t"
        wait_for(lambda: DeltaTable.is_deltatable(str(table)))
        version = DeltaTable(str(table)).version()
        zone.write("T", 2, files[1], SCHEMA)
        published_zone.publish()
        wait_for(lambda: DeltaTable(str(table)).version() > version)
        assert mirrored_rows(warehouse, "dbo", "t") == as_multiset(
            [{"id": r["id"], "v": r["v"]} for r in apply_changes(files, ["id"])])
    finally:
        time.sleep(1)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    assert output.count('"tables"') >= 2  # one status report per run


@pytest.mark.slow
def test_a_warm_process_rebuilds_a_deleted_mirrored_table_like_a_new_process(zone, service):
    """A kept engine session still lists a table whose folder was deleted; the warm run must
    attach the registry afresh and rebuild the table from staging, not fail on its log."""
    service.settings = replace(service.settings, warm=True)
    zone.table("T", ["id"])
    files = [[{"id": i, "v": "a", M: 0} for i in (1, 2, 3)], [{"id": 2, "v": "b", M: 1}]]
    zone.write("T", 1, files[0], SCHEMA)
    assert [status.status for status in service.run()] == ["replicating"]
    shutil.rmtree(service.settings.warehouse / "dbo" / "t")
    zone.write("T", 2, files[1], SCHEMA)
    [status] = service.run()
    assert status.status == "replicating", status.error
    expected = [{k: v for k, v in row.items() if k != M} for row in apply_changes(files, ["id"])]
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(expected)
