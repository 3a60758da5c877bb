"""Real commit conflicts between two Spark sessions on Delta Lake 4.0: Delta's own conflict
exceptions are classified, and a mirror model whose MERGE lost its commit to another session
is built again and ends equal to the reference model.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from lakemirror.conflicts import Backoff, ConflictKind, classify_conflict
from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import SPARK_UNAVAILABLE, as_multiset, mirror_setup, mirrored_rows, spark_session

pytestmark = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(SPARK_UNAVAILABLE is not None,
                                 reason=f"spark target skipped: {SPARK_UNAVAILABLE}")]

M = ROW_MARKER
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), (M, pa.int32())])
# The slow statement pauses this long (s) on each row it reads, after it took its snapshot:
# the window in which the other session commits.
PAUSE_SECONDS = 3


@pytest.mark.parametrize(("conflicting", "kind"), [
    ("insert into {t} values (2, 'appended')", ConflictKind.CONCURRENT_APPEND),
    ("delete from {t} where id = 1", ConflictKind.DELETE_READ),
])
def test_delta_conflicts_between_two_sessions_are_classified(tmp_path, conflicting, kind):
    first = spark_session()
    second = first.newSession()
    seconds = PAUSE_SECONDS

    def pause(value: object) -> bool:  # a closure, so Spark's Python workers get its code
        time.sleep(seconds)
        return value is not None

    first.udf.register("lakemirror_test_pause", pause, "boolean")  # deterministic, as UPDATE
    table = f"delta.`{tmp_path / 't'}`"
    first.sql(f"create table {table} (id bigint, v string) using delta "
              "tblproperties ('delta.isolationLevel' = 'Serializable')")
    first.sql(f"insert into {table} values (1, 'a')")
    errors: list[str] = []

    def update() -> None:
        try:
            first.sql(f"update {table} set v = 'updated' "
                      "where lakemirror_test_pause(id)").collect()
        except Exception as error:  # Delta's conflict, through PySpark
            errors.append(str(error))

    thread = threading.Thread(target=update)
    thread.start()
    wait_for_a_running_job(first, thread)
    second.sql(conflicting.format(t=table)).collect()
    thread.join()
    [message] = errors
    conflict = classify_conflict(message)
    assert conflict is not None and conflict.kind is kind, message
    versions = [entry["operation"] for entry in DeltaTable(str(tmp_path / "t")).history()]
    assert "UPDATE" not in versions


def wait_for_a_running_job(session: Any, statement: threading.Thread,
                           timeout: float = 120) -> None:
    """Until a Spark job runs in the session's context: the slow statement took its snapshot."""
    tracker = session.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout
    while not tracker.getActiveJobsIds():
        assert statement.is_alive(), "the statement ended before it started a job"
        assert time.monotonic() < deadline, "the statement never started a job"
        time.sleep(0.02)


def test_a_mirror_merge_that_lost_its_commit_to_another_session_is_built_again(tmp_path):
    """Another session changes the mirrored table's metadata over and over while the mirror
    model runs, so its MERGE loses the commit (MetadataChangedException); the run classifies
    the conflict, stops the other writer and builds the model again."""
    zone, service = mirror_setup(tmp_path, "spark")
    service.settings = replace(service.settings, backoff=Backoff(attempts=4, base_seconds=0))
    zone.table("T", ["id"])
    files = [[{"id": i, "v": f"v{i}", M: 0} for i in range(1, 4)],
             [{"id": 1, "v": "one", M: 1}, {"id": 2, "v": None, M: 2}, {"id": 4, "v": "d", M: 4}]]
    zone.write("T", 1, files[0], SCHEMA)
    [status] = service.run()
    assert status.status == "replicating", status.error

    other = spark_session().newSession()
    stop = threading.Event()
    ticks: list[int] = []

    def tick() -> None:  # another writer: metadata commits, one after the other
        while not stop.is_set():
            try:
                other.sql(f"alter table delta.`{service.settings.warehouse / 'dbo' / 't'}` set "
                          f"tblproperties ('test.tick' = '{len(ticks)}')").collect()
                ticks.append(1)
            except Exception:  # it loses to the MERGE sometimes; that is fine too
                pass

    writer = threading.Thread(target=tick)
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        if line.startswith("commit conflict"):
            stop.set()
            writer.join()

    service.progress = progress
    zone.write("T", 2, files[1], SCHEMA)
    writer.start()
    try:
        [status] = service.run()
    finally:
        stop.set()
        writer.join()
    assert status.status == "replicating", status.error
    [conflict] = [line for line in lines if line.startswith("commit conflict")]
    assert f"dbo__t ({ConflictKind.METADATA_CHANGED.value})" in conflict
    assert "attempt 2 of 4" in conflict
    expected = [{k: v for k, v in row.items() if k != M} for row in apply_changes(files, ["id"])]
    assert mirrored_rows(service.settings.warehouse, "dbo", "t") == as_multiset(expected)
    operations = [entry["operation"] for entry in DeltaTable(
        str(service.settings.warehouse / "dbo" / "t")).history()]
    assert operations.count("MERGE") == 1 and ticks
