"""Faults outside the landing zone: a crashed or hung engine, damaged Delta commits, a full
disk, failing dbt tests, unexpected errors. Each fails only the tables it touches, with a
`system` or `user` class and a fix, and the final tables equal the reference model once the
fault is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable
import pytest

import lakemirror.run.dbt as dbt_phase
import lakemirror.run.ingest as ingest_phase
from lakemirror.reference import ROW_MARKER, apply_changes
from conftest import as_multiset, fail_if_hung, mirror_setup, mirrored_rows, on_dbt_events

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
FIRST = [{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "b", M: 0}]
SECOND = [{"id": 1, "v": "a2", M: 1}, {"id": 2, "v": None, M: 2}, {"id": 3, "v": "c", M: 4}]


def expected(*files: list[dict]) -> object:
    return as_multiset(apply_changes(files, ["id"]))


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail the test instead of hanging it, should the engine watchdog not work."""
    with fail_if_hung(600, "the run hung"):
        yield


def on_model_start(monkeypatch: pytest.MonkeyPatch, model: str, action: object) -> None:
    """Call `action()` once, when dbt starts executing `model` (a dbt event callback)."""
    fired: list[bool] = []

    def callback(event: object) -> None:
        info = event.info  # type: ignore[attr-defined]
        if info.name == "NodeExecuting" and not fired and \
                event.data.node_info.unique_id.endswith(f".{model}"):  # type: ignore
            fired.append(True)
            action()  # type: ignore[operator]

    on_dbt_events(monkeypatch, callback)


def engine_pid() -> int:
    engine = dbt_phase._child_engines.get(())
    assert engine is not None and engine.alive()
    return engine.pid


@pytest.mark.parametrize("fault", ["crash", "hang"])
def test_a_lost_engine_fails_the_running_table_and_the_others_are_built_again(
        tmp_path, monkeypatch, no_hang, fault):
    zone, service = mirror_setup(tmp_path)
    for table in ("Alpha", "Beta"):
        zone.table(table, ["id"])
        zone.write(table, 1, FIRST, SCHEMA)
    service.settings = replace(service.settings, engine_timeout=20)
    service.run()
    for table in ("Alpha", "Beta"):
        zone.write(table, 2, SECOND, SCHEMA)

    signal_to_send = signal.SIGKILL if fault == "crash" else signal.SIGSTOP
    on_model_start(monkeypatch, "dbo__alpha", lambda: os.kill(engine_pid(), signal_to_send))
    statuses = {status.table: status for status in service.run()}

    alpha = statuses["alpha"]
    assert (alpha.status, alpha.error_class) == ("failed", "system")
    assert ("killed by SIGKILL" if fault == "crash" else "did not finish within 20 s") \
        in alpha.error and "fresh engine" in alpha.error
    assert statuses["beta"].status == "replicating", statuses["beta"].error
    assert mirrored_rows(service.settings.warehouse, "dbo", "beta") == expected(FIRST, SECOND)

    monkeypatch.undo()
    assert {s.table: s.status for s in service.run()} == {"alpha": "replicating",
                                                          "beta": "replicating"}
    assert mirrored_rows(service.settings.warehouse, "dbo", "alpha") == expected(FIRST, SECOND)


def damage(commit: Path, how: str) -> None:
    data = commit.read_bytes()
    commit.write_bytes(data[: len(data) // 2] if how == "truncated" else b"\x00garbage\n")


def newest_commit(table: Path) -> Path:
    return max((table / "_delta_log").glob("*.json"))


@pytest.mark.parametrize("how", ["truncated", "garbage"])
@pytest.mark.parametrize("kind", ["staging", "mirrored"])
def test_a_damaged_commit_fails_its_table_and_is_never_read_around(tmp_path, kind, how):
    zone, service = mirror_setup(tmp_path)
    for table in ("Bad", "Good"):
        zone.table(table, ["id"])
        zone.write(table, 1, FIRST, SCHEMA)
    service.run()
    layout = service.settings.layout
    damaged = (layout.staging_path if kind == "staging" else layout.mirrored_path)("dbo", "bad")
    commit = newest_commit(damaged)
    damage(commit, how)
    for table in ("Bad", "Good"):
        zone.write(table, 2, SECOND, SCHEMA)

    statuses = {status.table: status for status in service.run()}

    bad = statuses["bad"]
    assert (bad.status, bad.error_class) == ("failed", "system")
    assert "damaged" in bad.error and str(commit) in bad.error and "Fix:" in bad.error
    assert statuses["good"].status == "replicating"
    assert mirrored_rows(service.settings.warehouse, "dbo", "good") == expected(FIRST, SECOND)
    assert (zone.root / "Bad" / "00000000000000000002.parquet").exists()  # not staged

    if kind == "mirrored":  # the documented recovery: delete it, it is rebuilt from staging
        subprocess.run(["rm", "-r", str(damaged)], check=True)
        assert {s.table: s.status for s in service.run()}["bad"] == "replicating"
        assert mirrored_rows(service.settings.warehouse, "dbo", "bad") == expected(FIRST, SECOND)


def test_a_damaged_control_table_stops_every_table_with_a_clear_error(tmp_path):
    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    zone.write("T", 1, FIRST, SCHEMA)
    service.run()
    commit = newest_commit(service.settings.layout.control_path("mirror_batches"))
    damage(commit, "truncated")
    zone.write("T", 2, SECOND, SCHEMA)
    [status] = service.run()
    assert (status.status, status.error_class) == ("failed", "system")
    assert "_lakemirror_control.mirror_batches" in status.error and str(commit) in status.error


def test_failing_dbt_tests_make_the_table_degraded_and_the_exit_code_one(tmp_path):
    from click.testing import CliRunner

    from lakemirror.cli.main import cli

    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    zone.table("Ok", ["id"])
    zone.write("T", 1, [{"id": None, "v": "no key", M: 0}, *FIRST], SCHEMA)
    zone.write("Ok", 1, FIRST, SCHEMA)
    result = CliRunner().invoke(cli, [
        "run", "--json", "--landing-zone", str(zone.root), "--warehouse",
        str(service.settings.warehouse), "--project-dir", str(service.settings.project_dir)])
    assert result.exit_code == 1, result.output
    tables = {t["table"]: t for t in json.loads(result.stdout)["tables"]}
    assert (tables["t"]["status"], tables["t"]["error_class"]) == ("degraded", "user")
    assert "lakemirror_mirror_rows_dbo__t (fail" in tables["t"]["error"]
    assert tables["t"]["rows"] == 3
    assert tables["ok"]["status"] == "replicating" and tables["ok"]["error"] is None


def test_keys_changed_while_changes_wait_are_not_used_for_them(tmp_path):
    zone, service = mirror_setup(tmp_path)
    folder = zone.table("T", ["id"])
    zone.write("T", 1, FIRST, SCHEMA)
    service.run()
    zone.write("T", 2, SECOND, SCHEMA)
    service.ingest_only()  # staged, not applied
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["v"]}))

    [status] = service.run()
    assert status.status == "failed" and "keyColumns changed" in status.error
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == expected(FIRST, SECOND)

    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    [status] = service.run()
    assert status.status == "replicating"
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == expected(FIRST, SECOND)


def test_an_unexpected_error_in_one_table_fails_it_alone(tmp_path, monkeypatch):
    zone, service = mirror_setup(tmp_path)
    for table in ("Boom", "Good"):
        zone.table(table, ["id"])
        zone.write(table, 1, FIRST, SCHEMA)
    original = ingest_phase.ingest_table

    def flaky(table, *args, **kwargs):
        if table.name == "boom":
            raise RuntimeError("a bug")
        return original(table, *args, **kwargs)

    monkeypatch.setattr(ingest_phase, "ingest_table", flaky)
    statuses = {status.table: status for status in service.run()}
    assert (statuses["boom"].status, statuses["boom"].error_class) == ("failed", "system")
    assert "unexpected RuntimeError: a bug" in statuses["boom"].error
    assert "--debug" in statuses["boom"].error
    assert mirrored_rows(service.settings.warehouse, "dbo", "good") == expected(FIRST)

    from click.testing import CliRunner

    from lakemirror.cli.main import cli

    debugged = CliRunner().invoke(cli, [
        "--debug", "run", "--landing-zone", str(zone.root),
        "--warehouse", str(service.settings.warehouse),
        "--project-dir", str(service.settings.project_dir)])
    assert isinstance(debugged.exception, RuntimeError), debugged.output  # the traceback shows


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_warehouse_disk_is_reported_as_disk_full(tmp_path, small_disk):
    zone, service = mirror_setup(tmp_path)
    service.settings = replace(service.settings, warehouse=small_disk / "warehouse")
    zone.table("T", ["id"])
    zone.write("T", 1, FIRST, SCHEMA)
    [status] = service.run()
    assert status.status == "replicating"
    zone.write("T", 2, [{"id": i, "v": os.urandom(4096).hex(), M: 4} for i in range(2000)],
               SCHEMA, compression="none")

    [status] = service.run()
    assert (status.status, status.error_class) == ("failed", "system"), status.error
    assert "disk full" in status.error.lower(), status.error
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == expected(FIRST)
    assert (zone.root / "T" / "00000000000000000002.parquet").exists()


def test_a_deleted_table_whose_generated_model_no_longer_parses_is_still_dropped(tmp_path):
    from lakemirror.codegen.generated import write_generated

    zone, service = mirror_setup(tmp_path)
    for table in ("Old", "Good"):
        zone.table(table, ["id"])
        zone.write(table, 1, FIRST, SCHEMA)
    service.run()
    # as an older lakemirror generated it from a hostile key: unedited, and breaking the parse
    model = service.settings.project_dir / "models/mirror/dbo/dbo__old.sql"
    write_generated(model, '{{ exceptions.raise_compiler_error("old model") }}\n', "--")
    subprocess.run(["rm", "-r", str(zone.root / "Old")], check=True)
    zone.write("Good", 2, SECOND, SCHEMA)

    statuses = {status.table: status.status for status in service.run()}
    assert statuses == {"old": "dropped", "good": "replicating"}
    assert not model.exists() and not (service.settings.warehouse / "dbo" / "old").exists()
    assert mirrored_rows(service.settings.warehouse, "dbo", "good") == expected(FIRST, SECOND)


def test_a_view_whose_table_was_deleted_outside_dbt_stops_nothing_else(tmp_path):
    """The view is skipped when the engine attaches the warehouse (a warning says why), so
    every schema lists its relations: incremental models go on from their rows, and the run
    builds the table and the view again."""
    from click.testing import CliRunner

    from lakemirror.cli.main import cli

    zone, service = mirror_setup(tmp_path)
    mine = service.settings.project_dir / "models" / "mine"
    mine.mkdir()
    (mine / "base.sql").write_text("select id from {{ ref('dbo__t') }}\n")
    (mine / "on_base.sql").write_text(
        "{{ config(materialized='view') }}\nselect id from {{ ref('base') }}\n")
    (mine / "runs.sql").write_text(  # one row per run: a rebuild from scratch would show
        "{{ config(materialized='incremental', incremental_strategy='append') }}\n"
        "select count(*) as mirrored from {{ ref('dbo__t') }}\n")
    zone.table("T", ["id"])
    zone.write("T", 1, FIRST, SCHEMA)

    def run(*options: str) -> object:
        return CliRunner().invoke(cli, [
            "run", *options, "--landing-zone", str(zone.root), "--warehouse",
            str(service.settings.warehouse), "--project-dir", str(service.settings.project_dir)])

    assert run("--json").exit_code == 0
    subprocess.run(["rm", "-r", str(service.settings.warehouse / "analytics" / "base")], check=True)
    zone.write("T", 2, SECOND, SCHEMA)
    result = run()  # dbt's output shown
    assert result.exit_code == 0, result.output
    assert "view analytics.on_base is not attached: it reads analytics.base" in result.output
    assert result.output.splitlines()[-1].split()[:3] == ["dbo.t", "T", "replicating"]
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == expected(FIRST, SECOND)
    runs = DeltaTable(str(service.settings.warehouse / "analytics" / "runs")).to_pyarrow_table()
    assert runs["mirrored"].to_pylist() == [2, 2]  # FIRST, then FIRST and SECOND: 2 rows each
    warehouse = service.settings.warehouse
    assert DeltaTable(str(warehouse / "dbo" / "t")).history(1)[0]["operation"] == "MERGE"
    assert (warehouse / "analytics" / "base" / "_delta_log").is_dir()  # built again
