"""`lakemirror bench --verify-cost`: `lakemirror verify` of tables of several sizes against one
full scan of each, before and after `lakemirror maintain`; a verify that is not ok fails the
figure. Times are never asserted."""

import json

import pyarrow as pa
import pytest
from click.testing import CliRunner

from lakemirror.bench import command, merge_growth
from lakemirror.bench.cli import bench as bench_command
from lakemirror.bench.figures import Figures
from bench_options import given_options
from lakemirror.bench.verify_cost import scan_query, scan_table

FIGURES_OFF = ("--contenders", "floor", "--no-freshness", "--no-idle", "--no-memory",
               "--no-wide", "--no-storage", "--no-object-warehouse", "--no-staging")


def _bench(tmp_path, *options, exit_code=0):
    result = CliRunner().invoke(bench_command, [
        "--smoke", *FIGURES_OFF, *options, "--json", "--dir", str(tmp_path)],
        catch_exceptions=False)
    assert result.exit_code == exit_code, result.output
    return json.loads(result.stdout)["verify_cost"]


@pytest.mark.slow
def test_verify_is_timed_against_a_scan_before_and_after_maintain(tmp_path):
    cost = _bench(tmp_path, "--verify-cost", "2000", "--verify-cost-changes", "50")
    assert "error" not in cost, cost
    [size] = cost["sizes"]
    assert (size["table_rows"], size["changes"]) == (2_000, 50)
    assert size["maintain_seconds"] > 0
    assert [stage["stage"] for stage in size["stages"]] == ["before maintain", "after maintain"]
    for stage in size["stages"]:
        assert stage["verdict"].startswith("dbo.bench1: ok: ")
        assert f"{stage['mirrored_rows']} rows match" in stage["verdict"]
        assert stage["mirrored_rows"] > 2_000 - 50
        for timed in (stage["verify"], stage["scan"], stage["staging_scan"]):
            assert timed["seconds"] > 0 and timed["cpu_seconds"] > 0 and timed["peak_rss_mb"] > 0
        assert stage["ratio"] == pytest.approx(stage["verify"]["seconds"]
                                               / stage["scan"]["seconds"])
        assert stage["cpu_ratio"] == pytest.approx(stage["verify"]["cpu_seconds"]
                                                   / stage["scan"]["cpu_seconds"])
    before, after = size["stages"]
    assert before["staged_rows"] == 2_050  # the initial load and the change file
    assert after["staged_rows"] == after["mirrored_rows"]  # folded by maintain
    assert "proved when compaction folded" in after["verdict"]


@pytest.mark.slow
def test_a_verify_that_is_not_ok_fails_the_figure(tmp_path, monkeypatch):
    from deltalake import DeltaTable

    from lakemirror.delta.rows import query_table

    mirror = merge_growth.mirror_file_by_file

    def mirror_then_delete_a_row(*arguments):
        initial, runs, mirrored = mirror(*arguments)
        first = query_table(mirrored, "select min(id) as id from delta_table")["id"][0]
        DeltaTable(str(mirrored)).delete(f"id = {first}")  # behind lakemirror's back
        return initial, runs, mirrored

    monkeypatch.setattr(merge_growth, "mirror_file_by_file", mirror_then_delete_a_row)
    cost = _bench(tmp_path, "--verify-cost", "2000", "--verify-cost-changes", "50",
                  exit_code=1)
    assert cost["error"].startswith(
        "RuntimeError: verify cost: 2,000 rows, before maintain: verify did not say ok: ")
    assert "1 missing, 0 extra, 0 changed" in cost["error"]


def test_a_scan_reads_every_column(tmp_path):
    from deltalake import DeltaTable, write_deltalake

    from lakemirror.delta.rows import query_table

    rows = pa.table({"id": [1, 2, None], "a name": ["a", "bcd", None],
                     "day": pa.array([0, 1, 2], pa.int32()).cast(pa.date32()),
                     "blob": pa.array([b"x", b"", b"yz"]), "flag": [True, False, None],
                     "tags": [[1], [], None]})
    write_deltalake(str(tmp_path / "t"), rows)
    table = DeltaTable(str(tmp_path / "t"))
    assert query_table(table, scan_query(table)).to_pylist() == [{
        "lm_rows": 3, "lm_read_0": 3.0, "lm_read_1": 4, "lm_read_2": 3.0, "lm_read_3": 3,
        "lm_read_4": 1.0, "lm_read_5": 2}]
    scanned = scan_table(tmp_path / "t")
    assert scanned["rows"] == 3 and scanned["seconds"] > 0


def test_the_options_reach_the_figure_and_it_is_off_by_default(tmp_path, monkeypatch):
    given = given_options(monkeypatch, ["--verify-cost", "1000000, 10000000",
                                        "--verify-cost-changes", "500", "--dir", str(tmp_path)])
    assert given["verify_cost_rows"] == (1_000_000, 10_000_000)
    assert given["verify_cost_changes"] == 500
    assert Figures().verify_cost_rows == () and Figures.smoke().verify_cost_rows == ()
    assert Figures().verify_cost_changes == 100_000 and Figures.smoke().verify_cost_changes == 100
    assert command._verify_cost(None, Figures(), tmp_path, print) is None
    for value, message in (("1000,lots", "not a comma-separated list"), ("0", "at least 1 row")):
        result = CliRunner().invoke(bench_command, ["--verify-cost", value])
        assert result.exit_code == 2 and message in result.output, (value, result.output)


def test_the_text_gives_each_stage_its_figures():
    from lakemirror.bench.verify_cost import SizeCost, StageCost, Timed, VerifyCost

    def stage(name, verify_seconds):
        return StageCost(name, 1_000_000, 1_100_000, Timed(verify_seconds, 3.0, 640.0),
                         Timed(0.5, 0.75, 200.0), Timed(0.25, 0.25, 170.0), "dbo.bench1: ok: ...")

    cost = VerifyCost((SizeCost(1_000_000, 100_000, 8.5,
                                (stage("before maintain", 2.0), stage("after maintain", 1.0))),))
    text = cost.text()
    assert "1,000,000 rows and 100,000 changes (maintain 8.50 s):" in text
    assert ("before maintain: verify 2.00 s (CPU 3.00 s, peak RSS 640 MB) = 4.00x (CPU 4.00x) a "
            "scan of the mirror's 1,000,000 rows 0.50 s (CPU 0.75 s, peak RSS 200 MB); "
            "staging's 1,100,000 rows 0.25 s") in text
    assert "after maintain: verify 1.00 s" in text and "= 2.00x" in text
    assert [(stage["ratio"], stage["cpu_ratio"]) for stage in cost.as_dict()["sizes"][0]["stages"]
            ] == [(4.0, 4.0), (2.0, 4.0)]
