"""`lakemirror bench --downstream`: a model on `lakemirror.mirror_changes` (apply_changes)
against the same SQL rebuilt as a table, round by round at each table size given, each
model's dbt execution time taken and the two compared after every round; a difference fails
the bench. Times are never asserted."""

import json

import pytest
from click.testing import CliRunner

from lakemirror.bench import command, downstream
from lakemirror.bench.cli import bench as bench_command
from lakemirror.bench.downstream import DownstreamCost, Round, SizeBuilds, model_seconds
from lakemirror.bench.failures import bench_failures
from lakemirror.bench.figures import Figures
from lakemirror.bench.spec import BenchSpec
from bench_options import given_options

FIGURES_OFF = ("--contenders", "floor", "--no-freshness", "--no-idle", "--no-memory",
               "--no-wide", "--no-storage", "--no-object-warehouse", "--no-staging")


@pytest.mark.slow
def test_each_round_times_both_models_and_finds_them_equal(tmp_path):
    result = CliRunner().invoke(bench_command, [
        "--smoke", *FIGURES_OFF, "--downstream", "1000", "--downstream-changes", "60",
        "--json", "--dir", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["failures"] == []
    figure = document["downstream"]
    assert "error" not in figure, figure
    assert figure["changes_per_file"] == 60
    assert [size["table_rows"] for size in figure["sizes"]] == [1_000]
    for size in figure["sizes"]:
        assert size["changes_per_file"] == 60 and size["initial_load_seconds"] > 0
        assert len(size["rounds"]) == downstream.ROUNDS
        assert size["every_round_verified"] is True
        for built in size["rounds"]:
            assert built["verified"] is True, built["message"]
            assert built["message"] == f"{built['model_rows']} rows match " \
                                       f"({built['model_rows']} compared)"
            # the filter keeps about nine rows in ten of the table
            assert 0.8 * size["table_rows"] < built["model_rows"] < size["table_rows"] + 300
            for field in ("incremental_seconds", "rebuild_seconds", "mirror_seconds",
                          "run_seconds"):
                assert built[field] > 0
            assert built["ratio"] == pytest.approx(built["rebuild_seconds"]
                                                   / built["incremental_seconds"])
        for spread in ("incremental", "rebuild", "mirror", "run", "ratio"):
            values = size[spread]
            assert values["min"] <= values["median"] <= values["max"]
        assert size["ratio"]["median"] == pytest.approx(sorted(
            built["ratio"] for built in size["rounds"])[len(size["rounds"]) // 2])


@pytest.mark.slow
def test_an_incremental_model_that_differs_from_its_rebuild_fails_the_bench(tmp_path,
                                                                            monkeypatch):
    broken = dict(downstream.MODELS)
    broken[downstream.INCREMENTAL] = broken[downstream.INCREMENTAL].replace(
        "quantity % 10 <> 0", "quantity % 10 <> 1")
    monkeypatch.setattr(downstream, "MODELS", broken)
    spec = BenchSpec(tables=1, table_rows=500, files=2, changes_per_file=20)
    size = downstream.measure_size(tmp_path / "size", spec, None)
    assert len(size.rounds) == 2 and not any(built.verified for built in size.rounds)
    assert "key " in size.rounds[0].message
    document = {"contenders": [], "downstream": DownstreamCost(20, (size,)).as_dict()}
    failures = bench_failures(document)
    assert len(failures) == 2
    assert failures[0] == f"downstream: {size.rounds[0].message}"
    assert "NOT verified" in DownstreamCost(20, (size,)).text()


def test_a_model_that_did_not_build_is_an_error(tmp_path):
    def results(status):
        return {"results": [
            {"unique_id": f"model.lakemirror.{name}", "status": status if name == "downstream_"
             "rebuild" else "success", "execution_time": 1.5, "message": "boom"}
            for name in ("dbo__bench1", "downstream_incremental", "downstream_rebuild")]
            + [{"unique_id": "test.lakemirror.mirror_rows", "status": "pass",
                "execution_time": 0.1}]}

    path = tmp_path / "run_results.json"
    path.write_text(json.dumps(results("success")))
    assert model_seconds(path) == {"dbo__bench1": 1.5, "downstream_incremental": 1.5,
                                   "downstream_rebuild": 1.5}
    path.write_text(json.dumps(results("error")))
    with pytest.raises(RuntimeError, match="model downstream_rebuild: error: boom"):
        model_seconds(path)


def test_the_text_gives_each_size_its_medians_and_ranges():
    rounds = tuple(Round(incremental, rebuild, 1.0, 9.0, 900, True, "900 rows match")
                   for incremental, rebuild in ((1.0, 4.0), (2.0, 4.0), (1.0, 6.0)))
    text = DownstreamCost(1_000, (SizeBuilds(1_000_000, 1_000, 30.0, rounds),)).text()
    assert ("1,000,000 rows: incremental 1.00 s (1.00-2.00), rebuild 4.00 s (4.00-6.00), "
            "rebuild/incremental 4.00x (2.00-6.00)") in text
    assert "incremental = rebuild every round" in text


def test_the_options_reach_the_figure_and_it_is_off_by_default(tmp_path, monkeypatch):
    given = given_options(monkeypatch, ["--downstream", "1000000, 10000000",
                                        "--downstream-changes", "500", "--dir", str(tmp_path)])
    assert given["downstream_rows"] == (1_000_000, 10_000_000)
    assert given["downstream_changes"] == 500
    assert Figures().downstream_rows == () and Figures.smoke().downstream_rows == ()
    assert Figures().downstream_changes == 1_000 and Figures.smoke().downstream_changes == 100
    assert command._downstream(None, Figures(), tmp_path, print) is None
    for value, message in (("1000,lots", "not a comma-separated list"), ("0", "at least 1 row")):
        result = CliRunner().invoke(bench_command, ["--downstream", value])
        assert result.exit_code == 2 and message in result.output, (value, result.output)
