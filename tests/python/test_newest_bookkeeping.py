"""A staging table's bookkeeping is read from its newest commit file alone when that commit is
lakemirror's, as delta-rs's history gives it; otherwise (another writer's commit, no log) the
table is opened and its history searched."""

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake

from lakemirror.delta.bookkeeping import bookkeeping_commit, newest_bookkeeping

ROWS = pa.table({"id": [1, 2]})


def test_the_newest_commit_file_gives_what_the_history_gives(tmp_path):
    for sequence in ("1", "2"):
        write_deltalake(tmp_path, ROWS, mode="append", commit_properties=CommitProperties(
            custom_metadata={"lakemirror.sequence": sequence}))
    newest = newest_bookkeeping(tmp_path)
    assert newest is not None and newest["lakemirror.sequence"] == "2"
    assert newest == bookkeeping_commit(DeltaTable(tmp_path))


def test_another_writers_newest_commit_or_no_log_is_not_read_alone(tmp_path):
    write_deltalake(tmp_path, ROWS, commit_properties=CommitProperties(
        custom_metadata={"lakemirror.sequence": "1"}))
    write_deltalake(tmp_path, ROWS, mode="append")  # as OPTIMIZE or VACUUM commit
    assert newest_bookkeeping(tmp_path) is None
    assert bookkeeping_commit(DeltaTable(tmp_path))["lakemirror.sequence"] == "1"
    assert newest_bookkeeping(tmp_path / "missing") is None
