"""`lakemirror resync`: a source snapshot applied to a mirrored table as one batch of changes
after its last staged one: ghost rows deleted, changed rows updated, new keys inserted, equal
rows untouched; exactly the snapshot afterwards (the reference model over the change files and
the staged diff agrees), later change files on top, and a snapshot that does not fit refused
with nothing written."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as csv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from lakemirror.cli.main import cli
from lakemirror.delta.rows import read_table
from lakemirror.errors import ConfigError, SnapshotError
from lakemirror.landing import POSITION
from lakemirror.maintenance import maintain_tables
from lakemirror.proof.diff import Diff, diff
from lakemirror.proof.resync import stage_snapshot
from lakemirror.proof.snapshot import Target, read_snapshot
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.staging.compaction import OPERATION_KEY
from lakemirror.storage.location import parse_location

from conftest import as_multiset, mirror_setup, mirrored_rows

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64()),
                    (M, pa.int32())])
DATA = SCHEMA.remove(3)
BIN = Path(sys.executable).parent
FILES = [
    [{"id": i, "v": f"v{i}", "x": float(i), M: 0} for i in range(20)],
    [*({"id": i, "v": f"w{i}", "x": i / 2, M: 1} for i in range(5)),
     {"id": 5, "v": None, "x": None, M: 2}, {"id": 6, "v": None, "x": None, M: 2},
     {"id": 25, "v": "u", "x": None, M: 4}],
    [*({"id": i, "v": "", "x": 1.5, M: 0} for i in range(30, 35)),
     {"id": 7, "v": "w7", "x": 7.0, M: 1}],
]
GHOSTS = {8, 9, 30}  # deleted in the source, still in the mirror


def source_state() -> list[dict[str, Any]]:
    """The source table as the snapshot holds it: the mirror's rows less the ghosts, four
    changed (a value, a value to NULL, an empty string to text), two new keys."""
    rows = {row["id"]: row for row in apply_changes(FILES, ["id"]) if row["id"] not in GHOSTS}
    rows[0] = {**rows[0], "v": "changed"}
    rows[10] = {**rows[10], "x": None}
    rows[31] = {**rows[31], "v": "text"}
    rows[11] = {**rows[11], "x": -1.0}
    rows |= {40: {"id": 40, "v": "new", "x": None}, 41: {"id": 41, "v": None, "x": 4.0}}
    return sorted(rows.values(), key=lambda row: row["id"])


def write_snapshot(folder: Path, rows: list[dict[str, Any]]) -> Path:
    """The snapshot as a folder: half the rows in Parquet, half in CSV (and a _SUCCESS mark)."""
    folder.mkdir(parents=True)
    half = len(rows) // 2
    pq.write_table(pa.Table.from_pylist(rows[:half], schema=DATA), folder / "part-0.parquet")
    csv.write_csv(pa.Table.from_pylist(rows[half:], schema=DATA), folder / "part-1.csv")
    (folder / "_SUCCESS").write_text("")
    return folder


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def mirrored(tmp_path: Path, files: list[list[dict[str, Any]]] = FILES) -> Any:
    """A mirror of dbo.t with `files` applied; its zone and service."""
    zone, service = mirror_setup(tmp_path)
    zone.table("T", ["id"])
    for sequence, rows in enumerate(files, 1):
        zone.write("T", sequence, rows, SCHEMA)
    assert {status.status for status in service.run()} == {"replicating"}
    return zone, service


def resync_args(service: Any, snapshot: Path | str, *extra: str) -> list[str]:
    settings = service.settings
    return ["resync", "dbo.t", "--snapshot", str(snapshot), "--landing-zone",
            str(settings.landing_zone), "--warehouse", str(settings.warehouse),
            "--project-dir", str(settings.project_dir), *extra]


def staged_after(service: Any, position: int) -> list[dict[str, Any]]:
    """The staged changes after `position`, in order, as change rows."""
    staged = DeltaTable(str(service.settings.layout.staging_path("dbo", "t"))).to_pyarrow_table(
        filters=[(POSITION, ">", position)]).sort_by(POSITION)
    return staged.drop_columns([POSITION]).to_pylist()


def positions(service: Any) -> dict[int, int]:
    rows = read_table(service.settings.warehouse / "dbo" / "t").to_pylist()
    return {row["id"]: row[POSITION] for row in rows}


@pytest.mark.slow
def test_a_snapshot_resyncs_to_exactly_itself_and_later_files_apply_on_top(tmp_path):
    zone, service = mirrored(tmp_path)
    before = positions(service)
    last = max(before.values())
    expected = source_state()
    snapshot = write_snapshot(tmp_path / "snapshot", expected)

    result = run_cli(*resync_args(service, snapshot, "--json"))
    assert result.exit_code == 0, result.output
    done = json.loads(result.output)
    assert (done["deleted"], done["updated"], done["inserted"]) == (3, 4, 2)
    assert done["unchanged"] == len(expected) - 6 and done["first_position"] == last + 1
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(expected)
    diff = staged_after(service, last)
    assert [row["id"] for row in diff] == sorted(row["id"] for row in diff)  # key order
    assert as_multiset(apply_changes([*FILES, diff], ["id"])) == as_multiset(expected)
    after = positions(service)
    untouched = {row["id"] for row in expected} - {row["id"] for row in diff}
    assert {key: after[key] for key in untouched} == {key: before[key] for key in untouched}
    assert run_cli("verify", "dbo.t", "--warehouse", str(service.settings.warehouse)
                   ).exit_code == 0

    again = run_cli(*resync_args(service, snapshot, "--json"))  # exactly once
    assert again.exit_code == 0 and json.loads(again.output)["first_position"] is None
    assert staged_after(service, last) == diff

    later = [{"id": 40, "v": None, "x": None, M: 2}, {"id": 8, "v": "back", "x": 8.0, M: 0},
             {"id": 0, "v": "later", "x": 0.0, M: 4}]
    zone.write("T", 4, later, SCHEMA)
    assert {status.status for status in service.run()} == {"replicating"}
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(
        apply_changes([*FILES, diff, later], ["id"]))
    [folded] = maintain_tables(service.settings.layout, ["dbo.t"])  # compaction folds it all
    assert folded.staged_rows_folded > 0
    assert run_cli("verify", "dbo.t", "--warehouse", str(service.settings.warehouse)
                   ).exit_code == 0


@pytest.mark.slow
def test_the_history_records_one_change_per_changed_key_at_the_resync_positions(tmp_path):
    zone, service = mirror_setup(tmp_path)
    service.settings = replace(service.settings, dbt_vars={"lakemirror_history": ["dbo.t"]})
    folder = zone.table("T", ["id"])
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"], '
                                           '"ConditionalUpdateColumn": "x"}')
    zone.write("T", 1, FILES[0], SCHEMA)
    assert {status.status for status in service.run()} == {"replicating"}
    rows = {row["id"]: row for row in apply_changes(FILES[:1], ["id"]) if row["id"] != 3}
    rows[4] = {**rows[4], "v": "changed"}
    rows[50] = {"id": 50, "v": "new", "x": 1.0}
    snapshot = tmp_path / "snapshot.parquet"
    pq.write_table(pa.Table.from_pylist(list(rows.values()), schema=DATA), snapshot)

    staged = stage_snapshot(service.settings.layout, "dbo.t", parse_location(str(snapshot)))
    assert (staged.deleted, staged.updated, staged.inserted) == (1, 1, 1)
    assert {status.status for status in service.run(["dbo.t"])} == {"replicating"}
    first, last = staged.first_position, staged.last_position
    history = read_table(service.settings.warehouse / "dbo" / "t__history").to_pylist()
    opened = sorted((row["id"], row["v"]) for row in history
                    if first <= row["_lm_valid_from"] <= last)
    ended = sorted((row["id"], row["_lm_is_deleted"]) for row in history
                   if row["_lm_valid_to"] is not None and first <= row["_lm_valid_to"] <= last)
    assert opened == [(4, "changed"), (50, "new")]
    assert ended == [(3, True), (4, False)]
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(rows.values())
    assert run_cli("verify", "dbo.t", "--warehouse", str(service.settings.warehouse)
                   ).exit_code == 0  # the history too


@pytest.mark.slow
def test_a_snapshot_below_a_keys_conditional_mark_is_refused(tmp_path):
    zone, service = mirror_setup(tmp_path)
    folder = zone.table("T", ["id"])
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"], '
                                           '"ConditionalUpdateColumn": "x"}')
    zone.write("T", 1, FILES[0], SCHEMA)
    assert {status.status for status in service.run()} == {"replicating"}
    rows = [{**row, "x": row["x"] - 1 if row["id"] == 7 else row["x"], "v": "changed"}
            for row in apply_changes(FILES[:1], ["id"])]
    snapshot = tmp_path / "snapshot.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=DATA), snapshot)
    staging = service.settings.layout.staging_path("dbo", "t")
    version = DeltaTable(str(staging)).version()
    result = run_cli(*resync_args(service, snapshot))
    assert result.exit_code == 3
    assert "id=7" in result.output and "high-water mark" in result.output
    assert DeltaTable(str(staging)).version() == version


def bad_snapshots(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Snapshots that do not fit dbo.t, each with what its refusal must say."""
    rows = [{"id": i, "v": "a", "x": 1.0} for i in range(3)]
    made = {}
    tmp_path.mkdir()

    def parquet(name: str, table: pa.Table, says: str) -> None:
        pq.write_table(table, tmp_path / f"{name}.parquet")
        made[name] = (tmp_path / f"{name}.parquet", says)

    parquet("duplicate", pa.Table.from_pylist([*rows, rows[1]], schema=DATA),
            "keys occur more than once in the snapshot, such as id=1 (1 rows repeat a key)")
    parquet("missing", pa.Table.from_pylist(rows, schema=DATA).drop_columns(["x"]),
            "missing 'x'")
    parquet("marker", pa.Table.from_pylist([{**row, M: 0} for row in rows], schema=SCHEMA),
            f"extra '{M}'")
    parquet("null_key", pa.Table.from_pylist([*rows, {"id": None, "v": "b", "x": 2.0}],
                                             schema=DATA), "key column 'id' is NULL")
    (tmp_path / "uncastable.csv").write_text("id,v,x\n1,a,1.5\n2,b,many\n")
    made["uncastable"] = (tmp_path / "uncastable.csv", "column 'x' does not cast")
    (tmp_path / "link.parquet").symlink_to(made["missing"][0])
    made["link"] = (tmp_path / "link.parquet", "is a symbolic link")
    return made


@pytest.mark.slow
def test_a_snapshot_that_does_not_fit_is_refused_with_nothing_written(tmp_path):
    _, service = mirrored(tmp_path, FILES[:1])
    staging = service.settings.layout.staging_path("dbo", "t")
    mirror = service.settings.warehouse / "dbo" / "t"
    versions = DeltaTable(str(staging)).version(), DeltaTable(str(mirror)).version()
    for name, (snapshot, says) in bad_snapshots(tmp_path / "bad").items():
        result = run_cli(*resync_args(service, snapshot))
        assert result.exit_code == 3, name
        assert says in result.output and "dbo.t" in result.output, (name, result.output)
    (tmp_path / "other_zone").mkdir()
    fitting = tmp_path / "fitting.parquet"  # the table's own rows, less one
    pq.write_table(pa.Table.from_pylist(apply_changes(FILES[:1], ["id"])[1:], schema=DATA),
                   fitting)
    wrong_zone = resync_args(service, fitting)
    wrong_zone[wrong_zone.index("--landing-zone") + 1] = str(tmp_path / "other_zone")
    result = run_cli(*wrong_zone)
    assert result.exit_code == 3 and "mirrors the landing zone" in result.output
    assert (DeltaTable(str(staging)).version(), DeltaTable(str(mirror)).version()) == versions


@pytest.mark.slow
def test_a_table_without_keys_or_unknown_is_refused(tmp_path):
    zone, service = mirror_setup(tmp_path)
    zone.table("T", None)
    zone.write("T", 1, FILES[0][:3], DATA)
    assert {status.status for status in service.run()} == {"replicating"}
    snapshot = tmp_path / "snapshot.parquet"
    pq.write_table(pa.Table.from_pylist(FILES[0][:3], schema=DATA), snapshot)
    keyless = run_cli(*resync_args(service, snapshot))
    assert keyless.exit_code == 3 and "without keyColumns" in keyless.output
    args = resync_args(service, snapshot)
    args[1] = "dbo.nope"
    unknown = run_cli(*args)
    assert unknown.exit_code == 2 and "no mirrored table dbo.nope" in unknown.output


def resync_commits(service: Any) -> int:
    history = DeltaTable(str(service.settings.layout.staging_path("dbo", "t"))).history()
    return sum(1 for commit in history if commit.get(OPERATION_KEY) == "resync")


@pytest.mark.slow
@pytest.mark.parametrize("kill", ["at once", "after 3 s", "after the commit"])
def test_a_killed_resync_leaves_the_old_or_the_new_state_and_the_next_run_finishes(
        tmp_path, kill):
    _, service = mirrored(tmp_path)
    old = mirrored_rows(service.settings.warehouse, "dbo", "t")
    expected = source_state()
    snapshot = write_snapshot(tmp_path / "snapshot", expected)
    command = [str(BIN / "lakemirror"), *resync_args(service, snapshot)]
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home")}
    victim = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while kill == "after the commit" and resync_commits(service) == 0:
        assert victim.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    if kill == "after 3 s":
        time.sleep(3)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") in (old, as_multiset(expected))
    committed = resync_commits(service)
    assert committed == 1 if kill == "after the commit" else committed in (0, 1)
    if committed:  # a plain run applies the staged resync
        assert {status.status for status in service.run()} == {"replicating"}
        assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(expected)
    assert run_cli(*resync_args(service, snapshot)).exit_code == 0
    assert resync_commits(service) == 1
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(expected)


@pytest.mark.slow
def test_rows_changed_behind_lakemirrors_back_are_put_right(tmp_path):
    """The mirror applied every staged change: the snapshot is compared with it too."""
    _, service = mirrored(tmp_path)
    mirror = DeltaTable(str(service.settings.warehouse / "dbo" / "t"))
    mirror.delete("id = 12")
    mirror.update({"v": "'tampered'"}, predicate="id = 13")
    expected = sorted(apply_changes(FILES, ["id"]), key=lambda row: row["id"])
    snapshot = tmp_path / "snapshot.parquet"
    pq.write_table(pa.Table.from_pylist(expected, schema=DATA), snapshot)
    result = run_cli(*resync_args(service, snapshot, "--json"))
    assert result.exit_code == 0, result.output
    assert (json.loads(result.output)["updated"], json.loads(result.output)["deleted"]) == (2, 0)
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(expected)
    assert run_cli("verify", "dbo.t", "--warehouse", str(service.settings.warehouse)
                   ).exit_code == 0


@pytest.mark.slow
def test_a_snapshot_folder_in_s3_resyncs(tmp_path, monkeypatch, s3_server):
    import obstore

    _, service = mirrored(tmp_path)
    expected = source_state()
    prefix = s3_server.fresh_prefix("snapshot")
    local = write_snapshot(tmp_path / "snapshot", expected)
    store = s3_server.store(prefix)
    for name in ("part-0.parquet", "part-1.csv", "_SUCCESS"):
        obstore.put(store, name, (local / name).read_bytes())
    monkeypatch.setenv("LAKEMIRROR_STORAGE_OPTIONS", json.dumps(dict(s3_server.options)))
    result = run_cli(*resync_args(service, s3_server.url(prefix)))
    assert result.exit_code == 0, result.output
    assert "3 deleted, 4 updated, 2 inserted" in result.output
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(expected)


def changes_of(found: Diff) -> list[dict[str, Any]]:
    return [*({**row, M: 2} for row in found.deleted.to_pylist()),
            *({**row, M: 4} for row in found.upserted.to_pylist())]


@pytest.mark.parametrize("seed", range(20))
def test_the_diff_makes_any_state_the_snapshot_and_touches_only_what_differs(seed):
    """Random states (duplicate keys, NULLs, NaN, nested values) against random snapshots:
    the state with the diff applied (reference model) is the snapshot, and the keys left
    alone are those the state holds once, equal in every column."""
    chance = random.Random(seed)
    values = [None, 1.0, float("nan"), 2.5]
    nested = [None, {"a": 1, "b": [1, 2]}, {"a": None, "b": []}, {"a": 1, "b": [2, 1]}]

    def row(key: int) -> dict[str, Any]:
        return {"id": key, "x": chance.choice(values), "s": chance.choice(nested),
                "m": chance.choice([None, [], [("k", 1)], [("k", 2)]])}

    state = [row(chance.randrange(12)) for _ in range(chance.randrange(15))]
    snapshot = [row(key) for key in chance.sample(range(12), chance.randrange(12))]
    snapshot += [{**one, "id": 100 + index} for index, one in enumerate(state[:2])]
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64()),
                        ("s", pa.struct([("a", pa.int64()), ("b", pa.list_(pa.int64()))])),
                        ("m", pa.map_(pa.string(), pa.int64()))])
    found = diff(pa.Table.from_pylist(snapshot, schema=schema),
                 [pa.Table.from_pylist(state, schema=schema)], ["id"])

    def canonical(rows: list[dict[str, Any]]) -> list[str]:
        return sorted(json.dumps(one, sort_keys=True, default=str) for one in rows)

    applied = apply_changes([changes_of(found)], ["id"], initial=state)
    assert canonical(applied) == canonical(snapshot)
    held = {key: [one for one in state if one["id"] == key] for key in {r["id"] for r in state}}
    alone = {one["id"] for one in snapshot
             if canonical(held.get(one["id"], [])) == canonical([one])}
    assert found.unchanged == len(alone)
    assert {one["id"] for one in found.upserted.to_pylist()}.isdisjoint(alone)


@pytest.mark.slow
def test_a_table_of_a_warehouse_in_s3_resyncs(tmp_path, monkeypatch, s3_server):
    from test_mistakes import FILES as MISTAKES_FILES
    from test_object_mirror import object_mirror

    setup = object_mirror(tmp_path, monkeypatch, s3_server)
    assert setup.run().exit_code == 0
    expected = [{"id": 1, "v": "source"}, {"id": 3, "v": "v3"}, {"id": 9, "v": "new"}]
    assert apply_changes(MISTAKES_FILES[:2], ["id"]) == [{"id": 1, "v": "one"},
                                                        {"id": 3, "v": "v3"}]
    snapshot = tmp_path / "orders.csv"
    snapshot.write_text("id,v\n1,source\n3,v3\n9,new\n")
    result = setup.run("sales.orders", "--snapshot", str(snapshot), command="resync")
    assert result.exit_code == 0, result.output
    assert (json.loads(result.stdout)["updated"], json.loads(result.stdout)["inserted"]) == (1, 1)
    assert mirrored_rows(setup.warehouse, "sales", "orders") == as_multiset(expected)
    verified = run_cli("verify", "--warehouse", str(setup.warehouse))
    assert verified.exit_code == 0, verified.output


def test_a_snapshot_that_is_not_there_is_a_usage_error(tmp_path):
    target = Target("dbo.t", DATA, ("id",))
    for missing in (tmp_path / "nope.parquet", tmp_path / "nope" / "x.parquet"):
        with pytest.raises(ConfigError, match="does not exist"):
            read_snapshot(missing, target)
    (tmp_path / "empty").mkdir()
    with pytest.raises(SnapshotError, match="holds no data file"):
        read_snapshot(tmp_path / "empty", target)
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(SnapshotError, match="neither Parquet nor CSV"):
        read_snapshot(tmp_path / "notes.txt", target)
