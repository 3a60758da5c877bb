"""History of a mirrored table (SCD type 2): the generated history model keeps one row per
version of each key, end to end through `lakemirror run`, across runs, re-runs and staging
compaction; and it is built only when the dbt var `lakemirror_history` asks for it."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pyarrow as pa
import pytest
import yaml
from dbt.clients.jinja import get_rendered
from deltalake import DeltaTable

from lakemirror.codegen import HISTORY_VARIABLE, MirrorModel, write_history_model, write_model
from lakemirror.delta.rows import read_table
from lakemirror.landing import ROWS_PER_FILE
from lakemirror.maintenance import maintain_tables
from lakemirror.monitor import applied_positions
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.run.build import build
from lakemirror.run.log import RunLog

from conftest import as_multiset, deletion_vectors_added, mirror_setup, mirrored_rows

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("c", pa.int64()), ("v", pa.string()), (M, pa.int32())])
INS, UPD, DEL, UPS = 0, 1, 2, 4


def at(file: int, row: int) -> int:
    """The change position of a file's row."""
    return file * ROWS_PER_FILE + row


# The landing files of dbo.t (keyColumns id, ConditionalUpdateColumn c).
FILES = [
    [{"id": 1, "c": 1, "v": "a", M: INS}, {"id": 2, "c": 1, "v": "b", M: INS},
     {"id": 3, "c": 1, "v": "c", M: INS}],
    [{"id": 1, "c": 2, "v": "a2", M: UPD}, {"id": 2, "c": 2, "v": None, M: DEL},
     {"id": 4, "c": 1, "v": "d", M: UPS},  # upsert of an absent key
     {"id": 1, "c": 1, "v": "late", M: UPD}],  # c below id 1's mark 2: skipped
    [{"id": 2, "c": 3, "v": "b2", M: INS},  # the deleted key again
     {"id": 1, "c": 5, "v": "a3", M: UPS}, {"id": 3, "c": 0, "v": None, M: DEL},  # skipped
     {"id": 4, "c": 2, "v": None, M: DEL},
     {"id": 5, "c": None, "v": "e1", M: INS}, {"id": 5, "c": None, "v": "e2", M: INS}],
    [{"id": 3, "c": 1, "v": "c2", M: UPD},  # c reaches id 3's mark 1
     {"id": 5, "c": 1, "v": "e3", M: UPD}],  # ends both rows of id 5
]

# Every version, by the reference semantics (reference.py): an insert, update or upsert that
# takes effect opens a version; the key's next update, upsert or delete that takes effect ends
# every open version of the key; an insert ends nothing; a skipped change does nothing.
# (id, c, v, valid_from, valid_to, ended by a delete)
VERSIONS = [
    (1, 1, "a", at(1, 0), at(2, 0), False),
    (2, 1, "b", at(1, 1), at(2, 1), True),
    (3, 1, "c", at(1, 2), at(4, 0), False),
    (1, 2, "a2", at(2, 0), at(3, 1), False),
    (4, 1, "d", at(2, 2), at(3, 3), True),
    (2, 3, "b2", at(3, 0), None, False),
    (1, 5, "a3", at(3, 1), None, False),
    (5, None, "e1", at(3, 4), at(4, 1), False),
    (5, None, "e2", at(3, 5), at(4, 1), False),
    (3, 1, "c2", at(4, 0), None, False),
    (5, 1, "e3", at(4, 1), None, False),
]


def expected_after(files: int) -> set[tuple[object, ...]]:
    """The history once the first `files` files are applied: later versions do not exist yet,
    and a version a later file ends is still current."""
    end = (files + 1) * ROWS_PER_FILE
    return {(i, c, v, start, stop if stop is not None and stop < end else None,
             stop is None or stop >= end, deleted and stop is not None and stop < end)
            for i, c, v, start, stop, deleted in VERSIONS if start < end}


def history(warehouse) -> set[tuple[object, ...]]:
    rows = read_table(warehouse / "dbo" / "t__history").to_pylist()
    assert len(rows) == len({row["_lm_valid_from"] for row in rows})  # one row per version
    return {(row["id"], row["c"], row["v"], row["_lm_valid_from"], row["_lm_valid_to"],
             row["_lm_is_current"], row["_lm_is_deleted"]) for row in rows}


def check(service, files: int) -> None:
    assert history(service.settings.warehouse) == expected_after(files)
    current = [{"id": i, "c": c, "v": v}
               for i, c, v, _, _, is_current, _ in expected_after(files) if is_current]
    reference = apply_changes(FILES[:files], ["id"], conditional_column="c")
    assert as_multiset(current) == as_multiset(reference)  # the statement above is the reference's
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(reference)


def forget_history_batches(warehouse) -> None:
    """As if the history model had applied nothing yet (its batches re-run from the start)."""
    DeltaTable(str(warehouse / "_lakemirror/control/mirror_batches")).delete(
        "relation_name = 'dbo.t__history' and kind = 'applied'")


@pytest.mark.slow
def test_history_keeps_every_version_across_runs_reruns_and_compaction(tmp_path):
    zone, service = mirror_setup(tmp_path)
    service.settings = replace(service.settings,
                               dbt_vars={"lakemirror_history": ["dbo.t", "dbo.log"]})
    zone.table("Log", None)  # keyless: inserts only, every row a version that never ends
    zone.write("Log", 1, [{"id": 1, "c": None, "v": "x"}, {"id": 1, "c": None, "v": "x"}],
               SCHEMA.remove(3))
    folder = zone.table("T", ["id"])
    (folder / "_metadata.json").write_text(
        '{"keyColumns": ["id"], "ConditionalUpdateColumn": "c"}')
    zone.write("T", 1, FILES[0], SCHEMA)
    zone.write("T", 2, FILES[1], SCHEMA)
    assert {s.status for s in service.run()} == {"replicating"}
    check(service, 2)
    log = read_table(service.settings.warehouse / "dbo" / "log__history").to_pylist()
    assert sorted((row["v"], row["_lm_valid_from"], row["_lm_valid_to"], row["_lm_is_current"],
                   row["_lm_is_deleted"]) for row in log) == [
        ("x", at(1, 0), None, True, False), ("x", at(1, 1), None, True, False)]

    zone.write("T", 3, FILES[2], SCHEMA)
    assert {s.status for s in service.run(["dbo.t"])} == {"replicating"}  # builds its history
    check(service, 3)

    # The history lags (its batches not recorded): compaction must not fold what it has not
    # read, and applying every batch again changes nothing.
    forget_history_batches(service.settings.warehouse)
    [lagging] = maintain_tables(service.settings.layout, ["dbo.t"])
    assert lagging.staged_rows_folded == 0
    assert not [node for node in build(service.settings, RunLog(), service.dbt) if node.failed]
    check(service, 3)

    [folded] = maintain_tables(service.settings.layout, ["dbo.t"])  # now both have read everything
    assert folded.staged_rows_folded > folded.snapshot_rows > 0

    zone.write("T", 4, FILES[3], SCHEMA)
    shutil.rmtree(zone.root / "Log")  # a dropped table takes its history along
    assert {(s.table, s.status) for s in service.run()} == {
        ("log", "dropped"), ("t", "replicating")}
    check(service, 4)
    for table in ("t", "t__history"):  # exact with deletion vectors in use
        assert deletion_vectors_added(service.settings.warehouse / "dbo" / table) > 0, table
    assert not (service.settings.warehouse / "dbo" / "log__history").exists()
    assert not list(service.settings.project_dir.glob(
        "models/mirror/dbo/history/dbo__log__history.*"))
    assert "dbo.log__history" not in applied_positions(service.settings.layout)

    # After the compaction (after file 3), a full refresh keeps the rows current then, with
    # their own positions, and every version since; the versions ended before are gone.
    assert not [node for node in service.dbt(service.settings, "run", "--full-refresh",
                                             "--select", "dbo__t__history") if node.failed]
    assert history(service.settings.warehouse) == {
        version for version in expected_after(4) if version[4] is None or version[4] >= at(4, 0)}


def test_the_history_model_is_built_only_when_the_var_names_its_table(tmp_path):
    model = MirrorModel("dbo", "t", ("id",), "c")
    write_model(tmp_path, model, warehouse="dev")
    outcomes = write_history_model(tmp_path, model)
    assert set(outcomes.values()) == {"created"}
    yml = (tmp_path / "models/mirror/dbo/history/dbo__t__history.yml").read_text()
    [entry] = yaml.safe_load(yml)["models"]
    assert entry["name"] == "dbo__t__history"

    def enabled(history: object, warehouse: str = "dev") -> bool:
        context = {"var": lambda name, default=None:
                   history if name == HISTORY_VARIABLE and history is not None else default,
                   "env_var": lambda name, default="": warehouse}
        return str(get_rendered(entry["config"]["enabled"], context)).lower() == "true"

    assert not enabled(None) and not enabled(["dbo.other"])
    assert enabled(["dbo.t"]) and enabled(["*"])
    assert not enabled(["dbo.t"], warehouse="prod")
    assert set(write_history_model(tmp_path, model).values()) == {"unchanged"}


def run_cli(service, command: str):
    """`lakemirror <command> --json` on the service's zone, warehouse and project."""
    from click.testing import CliRunner

    from lakemirror.cli.main import cli

    mirroring = (["--landing-zone", str(service.settings.landing_zone), "--project-dir",
                  str(service.settings.project_dir)] if command != "status" else [])
    return CliRunner().invoke(cli, [command, "--json",
                                    "--warehouse", str(service.settings.warehouse), *mirroring])


def history_for_all(service) -> None:
    """Turn history on for every table, in the project's dbt_project.yml."""
    project = service.settings.project_dir / "dbt_project.yml"
    project.write_text(project.read_text().replace(
        "vars:\n", "vars:\n  lakemirror_history: ['*']\n"))


def test_a_failing_history_model_fails_its_table_and_a_failing_test_on_it_degrades_it(
        tmp_path):
    zone, service = mirror_setup(tmp_path)
    history_for_all(service)
    for table in ("Broken", "Tested", "Ok"):
        zone.table(table, ["id"])
        zone.write(table, 1, FILES[0], SCHEMA)
    assert run_cli(service, "ingest").exit_code == 0  # writes the models
    history_folder = service.settings.project_dir / "models/mirror/dbo/history"
    broken = history_folder / "dbo__broken__history.sql"  # edited: kept as it is
    broken.write_text(broken.read_text() + "{% if execute %}{{ exceptions.raise_compiler_error("
                      "'the history broke') }}{% endif %}\n")
    tested = history_folder / "dbo__tested__history.yml"
    tested.write_text(tested.read_text().replace(
        "      - name: _lm_valid_to\n",
        "      - name: _lm_valid_to\n        data_tests:\n          - not_null\n"))

    result = run_cli(service, "run")
    assert result.exit_code == 1, result.output
    tables = {table["table"]: table for table in json.loads(result.stdout)["tables"]}
    assert (tables["broken"]["status"], tables["broken"]["error_class"]) == ("failed", "system")
    assert "dbt model dbo__broken__history" in tables["broken"]["error"]
    assert "the history broke" in tables["broken"]["error"]
    assert tables["tested"]["status"] == "degraded"
    assert "not_null_dbo__tested__history__lm_valid_to" in tables["tested"]["error"]
    assert (tables["ok"]["status"], tables["ok"]["error"]) == ("replicating", None)
    assert mirrored_rows(service.settings.warehouse, "dbo", "broken") == mirrored_rows(
        service.settings.warehouse, "dbo", "ok")  # the mirror model itself was applied

    shown = run_cli(service, "status")
    assert shown.exit_code == 1
    recorded = {table["table"]: table["status"] for table in json.loads(shown.stdout)["tables"]}
    assert recorded == {"broken": "failed", "tested": "degraded", "ok": "replicating"}


def test_a_landing_table_named_like_a_history_fails_alone_and_the_first_keeps_the_name(
        tmp_path):
    zone, service = mirror_setup(tmp_path)
    history_for_all(service)
    for table in ("T", "T__History"):
        zone.table(table, ["id"])
        zone.write(table, 1, FILES[0], SCHEMA)
    result = run_cli(service, "run")
    assert result.exit_code == 1, result.output
    tables = {table["table"]: table for table in json.loads(result.stdout)["tables"]}
    loser = tables["t__history"]
    assert (loser["status"], loser["error_class"]) == ("failed", "user")
    assert "'T__History' maps to table dbo.t__history" in loser["error"]
    assert "history model and table of dbo.t (folder 'T'" in loser["error"]
    assert "rename the folder 'T__History'" in loser["error"]
    assert tables["t"]["status"] == "replicating", tables["t"]["error"]
    # t's history, not the folder's rows
    assert history(service.settings.warehouse) == expected_after(1)
    assert not (service.settings.warehouse / "_lakemirror/staging/dbo/t__history").exists()

    # A landing table mirrored before the table whose history would take its name keeps it.
    zone.table("Orders__History", ["id"])
    zone.write("Orders__History", 1, FILES[0], SCHEMA)
    shutil.rmtree(zone.root / "T__History")
    assert run_cli(service, "run").exit_code == 0
    zone.table("Orders", ["id"])
    zone.write("Orders", 1, FILES[0], SCHEMA)
    zone.write("Orders__History", 2, FILES[1], SCHEMA)
    result = run_cli(service, "run")
    assert result.exit_code == 1, result.output
    tables = {table["table"]: table for table in json.loads(result.stdout)["tables"]}
    assert tables["orders"]["status"] == "failed"
    assert ("history model and table of dbo.orders (folder 'Orders') would be named "
            "dbo.orders__history") in tables["orders"]["error"]
    assert "rename the folder 'Orders'" in tables["orders"]["error"]
    assert tables["orders__history"]["status"] == "replicating"
    assert mirrored_rows(service.settings.warehouse, "dbo", "orders__history") == as_multiset(
        apply_changes(FILES[:2], ["id"]))
    assert not (service.settings.warehouse / "dbo" / "orders").exists()
