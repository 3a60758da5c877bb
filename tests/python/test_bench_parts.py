"""Benchmark parts at smoke size: spec, generator, floor, delta-rs contenders, verification,
ratios, the idle run's JSON check, wide tables, CSV files, the RSS launcher."""

from __future__ import annotations

import dataclasses
import json as json_module
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import as_multiset
from deltalake import DeltaTable

from lakemirror.bench import (
    BenchSpec,
    GeneratedTable,
    final_state,
    generate_zone,
    read_changes,
    run_deltars,
    run_deltars_batched,
    run_floor,
    verify,
)
from lakemirror.bench.figures import Figures
from lakemirror.bench.idle_run import json_problem
from lakemirror.bench.memory import csv_metadata, write_large_csv
from lakemirror.bench.runner import BEST_DELTARS, BenchResult, ContenderResult
from lakemirror.bench.rusage import measure
from lakemirror.bench.wide import widen
from lakemirror.contract import DELETE, INSERT, ROW_MARKER, UPDATE, UPSERT
from lakemirror.reference import apply_changes

MARKER_OF = {"insert": INSERT, "update": UPDATE, "delete": DELETE, "upsert": UPSERT}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> GeneratedTable:
    [table] = generate_zone(tmp_path_factory.mktemp("bench"), BenchSpec.smoke())
    return table


def test_smoke_zone_layout(smoke: GeneratedTable) -> None:
    assert smoke.name == "Bench1" and smoke.folder.parent.name == "LandingZone"
    assert (smoke.folder / "_metadata.json").read_text() == '{"keyColumns": ["id"]}'
    assert [path.name for path in smoke.files] == [
        f"{number:020d}.parquet" for number in range(1, 5)]
    assert smoke.change_rows == 5_000 + 3 * 1_000
    schema = pq.read_schema(smoke.files[1])
    assert schema.names[0] == "id" and schema.names[-1] == ROW_MARKER
    assert len(schema) == 11 and schema.field(ROW_MARKER).type == pa.int32()


def test_same_seed_same_bytes_other_seed_other_rows(tmp_path: Path) -> None:
    first, again = (generate_zone(tmp_path / name, BenchSpec.smoke()) for name in "ab")
    other = generate_zone(tmp_path / "c", BenchSpec.smoke(seed=8))
    for one, two in zip(first[0].files, again[0].files):
        assert one.read_bytes() == two.read_bytes()
    assert not pq.read_table(first[0].files[1]).equals(pq.read_table(other[0].files[1]))


def test_tables_differ_and_folders_must_be_new(tmp_path: Path) -> None:
    one, two = generate_zone(tmp_path, BenchSpec(table_rows=100, files=1, changes_per_file=10,
                                                 tables=2))
    assert (one.name, two.name) == ("Bench1", "Bench2")
    assert not pq.read_table(one.files[1]).equals(pq.read_table(two.files[1]))
    with pytest.raises(FileExistsError, match="Bench1 already exists"):
        generate_zone(tmp_path, BenchSpec.smoke())


@pytest.mark.parametrize(("options", "message"), [
    ({"table_rows": 0}, "table_rows must be an integer >= 1, got 0"),
    ({"files": -1}, "files must be an integer >= 0"),
    ({"changes_per_file": 2.5}, "changes_per_file must be an integer >= 1, got 2.5"),
    ({"tables": True}, "tables must be an integer"),
    ({"seed": -3}, "seed must be an integer >= 0"),
    ({"repeat_share": 1.0}, r"repeat_share must be in \[0, 1\), got 1.0"),
    ({"op_mix": {"update": 0.5, "merge": 0.5}}, r"unknown operations \['merge'\]"),
    ({"op_mix": {"update": 0.5, "insert": 0.4}}, "must sum to 1, got 0.9"),
    ({"op_mix": {"update": 1.5, "delete": -0.5}}, "shares must be numbers in"),
    ({"table_rows": 10, "changes_per_file": 100}, "needs up to 80 live keys per file"),
    ({"op_mix": {"delete": 1.0}, "table_rows": 1000, "changes_per_file": 100, "files": 11},
     "deletes can leave only 0"),
])
def test_spec_validation(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BenchSpec(**options)


def test_scale_multiplies_the_table_and_the_changes_and_options_still_win() -> None:
    from lakemirror.bench.command import bench_spec

    scaled = bench_spec(smoke=False, scale=10)
    assert (scaled.table_rows, scaled.files, scaled.changes_per_file) == (
        10_000_000, 10, 1_000_000)
    assert bench_spec(smoke=True, scale=3, table_rows=7_000).table_rows == 7_000
    assert bench_spec(smoke=True, scale=3).changes_per_file == 3 * BenchSpec.smoke(
        ).changes_per_file


def test_spec_mix_is_complete_and_read_only() -> None:
    spec = BenchSpec(op_mix={"insert": 0.5, "upsert": 0.5})
    assert dict(spec.op_mix) == {"insert": 0.5, "update": 0.0, "delete": 0.0, "upsert": 0.5}
    with pytest.raises(TypeError):
        spec.op_mix["insert"] = 1.0  # type: ignore[index]


def _changes(table: GeneratedTable) -> list[pa.Table]:
    return [pq.read_table(path) for path in table.files[1:]]


def test_op_mix_and_repeat_share_respected(smoke: GeneratedTable) -> None:
    spec = BenchSpec.smoke()
    for changes in _changes(smoke):
        markers = Counter(changes[ROW_MARKER].to_pylist())
        for op, share in spec.op_mix.items():
            assert abs(markers[MARKER_OF[op]] / changes.num_rows - share) < 0.02, (op, markers)
        repeats = changes.num_rows - len(pc.unique(changes["id"]))
        assert repeats == round(spec.repeat_share * changes.num_rows)


def test_stream_is_valid_and_exercises_every_case(smoke: GeneratedTable) -> None:
    """Replays the stream: inserts hit dead keys, updates and deletes live ones, and keys are
    deleted and re-inserted in one file and changed several times in one file."""
    live = set(pq.read_table(smoke.files[0])["id"].to_pylist())
    cases: Counter[str] = Counter()
    for changes in _changes(smoke):
        seen: Counter[int] = Counter()
        for key, marker in zip(changes["id"].to_pylist(), changes[ROW_MARKER].to_pylist()):
            assert (key in live) == (marker in (UPDATE, DELETE)) or marker == UPSERT
            cases["reinsert"] += marker == INSERT and seen[key] > 0
            cases["fresh upsert"] += marker == UPSERT and key not in live
            cases["live upsert"] += marker == UPSERT and key in live
            seen[key] += 1
            (live.discard if marker == DELETE else live.add)(key)
        cases["three changes"] += max(seen.values()) >= 3
    assert all(cases[case] for case in ("reinsert", "fresh upsert", "live upsert",
                                        "three changes")), cases


def test_delete_rows_carry_only_the_key(smoke: GeneratedTable) -> None:
    changes = _changes(smoke)[0]
    deletes = changes.filter(pc.equal(changes[ROW_MARKER], DELETE))
    assert deletes.num_rows and deletes["id"].null_count == 0
    assert all(deletes[name].null_count == deletes.num_rows
               for name in deletes.column_names[1:-1])


def test_floor_equals_plain_python_reference(smoke: GeneratedTable, tmp_path: Path) -> None:
    files = [pq.read_table(path).to_pylist() for path in smoke.files]
    expected = apply_changes(files, ["id"])
    floor = pq.read_table(run_floor(smoke.folder, tmp_path / "floor"))
    assert floor.num_rows == len(expected)
    assert as_multiset(floor.to_pylist()) == as_multiset(expected)


def test_deltars_direct_equals_floor(smoke: GeneratedTable, tmp_path: Path) -> None:
    expected = final_state(read_changes(smoke.files))
    table = DeltaTable(run_deltars(smoke.folder, tmp_path / "delta"))
    assert table.version() == len(smoke.files) - 1
    result = verify(expected, table.to_pyarrow_table(), sample=None)
    assert result.ok, result.message
    assert result.compared_rows == expected.num_rows


def test_deltars_batched_applies_all_changes_in_one_merge(smoke: GeneratedTable,
                                                          tmp_path: Path) -> None:
    expected = final_state(read_changes(smoke.files))
    table = DeltaTable(run_deltars_batched(smoke.folder, tmp_path / "delta"))
    assert table.version() == 1
    assert [entry["operation"] for entry in table.history()] == ["MERGE", "WRITE"]
    result = verify(expected, table.to_pyarrow_table(), sample=None)
    assert result.ok, result.message


def test_ratios_are_against_the_faster_verified_deltars() -> None:
    def result(*times: tuple[str, float, bool]) -> BenchResult:
        return BenchResult(BenchSpec.smoke(), 8_000, tuple(
            ContenderResult(name, seconds, verified=ok) for name, seconds, ok in times))

    run = result(("lakemirror", 6.0, True), ("delta-rs", 4.0, True),
                 ("delta-rs-batched", 3.0, True), ("floor", 2.0, True))
    assert run.best_deltars() == "delta-rs-batched"
    assert run.ratio("lakemirror", BEST_DELTARS) == 2.0
    assert run.ratio("lakemirror", "floor") == 3.0
    unverified = result(("lakemirror", 6.0, True), ("delta-rs", 4.0, True),
                        ("delta-rs-batched", 1.0, False))
    assert unverified.best_deltars() == "delta-rs"
    assert unverified.ratio("lakemirror", BEST_DELTARS) == 1.5
    assert result(("lakemirror", 6.0, True)).ratio("lakemirror", BEST_DELTARS) is None


STATUS = {"schema": "dbo", "table": "bench1", "folder": "bench1", "status": "replicating",
          "last_sequence": 4, "rows": 5273, "error": None, "note": None, "error_class": None,
          "warnings": []}


@pytest.mark.parametrize(("change", "message"), [
    ({}, ""),
    ({"status": "degraded"}, "--json says {'status': 'degraded'"),
    ({"rows": None}, "'rows': None"),
    ({"last_sequence": 3}, "'last_sequence': 3"),
    ({"note": ...}, "--json fields"),
    ({"table": "other"}, "--json lists ['dbo.other']"),
])
def test_the_idle_runs_json_must_be_complete(change: dict[str, Any], message: str) -> None:
    entry = {name: value for name, value in {**STATUS, **change}.items() if value is not ...}
    stdout = json_module.dumps({"tables": [entry], "warnings": []})
    problem = json_problem(0, stdout, "", {"dbo.bench1": (4, 5273)})
    assert message in problem if message else problem == ""


def test_a_failed_or_garbled_idle_run_is_reported() -> None:
    assert json_problem(1, "", "error: boom\n", {}) == "exit code 1: error: boom"
    assert json_problem(0, "nothing new", "", {}).startswith("--json is not a status report")


def test_widen_adds_columns_before_the_marker_null_on_deletes(smoke: GeneratedTable) -> None:
    changes = pq.read_table(smoke.files[1])
    wide = widen(changes, 300, np.random.default_rng(1))
    assert wide.num_columns == 301 and wide.column_names[-1] == ROW_MARKER
    assert wide.column_names[:10] == changes.column_names[:10]
    assert {wide.schema.field(name).type for name in wide.column_names[10:-1]} == {
        pa.int64(), pa.float64(), pa.string()}
    deletes = pc.equal(wide[ROW_MARKER], DELETE)
    assert wide.filter(deletes)["c0300"].null_count == pc.sum(deletes).as_py() > 0
    assert wide.filter(pc.invert(deletes))["c0300"].null_count == 0


def test_large_csv_file_is_typed_by_its_metadata(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000001.csv"
    rows = write_large_csv(path, 100_000)
    assert path.stat().st_size >= 100_000 and rows > 0
    columns = {column["Name"]: column["DataType"]
               for column in csv_metadata()["SchemaDefinition"]["Columns"]}  # type: ignore[index]
    assert columns == {"id": "Int64", "quantity": "Int32", "version": "Int64", "price": "Double",
                       "code": "String", "note": "String", "active": "Boolean",
                       "birth_date": "IDate", "updated_at": "DateTime", "balance": "String"}
    assert path.read_text().splitlines()[0].replace('"', "").split(",") == list(columns)


def test_peak_rss_is_the_commands_own_not_the_benchmarks(tmp_path: Path) -> None:
    ballast = bytearray(300 * 1024 * 1024)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # touched, so resident
    usage = measure([sys.executable, "-c", "pass"], tmp_path / "usage.json")
    assert usage.exit_code == 0 and usage.seconds > 0
    assert 0 < usage.peak_rss_mb < 100
    failed = measure([sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "failed.json")
    assert failed.exit_code == 3
    del ballast


def test_figures_smoke_sizes_and_chosen_options() -> None:
    smoke = Figures.chosen(smoke=True, storage_files=None, wide_columns=(30,))
    assert smoke == dataclasses.replace(Figures.smoke(), wide_columns=(30,))
    assert Figures.chosen(smoke=False).storage_files == 100
    assert Figures().memory_gb == Figures().csv_memory_gb == 2.0


@pytest.fixture(scope="module")
def expected(smoke: GeneratedTable) -> pa.Table:
    return final_state(read_changes(smoke.files))


def _set_value(table: pa.Table, row: int, name: str, value: Any) -> pa.Table:
    values = table[name].to_pylist()
    values[row] = value
    index = table.schema.get_field_index(name)
    return table.set_column(index, name, pa.array(values, type=table.schema.field(name).type))


def test_verify_accepts_equal_tables_with_other_types_and_lm_columns(expected: pa.Table) -> None:
    actual = (expected.cast(expected.schema.set(4, pa.field("code", pa.large_string())))
              .append_column("_lm_position", pa.array(range(expected.num_rows)))
              .sort_by([("id", "descending")]))
    result = verify(expected, actual, sample=100, seed=1)
    assert result.ok, result.message
    assert result.compared_rows == 100


def test_verify_samples_changed_keys(expected: pa.Table, smoke: GeneratedTable) -> None:
    changed = pa.concat_arrays([table["id"].combine_chunks() for table in _changes(smoke)])
    wrong = _set_value(expected, 0, "quantity", -1)  # key 1 of the initial load
    assert verify(expected, wrong, sample=200, seed=3, changed_keys=changed).ok
    assert not verify(expected, wrong, sample=None).ok


@pytest.mark.parametrize(("plant", "message"), [
    (lambda table: _set_value(table, 7, "price", -1.0), "column 'price': expected"),
    (lambda table: _set_value(table, 7, "note", "changed"), "column 'note': expected"),
    (lambda table: _set_value(table, 7, "balance", None), "column 'balance': expected"),
    (lambda table: table.slice(1), "got 5273: key .* is missing"),
    (lambda table: pa.concat_tables([table, _set_value(table.slice(0, 1), 0, "id", -5)]),
     "got 5275: key -5 is not expected"),
    (lambda table: pa.concat_tables([table, table.slice(2, 1)]),
     "appears more than once"),
    (lambda table: table.drop_columns(["active"]), r"missing \['active'\]"),
    (lambda table: table.append_column("extra", pa.nulls(table.num_rows)),
     r"unexpected \['extra'\]"),
])
def test_verify_finds_planted_difference(expected: pa.Table, plant: Any, message: str) -> None:
    result = verify(expected, plant(expected), sample=None)
    assert not result.ok
    assert re.search(message, result.message), result.message
