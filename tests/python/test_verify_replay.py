"""`lakemirror verify`'s replay (proof/replay.py) against the plain-Python reference model:
randomized change streams written as staging tables, replayed in delta-rs's SQL engine,
give the reference's rows (`replayed_rows`) and every SCD2 version (`replayed_versions`) at
every position of the stream."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakemirror.delta.rows import query_tables
from lakemirror.landing import POSITION, ROWS_PER_FILE
from lakemirror.proof.replay import STAGED, ChangeLog, replayed_rows, replayed_versions
from lakemirror.reference import ROW_MARKER, apply_changes

from conftest import as_multiset

M = ROW_MARKER
INS, UPD, DEL, UPS = 0, 1, 2, 4
SCHEMA = pa.schema([(POSITION, pa.int64()), ("a", pa.string()), ("b", pa.int64()),
                    ("c", pa.int64()), ("v", pa.string()), (M, pa.int32())])
VERSION_COLUMNS = ("_lm_valid_from", "_lm_valid_to", "_lm_is_current", "_lm_is_deleted")

# Few keys (NULL among them), few C values (NULL and ties): keys re-inserted, inserted twice,
# changes skipped and taking effect at equal C.
change = st.fixed_dictionaries({
    "a": st.sampled_from(["x", "y", None]), "b": st.sampled_from([1, 2, None]),
    "c": st.one_of(st.none(), st.integers(0, 3)), "v": st.sampled_from(["p", "q", None]),
    M: st.sampled_from([INS, UPD, DEL, UPS])})
streams = st.lists(st.lists(change, min_size=1, max_size=6), min_size=1, max_size=5)
LOGS = {
    "composite key": ChangeLog(("a", "b", "c", "v"), ("a", "b")),
    "one key with C": ChangeLog(("a", "b", "c", "v"), ("b",), "c"),
    "composite key with C": ChangeLog(("a", "b", "c", "v"), ("a", "b"), "c"),
}


def positioned(files: Sequence[Sequence[Mapping[str, Any]]]) -> list[list[dict[str, Any]]]:
    """The files' rows with the position each gets when staged (file n's row i: n·10^10+i)."""
    return [[{**row, POSITION: sequence * ROWS_PER_FILE + index}
             for index, row in enumerate(rows)] for sequence, rows in enumerate(files, 1)]


def staged(tmp_path: Any, files: Sequence[Sequence[Mapping[str, Any]]]) -> Any:
    """A staging-like Delta table of the files' changes, in two commits."""
    path = tmp_path / "staged"
    rows = [row for file in positioned(files) for row in file]
    for part in (rows[:len(rows) // 2], rows[len(rows) // 2:]):
        write_deltalake(str(path), pa.Table.from_pylist(part, schema=SCHEMA), mode="append")
    return path


def replayed(path: Any, query: str) -> list[dict[str, Any]]:
    return query_tables({STAGED: path}, query).to_pylist()


def reference_rows(files: Sequence[Sequence[Mapping[str, Any]]], log: ChangeLog
                   ) -> list[dict[str, Any]]:
    """The reference's rows, each with the position of the change that wrote it."""
    rows = apply_changes(positioned(files), log.keys, conditional_column=log.conditional_column)
    return [{name: row.get(name) for name in (POSITION, *log.data_columns)} for row in rows]


def reference_versions(files: Sequence[Sequence[Mapping[str, Any]]], log: ChangeLog
                       ) -> list[dict[str, Any]]:
    """Every version (docs/pages/history.md): an insert, update or upsert that takes effect
    opens one; the key's next update, upsert or delete that takes effect ends every open
    version of the key (a delete marks them deleted); an insert ends nothing; a change that
    ConditionalUpdateColumn skips does nothing (its C still raises the key's mark)."""
    versions: list[dict[str, Any]] = []
    open_versions: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    high_water: dict[tuple[Any, ...], Any] = {}
    for change in (row for file in positioned(files) for row in file):
        key, marker = tuple(change[name] for name in log.keys), change[M]
        if log.conditional_column is not None:
            order, earlier = change[log.conditional_column], high_water.get(key)
            if order is not None and (earlier is None or order > earlier):
                high_water[key] = order
            if marker != INS and earlier is not None and (order is None or order < earlier):
                continue
        if marker != INS:
            for version in open_versions.pop(key, []):
                version.update(_lm_valid_to=change[POSITION], _lm_is_current=False,
                               _lm_is_deleted=marker == DEL)
        if marker != DEL:
            version = {**{name: change[name] for name in log.data_columns},
                       "_lm_valid_from": change[POSITION], "_lm_valid_to": None,
                       "_lm_is_current": True, "_lm_is_deleted": False}
            versions.append(version)
            open_versions.setdefault(key, []).append(version)
    return versions


def test_the_history_oracle_matches_the_documented_example():
    """The oracle above gives test_history.py's hand-written versions (so it can be trusted
    with random streams)."""
    from test_history import FILES, VERSIONS

    rows = [[{"a": None, "b": row["id"], "c": row["c"], "v": row["v"], M: row[M]}
             for row in file] for file in FILES]
    versions = reference_versions(rows, LOGS["one key with C"])
    assert {(v["b"], v["c"], v["v"], v["_lm_valid_from"], v["_lm_valid_to"],
             v["_lm_is_deleted"]) for v in versions} == set(VERSIONS)
    assert len(versions) == len(VERSIONS)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=streams, which=st.sampled_from(sorted(LOGS)), cut=st.integers(0, 40))
def test_a_replay_gives_the_reference_rows_and_versions_at_any_position(
        tmp_path_factory, files, which, cut):
    log = LOGS[which]
    path = staged(tmp_path_factory.mktemp("replay"), files)
    positions = [row[POSITION] for file in positioned(files) for row in file]
    through = positions[min(cut, len(positions) - 1)]
    prefix = [[row for row in file if row[POSITION] <= through]
              for file in positioned(files)]
    prefix = [[{k: v for k, v in row.items() if k != POSITION} for row in file]
              for file in prefix if file]
    for upto, expected_files in ((through, prefix), (positions[-1], files)):
        assert as_multiset(replayed(path, replayed_rows(log, upto))) == as_multiset(
            reference_rows(expected_files, log)), upto
        assert as_multiset(replayed(path, replayed_versions(log, upto))) == as_multiset(
            reference_versions(expected_files, log)), upto


def test_a_keyless_table_replays_every_insert_and_each_is_a_version_that_never_ends(tmp_path):
    files = [[{"a": "x", "b": 1, "c": None, "v": "p", M: INS}] * 2,
             [{"a": None, "b": None, "c": None, "v": None, M: INS}]]
    path = staged(tmp_path, files)
    log = ChangeLog(("a", "b", "c", "v"), ())
    reference = apply_changes(positioned(files), [])
    assert as_multiset(replayed(path, replayed_rows(log, 2 * ROWS_PER_FILE))) == as_multiset(
        reference)
    assert as_multiset(replayed(path, replayed_versions(log, 2 * ROWS_PER_FILE))) == as_multiset(
        reference_versions(files, log))
    assert replayed(path, replayed_rows(log, ROWS_PER_FILE)) == [
        {POSITION: ROWS_PER_FILE, "a": "x", "b": 1, "c": None, "v": "p"}]
