"""`lakemirror bench --merge-growth`: warm runs applying the same changes to tables of several
sizes, with deletion vectors and copy-on-write, each run's phases measured and each table
verified (in full, or by row count and sampled keys when large). Times are never asserted."""

import dataclasses
import json

import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from lakemirror.bench import command, merge_growth
from lakemirror.bench.cli import bench as bench_command
from lakemirror.bench.figures import Figures
from bench_options import given_options
from lakemirror.bench.generator import generate_zone
from lakemirror.bench.merge_growth import MergeGrowth, SizeRuns, TimedRun, verify_mirrored
from lakemirror.bench.reference_state import final_state, read_changes
from lakemirror.bench.spec import BenchSpec

FIGURES_OFF = ("--contenders", "floor", "--no-freshness", "--no-idle", "--no-memory",
               "--no-wide", "--no-storage", "--no-object-warehouse")


@pytest.mark.slow
def test_merge_growth_times_warm_runs_per_size_and_verifies_each_table(tmp_path, monkeypatch):
    monkeypatch.setattr(merge_growth, "FULL_VERIFY_ROWS", 3_000)  # 4,000 rows: sampled
    result = CliRunner().invoke(bench_command, [
        "--smoke", *FIGURES_OFF, "--merge-growth", "2000,4000", "--json", "--dir",
        str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    growth = json.loads(result.output)["merge_growth"]
    assert "error" not in growth, growth
    assert growth["changes_per_file"] == 100
    sizes = growth["sizes"]
    assert [(size["readers"], size["table_rows"]) for size in sizes] == [
        ([], 2_000), ([], 4_000), (["delta-rs-pyarrow"], 2_000), (["delta-rs-pyarrow"], 4_000)]
    for size in sizes:
        assert size["changes_per_file"] == 100 and size["initial_load_seconds"] > 0
        assert ("deletionVectors" in size["table_features"]) == (not size["readers"])
        assert len(size["runs"]) == 2
        for run in size["runs"]:
            assert run["seconds"] > 0 and run["peak_rss_mb"] > 0
            assert run["phases"]["merge"] > 0 and run["phases"]["total"] > 0
        assert size["verified"] is True, size["verification"]
        assert size["verified_in_full"] == (size["table_rows"] <= 3_000)
        assert ("rows counted" in size["verification"]) == (not size["verified_in_full"])
    assert [(ratio["mode"], ratio["rows"]) for ratio in growth["growth"]] == [
        ("deletion vectors", 1.0), ("deletion vectors", 2.0),
        ("copy-on-write (delta-rs-pyarrow)", 1.0), ("copy-on-write (delta-rs-pyarrow)", 2.0)]
    assert all(ratio["merge"] > 0 for ratio in growth["growth"])
    assert all(median["phases"]["merge"] == pytest.approx(median["merge"], abs=1e-4)
               for median in growth["medians"])


def test_the_options_reach_the_figure_and_it_is_off_by_default(tmp_path, monkeypatch):
    given = given_options(monkeypatch, ["--merge-growth", "1000000, 10000000",
                                        "--merge-growth-changes", "500", "--dir", str(tmp_path)])
    assert given["merge_growth_rows"] == (1_000_000, 10_000_000)
    assert given["merge_growth_changes"] == 500
    assert given["merge_growth_copy_on_write"] is True
    CliRunner().invoke(bench_command, ["--merge-growth", "1000", "--no-merge-growth-copy-on-write",
                                       "--dir", str(tmp_path)])
    assert given["merge_growth_copy_on_write"] is False
    assert Figures().merge_growth_rows == () and Figures.smoke().merge_growth_rows == ()
    assert command._merge_growth(None, Figures(), tmp_path, print) is None
    for value, message in (("1000,lots", "not a comma-separated list"),
                           ("0", "at least 1 row"), (",", "at least 1 row")):
        result = CliRunner().invoke(bench_command, ["--merge-growth", value])
        assert result.exit_code == 2 and message in result.output, (value, result.output)


@pytest.fixture(scope="module")
def applied(tmp_path_factory):
    """A generated table's files and its reference final state, with the changes applied."""
    directory = tmp_path_factory.mktemp("zone")
    [table] = generate_zone(directory, BenchSpec(table_rows=3_000, files=2,
                                                 changes_per_file=300))
    return table.files, final_state(read_changes(table.files))


@pytest.mark.parametrize("in_full", [True, False], ids=["in full", "sampled"])
def test_verification_finds_a_wrong_value_and_a_missing_row(tmp_path, applied, in_full):
    from deltalake import write_deltalake

    files, expected = applied
    tables = {"right": expected,
              "wrong value": expected.set_column(1, "quantity", pc.add(expected["quantity"], 1)),
              "missing row": expected.slice(1)}
    checks = {}
    for name, rows in tables.items():
        write_deltalake(str(tmp_path / name), rows)
        checks[name] = verify_mirrored(files, tmp_path / name, in_full=in_full, sample=100)
    assert checks["right"].ok, checks["right"].message
    assert not checks["wrong value"].ok and "'quantity'" in checks["wrong value"].message
    assert not checks["missing row"].ok
    assert f"expected {expected.num_rows} rows" in checks["missing row"].message


def test_growth_is_each_size_over_its_modes_smallest():
    def size(rows, merge, readers=()):
        runs = tuple(TimedRun(seconds, 300.0, {"merge": merge, "total": seconds})
                     for seconds in (rows / 1_000, rows / 1_000 + 2))
        return SizeRuns(rows, 10, readers, (), 1.0, runs, True, "ok", True)

    growth = MergeGrowth(10, (size(1_000, 2.0), size(10_000, 3.0),
                              size(1_000, 2.0, ("r",)), size(10_000, 20.0, ("r",))))
    assert [(ratio["rows"], ratio["merge"]) for ratio in growth.growth()] == [
        (1.0, 1.0), (10.0, 1.5), (1.0, 1.0), (10.0, 10.0)]
    assert growth.growth()[1]["seconds"] == 11 / 2
    text = growth.text()
    assert "deletion vectors, 10,000 rows (10x rows: merge 1.5x, run 5.5x)" in text
    assert "copy-on-write (r), 10,000 rows (10x rows: merge 10.0x" in text
    assert dataclasses.asdict(growth)["sizes"][0]["runs"][0]["phases"]["merge"] == 2.0
    assert text.count("verified in full: ok") == 4
    failed = dataclasses.replace(growth.sizes[0], verified=False, verification="2 rows missing")
    assert "NOT verified in full: 2 rows missing" in MergeGrowth(10, (failed,)).text()


def test_copy_on_write_is_measured_unless_turned_off(tmp_path, monkeypatch):
    measured = []
    monkeypatch.setattr(merge_growth, "measure_merge_growth",
                        lambda directory, spec, rows, changes, modes, progress, **limit:
                        measured.append(modes) or MergeGrowth(changes, ()))
    result = type("Result", (), {"spec": None, "memory_limit_gb": None})()
    for copy_on_write in (True, False):
        command._merge_growth(result, Figures(merge_growth_rows=(1_000,),
                                              merge_growth_copy_on_write=copy_on_write),
                              tmp_path, print)
    assert measured == [((), command.COPY_ON_WRITE), ((),)]
