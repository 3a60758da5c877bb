"""`lakemirror status` a monitor can trust: a path that is not a warehouse fails, files waiting
behind a gap count as pending with the age of the oldest, the latency of the last applied file
and the time of the last run are shown, a warehouse without a recent run is stale, and the
same facts come out in Prometheus's text format."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable
from prometheus_client.parser import text_string_to_metric_families

from lakemirror import monitor
from lakemirror.cli.main import cli
from lakemirror.delta.access import write_delta
from lakemirror.environment import STORAGE_OPTIONS, read_settings
from lakemirror.landing.detection import SequenceFile
from lakemirror.monitor.records import LAST_RUN_FILE
from lakemirror.reference import ROW_MARKER
from lakemirror.staging.layout import Warehouse
from lakemirror.status import TableStatus
from lakemirror.storage.warehouse import warehouse_location

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
HOUR = 3600


def status(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["status", *args], env=env)


def landed(path: Path, seconds_ago: float) -> None:
    """Set the file's last-modified time, as if it had landed `seconds_ago`."""
    moment = time.time() - seconds_ago
    os.utime(path, (moment, moment))


def metrics(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The samples of a Prometheus text exposition, by name and labels."""
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def table_labels(**extra: str) -> frozenset[tuple[str, str]]:
    return frozenset({"schema": "dbo", "table": "t", **extra}.items())


# --- not a warehouse ---------------------------------------------------------------------

def test_status_of_a_missing_folder_is_a_configuration_error(tmp_path):
    result = status("--warehouse", str(tmp_path / "typo"))
    assert result.exit_code == 2, result.output
    assert "not a lakemirror warehouse" in result.output and "does not exist" in result.output
    assert "no tables mirrored yet" not in result.output


def test_status_of_a_folder_without_lakemirror_data_is_a_configuration_error(tmp_path):
    (tmp_path / "data" / "dbo" / "t").mkdir(parents=True)
    result = status("--json", "--warehouse", str(tmp_path / "data"))
    assert result.exit_code == 2, result.output
    assert "_lakemirror/" in result.output and "Fix:" in result.output


def test_a_warehouse_whose_run_found_no_table_is_healthy(tmp_path):
    """A run over an empty zone leaves a warehouse: no tables yet, a fresh run, exit code 0."""
    (tmp_path / "zone").mkdir()
    run = CliRunner().invoke(cli, ["run", "--landing-zone", str(tmp_path / "zone"),
                                   "--warehouse", str(tmp_path / "wh")])
    assert run.exit_code == 0, run.output
    result = status("--warehouse", str(tmp_path / "wh"))
    assert result.exit_code == 0, result.output
    assert "no tables mirrored yet" in result.output and "last run: " in result.output
    document = json.loads(status("--json", "--warehouse", str(tmp_path / "wh")).stdout)
    assert (document["tables"], document["stale"]) == ([], False)


def test_status_on_object_storage_tells_a_warehouse_from_an_empty_prefix(s3_server):
    env = {STORAGE_OPTIONS: json.dumps(dict(s3_server.options))}
    prefix = s3_server.fresh_prefix("warehouse")
    s3_server.store(prefix).put("dbo/t/data.parquet", b"not ours")
    result = status("--warehouse", s3_server.url(prefix), env=env)
    assert result.exit_code == 2, result.output
    assert "not a lakemirror warehouse" in result.output

    root = warehouse_location(s3_server.url(prefix),
                              storage=read_settings(env).storage)
    monitor.write_monitor(Warehouse(root), [])  # what a run over an empty zone records
    result = status("--json", "--warehouse", s3_server.url(prefix), env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tables"] == []


# --- pending files, latency, runs ----------------------------------------------------------

@pytest.mark.slow
def test_files_behind_a_gap_are_pending_with_their_age(service, zone, tmp_path):
    """Files 1, 2, 4 and 5 land: 1 and 2 are applied, 4 and 5 wait for 3. The table is not
    idle-looking: two files pending, the oldest landed ten minutes ago; once 3 lands, all
    are applied and the latency of file 5 is measured from its landing."""
    zone.table("T", ["id"])
    for sequence, minutes_ago in ((1, 30), (2, 20), (4, 10), (5, 5)):
        path = zone.write("T", sequence, [{"id": sequence, "v": "a", M: 0}], SCHEMA)
        landed(path, minutes_ago * 60)
    [table] = service.run()
    assert (table.status, table.last_sequence) == ("waiting", 2)
    warehouse = str(tmp_path / "warehouse")

    shown = status("--json", "--warehouse", warehouse)
    assert shown.exit_code == 0, shown.output
    [record] = json.loads(shown.stdout)["tables"]
    assert (record["status"], record["last_sequence_applied"], record["files_pending"]) == (
        "waiting", 2, 2)
    assert record["oldest_pending_seconds"] >= 10 * 60
    assert record["oldest_pending_landed"] is not None and record["last_run"] is not None
    assert record["applied_latency_seconds"] >= 20 * 60  # file 2 landed 20 minutes ago
    text = status("--warehouse", warehouse).stdout
    assert "files_pending" in text and "oldest_pending_seconds" in text

    exposed = status("--prometheus", "--warehouse", warehouse)
    assert exposed.exit_code == 0, exposed.output
    values = metrics(exposed.stdout)
    labels = table_labels()
    assert values["lakemirror_table_files_pending", labels] == 2
    assert values["lakemirror_table_oldest_pending_seconds", labels] >= 10 * 60
    assert values["lakemirror_table_last_sequence_applied", labels] == 2
    assert values["lakemirror_table_rows", labels] == 2
    assert values["lakemirror_table_status", table_labels(status="waiting")] == 1
    assert values["lakemirror_table_status", table_labels(status="replicating")] == 0
    assert values["lakemirror_stale", frozenset()] == 0
    assert values["lakemirror_last_run_timestamp_seconds", frozenset()] > 0

    monitor_log = DeltaTable(str(tmp_path / "warehouse/_lakemirror/control/table_monitor"))
    version = monitor_log.version()
    (tmp_path / "warehouse" / LAST_RUN_FILE).unlink()
    service.run()  # idle, still waiting: the same record, no Delta commit; the run's time
    monitor_log.update_incremental()
    assert monitor_log.version() == version
    assert (tmp_path / "warehouse" / LAST_RUN_FILE).is_file()
    [record] = json.loads(status("--json", "--warehouse", warehouse).stdout)["tables"]
    assert record["files_pending"] == 2 and record["oldest_pending_seconds"] >= 10 * 60

    landed(zone.write("T", 3, [{"id": 3, "v": "a", M: 0}], SCHEMA), 60)
    [table] = service.run()
    assert (table.status, table.last_sequence) == ("replicating", 5)
    [record] = json.loads(status("--json", "--warehouse", warehouse).stdout)["tables"]
    assert (record["last_sequence_applied"], record["files_pending"]) == (5, 0)
    assert record["oldest_pending_seconds"] is None
    assert record["applied_latency_seconds"] >= 5 * 60  # file 5, applied now


def test_prometheus_file_is_written_for_the_textfile_collector(tmp_path):
    layout = Warehouse(tmp_path / "wh")
    monitor.write_monitor(layout, [_record(files_pending=3, rows=7)])
    target = tmp_path / "textfile" / "lakemirror.prom"
    target.parent.mkdir()
    result = status("--prometheus-file", str(target), "--warehouse", str(layout.root))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    values = metrics(target.read_text())
    assert values["lakemirror_table_files_pending", table_labels()] == 3
    assert values["lakemirror_table_rows", table_labels()] == 7
    assert list(target.parent.iterdir()) == [target]  # no temporary file left beside it


def test_staged_files_count_as_pending_until_applied_and_keep_their_landing_time():
    """A build that fails leaves staged files unapplied: they stay pending, with the time they
    landed, and the run that applies them measures the latency of the last from it (the
    files are no longer listed then: they moved to _ProcessedFiles/)."""
    now_ns = time.time_ns()
    files = tuple(SequenceFile(n, Path(f"{n}.parquet"), mtime_ns=now_ns - (10 - n) * 60 * 10**9)
                  for n in (1, 2, 3))
    failed = TableStatus("dbo", "t", "failed", 3, None, "dbt failed")
    staged = SimpleNamespace(last_sequence=3, files_pending=0, staged_rows=3, staged_bytes=30,
                             landed=files)
    first = monitor.monitor_record(staged, failed, None, 0, applied_now=True)
    assert first.files_pending == 3 and len(first.pending_landed) == 3
    assert first.applied_latency_seconds is None
    assert first.oldest_pending_landed.timestamp() == pytest.approx(files[0].mtime_ns / 1e9)

    healthy = TableStatus("dbo", "t", "replicating", 3, 3, None)
    idle = SimpleNamespace(last_sequence=3, files_pending=0, staged_rows=0, staged_bytes=0,
                           landed=())
    second = monitor.monitor_record(idle, healthy, first, 3 * 10**10, applied_now=True)
    assert (second.files_pending, second.pending_landed) == (0, ())
    assert 7 * 60 <= second.applied_latency_seconds < HOUR  # file 3 landed 7 minutes ago
    third = monitor.monitor_record(idle, healthy, second, 3 * 10**10, applied_now=False)
    assert third.applied_latency_seconds == second.applied_latency_seconds  # nothing new


def test_a_table_without_pending_files_has_no_pending_age():
    """A retired table keeps its last record, times of its last files included, with no file
    pending: no age is shown for files that will never be applied."""
    kept = _record(files_pending=0, pending_landed=(monitor.Landed(2, time.time_ns()),))
    assert kept.oldest_pending_landed is None
    assert _record(files_pending=1, pending_landed=kept.pending_landed).oldest_pending_landed


def test_an_idle_run_records_its_time_without_a_delta_commit(tmp_path):
    layout = Warehouse(tmp_path / "wh")
    record = _record(last_run="2026-01-01T00:00:00+00:00")
    monitor.write_monitor(layout, [record])
    version = DeltaTable(str(tmp_path / "wh/_lakemirror/control/table_monitor")).version()
    previous = monitor.read_monitor(layout)
    later = _record(last_run="2026-01-01T00:05:00+00:00")
    monitor.write_monitor(layout, [later], previous)
    assert DeltaTable(str(tmp_path / "wh/_lakemirror/control/table_monitor")).version() == version
    [shown] = json.loads(status("--json", "--warehouse", str(layout.root)).stdout)["tables"]
    assert shown["last_run"] == "2026-01-01T00:05:00+00:00"


def test_records_of_an_older_version_still_read(tmp_path):
    """A table_monitor written before the run times and landing times existed."""
    layout = Warehouse(tmp_path / "wh")
    old = pa.Table.from_pylist([{
        "schema": "dbo", "table": "t", "status": "replicating", "last_sequence_applied": 4,
        "rows": 9, "files_pending": 0, "processed_rows": 9, "processed_bytes": 90,
        "last_sync": "2026-01-01T00:00:00+00:00", "error": None, "error_class": None}])
    write_delta(layout.control_path("table_monitor"), old, mode="overwrite")
    [record] = monitor.read_records(layout)
    assert (record.last_sequence_staged, record.last_run, record.pending_landed,
            record.applied_latency_seconds) == (4, None, (), None)
    result = status("--json", "--warehouse", str(layout.root))
    assert result.exit_code == 1  # no run of this version recorded yet: stale
    document = json.loads(result.stdout)
    assert document["stale"] is True and document["tables"][0]["oldest_pending_seconds"] is None


# --- stale ---------------------------------------------------------------------------------

def test_a_warehouse_without_a_recent_run_is_stale(tmp_path):
    layout = Warehouse(tmp_path / "wh")
    monitor.write_monitor(layout, [_record()])
    two_hours_ago = (datetime.now(timezone.utc) - timedelta(hours=2)).isoformat()
    layout.storage.write_text(LAST_RUN_FILE, json.dumps({"last_run": two_hours_ago}))
    result = status("--warehouse", str(layout.root))
    assert result.exit_code == 1, result.output
    assert "STALE: last run" in result.output
    document = json.loads(status("--json", "--warehouse", str(layout.root)).stdout)
    assert (document["stale"], document["stale_after_seconds"]) == (True, HOUR)
    assert status("--warehouse", str(layout.root), "--stale-after", "86400").exit_code == 0
    relaxed = status("--json", "--warehouse", str(layout.root),
                     env={"LAKEMIRROR_STALE_AFTER": "86400"})
    assert relaxed.exit_code == 0 and json.loads(relaxed.stdout)["stale"] is False
    values = metrics(status("--prometheus", "--warehouse", str(layout.root)).stdout)
    assert values["lakemirror_stale", frozenset()] == 1


def test_stale_is_judged_against_the_time_status_runs(tmp_path):
    layout = Warehouse(tmp_path / "wh")
    monitor.write_monitor(layout, [_record()])
    now = datetime.now(timezone.utc)
    assert not monitor.read_report(layout, stale_after=60, now=now).stale
    assert monitor.read_report(layout, stale_after=60, now=now + timedelta(minutes=2)).stale


def _record(**changes: object) -> monitor.TableMonitor:
    fields = {"schema": "dbo", "table": "t", "status": "replicating",
              "last_sequence_staged": 1, "last_sequence_applied": 1, "rows": 1,
              "files_pending": 0, "processed_rows": 1, "processed_bytes": 10, "last_sync": None,
              "error": None, "error_class": None, **changes}
    return monitor.TableMonitor(**fields)  # type: ignore[arg-type]
