"""Concurrent runs on one warehouse: conflict classification, retries with backoff, per-table
locks, table selection, parallel `lakemirror run`s against the reference model, and what the
engines do with `delta.isolationLevel`."""

import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

from lakemirror.node_result import NodeResult
from lakemirror.conflicts import Backoff, ConflictKind, classify_conflict, retry_on_conflict
from lakemirror.errors import ConfigError, LockTimeoutError
from lakemirror.reference import ROW_MARKER, apply_changes
from lakemirror.run.build import build
from lakemirror.run.log import RunLog
from lakemirror.table_scope import Scope, resolve_scope
from lakemirror.staging.lock import table_locks
from lakemirror.storage.warehouse import warehouse_storage

from conftest import as_multiset, copy_project, mirrored_rows, owner_session

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
BIN = Path(sys.executable).parent
NO_WAIT = Backoff(attempts=4, base_seconds=0)

# Messages as engines print them: Sail 0.7.2 (every lost commit, measured), delta-rs 1.6.6
# (measured), Delta on Spark (its error classes and exception names), dbt-spark's wrapping.
SAIL = "Failed to commit transaction: 0"
DELTA_RS_APPEND = ("Failed to commit transaction: Commit failed: a concurrent transactions added "
                   "new data.\nHelp: This transaction's query must be rerun to include the new "
                   "data. Also, if you don't care to require this check to pass in the future, "
                   "the isolation level can be set to Snapshot Isolation.")
DELTA_RS_DELETE_READ = ("Failed to commit transaction: Commit failed: a concurrent transaction "
                        "deleted data this operation read.\nHelp: This transaction's query must "
                        "be rerun to exclude the removed data.")
SPARK_APPEND = ("[DELTA_CONCURRENT_APPEND] ConcurrentAppendException: Files were added to the "
                "root of the table by a concurrent update. Please try the operation again.\n"
                "Conflicting commit: {\"version\":7,\"operation\":\"WRITE\"}\nRefer to "
                "https://docs.delta.io/latest/concurrency-control.html for more details.")


@pytest.mark.parametrize(("message", "kind"), [
    (SAIL, ConflictKind.UNREPORTED),
    (f"Runtime Error in model dbo__t (models/mirror/dbo/dbo__t.sql)\n  {SAIL}",
     ConflictKind.UNREPORTED),
    (DELTA_RS_APPEND, ConflictKind.CONCURRENT_APPEND),
    (DELTA_RS_DELETE_READ, ConflictKind.DELETE_READ),
    ("Failed to commit transaction: Commit failed: a concurrent transaction deleted the same "
     "data your transaction deletes.", ConflictKind.DELETE_DELETE),
    ("Failed to commit transaction: Metadata changed since last commit.",
     ConflictKind.METADATA_CHANGED),
    ("Failed to commit transaction: Protocol changed since last commit: ",
     ConflictKind.PROTOCOL_CHANGED),
    (SPARK_APPEND, ConflictKind.CONCURRENT_APPEND),
    ("io.delta.exceptions.ConcurrentDeleteReadException: This transaction attempted to read "
     "one or more files that were deleted (for example part-0.parquet) by a concurrent update.",
     ConflictKind.DELETE_READ),
    ("[DELTA_CONCURRENT_DELETE_DELETE] ConcurrentDeleteDeleteException: This transaction "
     "attempted to delete one or more files that were deleted by a concurrent update.",
     ConflictKind.DELETE_DELETE),
    ("io.delta.exceptions.MetadataChangedException: The metadata of the Delta table has been "
     "changed by a concurrent update. Please try the operation again.",
     ConflictKind.METADATA_CHANGED),
    ("[DELTA_PROTOCOL_CHANGED] ProtocolChangedException: The protocol version of the Delta "
     "table has been changed by a concurrent update.", ConflictKind.PROTOCOL_CHANGED),
    ("[DELTA_CONCURRENT_TRANSACTION] ConcurrentTransactionException: This error occurs when "
     "multiple streaming queries are using the same checkpoint.",
     ConflictKind.CONCURRENT_TRANSACTION),
    ("[DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION] Cannot create table "
     "('`spark_catalog`.`_lakemirror_control`.`mirror_batches`'). The associated location "
     "('file:/wh/_lakemirror/control/mirror_batches') is not empty and also not a Delta table.",
     ConflictKind.CONCURRENT_CREATE),
])
def test_engine_messages_are_classified_and_kept_whole(message, kind):
    conflict = classify_conflict(message)
    assert conflict is not None and conflict.kind is kind
    assert conflict.message == message.strip()


@pytest.mark.parametrize("message", [
    None, "", "[TABLE_OR_VIEW_NOT_FOUND] The table or view `dbo`.`t` cannot be found",
    "Compilation Error in model dbo__t: column v changed type from int to string",
])
def test_other_errors_are_no_conflict(message):
    assert classify_conflict(message) is None


def test_a_real_delta_rs_conflict_is_classified(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": [1, 2, 3]}))
    stale = DeltaTable(path)
    write_deltalake(path, pa.table({"id": [1]}), mode="append")  # rows the delete reads
    with pytest.raises(CommitFailedError) as error:
        stale.delete("id < 3")
    conflict = classify_conflict(str(error.value))
    assert conflict is not None and conflict.kind is ConflictKind.CONCURRENT_APPEND


def test_retry_on_conflict_retries_a_bounded_number_of_times():
    calls, lines = [], []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError(SAIL)
        return "done"

    assert retry_on_conflict(flaky, what="op", progress=lines.append, backoff=NO_WAIT) == "done"
    assert len(calls) == 3 and len(lines) == 2 and "attempt 3 of 4" in lines[-1]

    def always() -> None:
        calls.append(1)
        raise RuntimeError(DELTA_RS_APPEND)

    calls.clear()
    with pytest.raises(RuntimeError, match="concurrent transactions added new data"):
        retry_on_conflict(always, what="op", progress=lines.append, backoff=NO_WAIT)
    assert len(calls) == 4


def test_a_non_conflict_error_is_not_retried():
    calls = []

    def broken() -> None:
        calls.append(1)
        raise ValueError("bad input")

    with pytest.raises(ValueError):
        retry_on_conflict(broken, what="op", progress=print, backoff=NO_WAIT)
    assert len(calls) == 1


class RecordedJitter:
    """Stands in for `random` in lakemirror.conflicts: records each jitter range asked for and
    returns the point `share` of the way through it."""

    def __init__(self, share):
        self.share, self.ranges = share, []

    def uniform(self, low, high):
        self.ranges.append((low, high))
        return low + self.share * (high - low)


def test_backoff_grows_exponentially_within_its_cap(monkeypatch):
    import lakemirror.conflicts

    for share, expected in ((1.0, [1, 2, 4, 4, 4]), (0.5, [0.5, 1, 2, 2, 2])):
        jitter = RecordedJitter(share)
        monkeypatch.setattr(lakemirror.conflicts, "random", jitter)
        assert list(Backoff(attempts=6, base_seconds=1, cap_seconds=4).delays()) == expected
        assert jitter.ranges == [(0, 1), (0, 2), (0, 4), (0, 4), (0, 4)]
    jitter = RecordedJitter(1.0)
    monkeypatch.setattr(lakemirror.conflicts, "random", jitter)
    assert list(Backoff().delays()) == [0.5, 1.0, 2.0]  # the default: 4 attempts, 0.5 s, cap 8


def test_backoff_jitter_spreads_over_the_whole_range():
    import random

    random.seed(40)
    delays = [list(Backoff(attempts=3, base_seconds=1, cap_seconds=4).delays())
              for _ in range(2_000)]
    for retry, bound in enumerate([1, 2]):
        waits = [attempt[retry] for attempt in delays]
        assert 0 <= min(waits) < 0.05 * bound and 0.95 * bound < max(waits) <= bound
        assert 0.45 * bound < sum(waits) / len(waits) < 0.55 * bound  # full jitter: mean bound/2


def _fake_dbt(outcomes):
    """A stand-in for `invoke_dbt` that returns prepared node results in turn."""
    calls = []

    def dbt(settings, command, *args, extra_vars=None):
        calls.append((command, *args))
        return outcomes[len(calls) - 1]
    return dbt, calls


def _model(status, message=None):
    return NodeResult("model.lakemirror.dbo__t", status, message)


def test_a_model_that_lost_a_commit_is_built_again(service):
    other = NodeResult("model.lakemirror.dbo__u", "success", None)
    dbt, calls = _fake_dbt([[_model("error", SAIL), other], [_model("success")]])
    lines = []
    nodes = build(replace(service.settings, backoff=NO_WAIT), RunLog(lines.append), dbt)
    assert calls == [("build",), ("build", "--select", "dbo__t")]
    assert {node.unique_id: node.status for node in nodes} == {
        "model.lakemirror.dbo__t": "success", "model.lakemirror.dbo__u": "success"}
    assert any("dbo__t (commit conflict" in line and "attempt 2 of 4" in line for line in lines)


def test_a_model_still_conflicting_gives_up_after_the_last_attempt(service):
    dbt, calls = _fake_dbt([[_model("error", DELTA_RS_APPEND)]] * 4)
    [node] = build(replace(service.settings, backoff=NO_WAIT), RunLog(), dbt)
    assert len(calls) == 4 and node.failed and node.message == DELTA_RS_APPEND


def test_selected_tables_build_only_their_models(service):
    for name in ("dbo__t", "dbo__u"):
        model = service.settings.project_dir / "models" / "mirror" / "dbo" / f"{name}.sql"
        model.parent.mkdir(parents=True, exist_ok=True)
        model.write_text("select 1")
    dbt, calls = _fake_dbt([[], []])
    build(service.settings, RunLog(), dbt, Scope(frozenset({"dbo.t"}), explicit=True))
    build(service.settings, RunLog(), dbt, Scope(frozenset({"dbo.t"}), explicit=False))
    assert calls == [("build", "--select", "dbo__t"), ("build", "--exclude", "dbo__u")]


def test_scope_names_tables_or_refuses_unknown_ones():
    known = ["dbo.t", "sales.orders"]
    assert resolve_scope([], known) == Scope(frozenset(known), explicit=False)
    assert resolve_scope(["T", "Sales.Orders"], known).names == frozenset(known)
    with pytest.raises(ConfigError, match="no table dbo.x"):
        resolve_scope(["x"], known)


def test_locks_on_disjoint_tables_do_not_wait_and_the_same_table_times_out(tmp_path):
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with table_locks(warehouse_storage(tmp_path), ["dbo.t"], timeout=0, progress=print):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(10)
    try:
        with table_locks(warehouse_storage(tmp_path), ["dbo.u"], timeout=0, progress=print):
            pass
        lines = []
        started = time.monotonic()
        with pytest.raises(LockTimeoutError, match="dbo.t"):
            with table_locks(warehouse_storage(tmp_path), ["dbo.u", "dbo.t"], timeout=0.5,
                             progress=lines.append):
                pass
        assert time.monotonic() - started >= 0.5
        assert lines == ["waiting for dbo.t (another lakemirror run holds it)"]
    finally:
        release.set()
        thread.join()


def test_an_unselected_table_is_never_dropped(zone, service):
    zone.table("T", ["id"])
    zone.write("T", 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    folder = zone.table("U", ["id"])
    zone.write("U", 1, [{"id": 2, "v": "b", M: 0}], SCHEMA)
    service.ingest_only()
    shutil.rmtree(folder)
    [status] = service.ingest_only(["dbo.t"])
    assert status.table == "t"
    assert DeltaTable.is_deltatable(str(service.settings.warehouse / "_lakemirror/staging/dbo/u"))
    from lakemirror.monitor import read_monitor
    from lakemirror.staging import Warehouse

    assert set(read_monitor(Warehouse(service.settings.warehouse))) == {("dbo", "t"), ("dbo", "u")}


@pytest.mark.parametrize("level", ["Serializable", "WriteSerializable"])
def test_delta_rs_rejects_an_update_after_a_blind_append_under_either_level(tmp_path, level):
    """Delta on Spark lets a blind append pass an UPDATE under WriteSerializable; the deltalake
    writer (1.6.6) rejects it under both levels, as under Serializable, when the appended rows
    match the update's predicate (it lets non-matching ones pass under both)."""
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": [1, 2, 3], "v": [0, 0, 0]}),
                    configuration={"delta.isolationLevel": level})
    stale = DeltaTable(path)
    write_deltalake(path, pa.table({"id": [1], "v": [0]}), mode="append")
    with pytest.raises(CommitFailedError) as error:
        stale.update(predicate="id < 3", updates={"v": "1"})
    conflict = classify_conflict(str(error.value))
    assert conflict is not None and conflict.kind is ConflictKind.CONCURRENT_APPEND


@pytest.mark.slow
@pytest.mark.parametrize("level", ["Serializable", "WriteSerializable"])
def test_sail_rejects_a_merge_overlapping_a_blind_append_under_either_level(tmp_path, level):
    """Sail (0.7.2) accepts `delta.isolationLevel` but does not honour WriteSerializable: a
    MERGE that overlaps a blind INSERT loses under both levels, reporting no reason."""
    path = tmp_path / "t"
    sessions = [owner_session() for _ in range(2)]
    sessions[0].sql(f"create table t using delta location '{path}' tblproperties "
                    f"('delta.isolationLevel' = '{level}') "
                    "as select id, id as v from range(0, 3000000)").collect()
    sessions[1].sql(f"create table t using delta location '{path}'").collect()
    errors: list[str] = []

    def merge() -> None:
        try:
            sessions[0].sql("merge into t using (select id, -1 as v from range(0, 3000000, 1000))"
                            " as s on t.id = s.id when matched then update set v = s.v").collect()
        except Exception as error:
            errors.append(str(error))

    thread = threading.Thread(target=merge)
    thread.start()
    time.sleep(0.2)
    sessions[1].sql("insert into t select id, 7 from range(9000000, 9000005)").collect()
    thread.join()
    for session in sessions:
        session.stop()
    operations = [entry["operation"] for entry in DeltaTable(str(path)).history()]
    assert operations[0] == "WRITE" and "MERGE" not in operations
    [message] = errors
    conflict = classify_conflict(message)
    assert conflict is not None and conflict.kind is ConflictKind.UNREPORTED


def _files(table: str, count: int, offset: int) -> list[list[dict[str, object]]]:
    """Change files mixing all markers over 40 keys."""
    return [[{"id": (i * 7 + n) % 40, "v": f"{table}{n}-{i}", M: [0, 1, 2, 4][(i + n) % 4]}
             for i in range(120)] for n in range(offset, offset + count)]


def _start(tmp_path: Path, zone_root: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
           "LAKEMIRROR_LANDING_ZONE": str(zone_root), "LAKEMIRROR_WAREHOUSE": str(tmp_path / "wh"),
           "LAKEMIRROR_PROJECT_DIR": str(tmp_path / "project")}
    return subprocess.Popen([str(BIN / "lakemirror"), "run", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(run: subprocess.Popen[str], progress: str = "") -> str:
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, out + progress + err
    return progress + err


def _progress_until(run: subprocess.Popen[str], text: str) -> str:
    """The run's progress lines up to the first one containing `text`."""
    assert run.stderr is not None
    lines = []
    for line in run.stderr:
        lines.append(line)
        if text in line:
            break
    return "".join(lines)


def _expected(files: list[list[dict[str, object]]]) -> object:
    return as_multiset([{k: v for k, v in row.items() if k != M}
                        for row in apply_changes(files, ["id"])])


@pytest.mark.slow
def test_parallel_runs_on_disjoint_tables_both_succeed(zone, tmp_path):
    copy_project(tmp_path / "project")
    files = {"T": _files("t", 3, 0), "U": _files("u", 3, 0)}
    for folder, changes in files.items():
        zone.table(folder, ["id"])
        for sequence, rows in enumerate(changes, 1):
            zone.write(folder, sequence, rows, SCHEMA)
    runs = [_start(tmp_path, zone.root, "--table", "dbo.t"),
            _start(tmp_path, zone.root, "--table", "dbo.u")]
    logs = [_finish(run) for run in runs]
    assert not any("waiting for dbo." in log for log in logs), logs
    for folder, changes in files.items():
        assert mirrored_rows(tmp_path / "wh", "dbo", folder.lower()) == _expected(changes)


@pytest.mark.slow
def test_parallel_runs_on_the_same_tables_end_equal_to_the_reference(zone, tmp_path):
    copy_project(tmp_path / "project")
    files = {"T": _files("t", 4, 0), "U": _files("u", 4, 0)}
    for folder, changes in files.items():
        zone.table(folder, ["id"])
        for sequence, rows in enumerate(changes[:2], 1):
            zone.write(folder, sequence, rows, SCHEMA)
    first = _start(tmp_path, zone.root)
    progress = _progress_until(first, "dbt build")
    for folder, changes in files.items():
        for sequence, rows in enumerate(changes[2:], 3):
            zone.write(folder, sequence, rows, SCHEMA)
    second = _start(tmp_path, zone.root)
    logs = [_finish(first, progress), _finish(second)]
    assert "waiting for dbo.t" in logs[1], logs
    for folder, changes in files.items():
        assert mirrored_rows(tmp_path / "wh", "dbo", folder.lower()) == _expected(changes)


@pytest.mark.slow
def test_a_stale_batch_applied_after_a_newer_one_brings_no_row_back(zone, service):
    """Job A applies files 2-3 but has not recorded them yet when job B, which claimed only
    file 2, applies its batch: B must neither bring back the row file 3 deleted nor add a
    second row for the key file 3 updated."""
    M = ROW_MARKER
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
    files = [
        [{"id": 1, "v": "a", M: 0}, {"id": 2, "v": "b", M: 0}],
        [{"id": 3, "v": "c", M: 0}, {"id": 1, "v": "a2", M: 1}],
        [{"id": 3, "v": None, M: 2}, {"id": 1, "v": "a3", M: 1}],
    ]
    zone.table("T", ["id"])
    zone.write("T", 1, files[0], schema)
    assert service.run()[0].status == "replicating"
    zone.write("T", 2, files[1], schema)
    service.ingest_only()
    staging = DeltaTable(str(service.settings.warehouse / "_lakemirror" / "staging" / "dbo" / "t"))
    file_2_end = max(staging.to_pyarrow_table(columns=["_lm_position"]).column(0).to_pylist())
    zone.write("T", 3, files[2], schema)
    service.ingest_only()

    project = service.settings.project_dir / "dbt_project.yml"
    original = project.read_text()
    record_hook = '      +post-hook: "{{ lakemirror.record_mirror_batch() }}"\n'
    assert record_hook in original
    project.write_text(original.replace(record_hook, ""))
    assert not [node for node in service.dbt(service.settings, "run")
                if node.failed]  # job A, unrecorded
    project.write_text(original)
    (service.settings.project_dir / "macros" / "stale_claim.sql").write_text(
        "{% macro spark__claim_mirror_batch() %}"
        "insert into {{ lakemirror._mirror_batches_table() }} select "
        "'{{ this.schema }}.{{ this.identifier }}', '{{ invocation_id }}', 'claimed', "
        f"{file_2_end}, cast(current_timestamp() as string)"
        "{% endmacro %}")
    assert not [node for node in service.dbt(service.settings, "run")
                if node.failed]  # job B, file 2 only

    expected = apply_changes(files, ["id"])
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(
        [{"id": row["id"], "v": row["v"]} for row in expected])


def test_models_built_at_once_on_a_fresh_warehouse_never_write_a_shared_table_they_read(
        zone, service):
    """On a fresh warehouse every model creates and registers at once: ingest creates the log
    of mirror batches (on Spark, two models creating it together fail one of them), and the
    hooks only append to it and to the registry (a MERGE reads the table it writes, so two
    at once conflict)."""
    for table in ("Customers", "Orders"):
        zone.table(table, ["id"])
        zone.write(table, 1, [{"id": 1, "v": "a", M: 0}], SCHEMA)
    service.ingest_only()
    control = service.settings.warehouse / "_lakemirror" / "control"
    assert DeltaTable(str(control / "mirror_batches")).schema().to_arrow().names == [
        "relation_name", "invocation_id", "kind", "batch_end", "recorded_at"]
    assert [status.status for status in service.run()] == ["replicating"] * 2
    for table in ("customers", "orders"):
        assert mirrored_rows(service.settings.warehouse, "dbo", table) == as_multiset(
            [{"id": 1, "v": "a"}])
    for log in ("mirror_batches", "relations"):
        operations = [entry["operation"] for entry in DeltaTable(str(control / log)).history()]
        assert operations.count("CREATE TABLE") <= 1 and "MERGE" not in operations, operations
