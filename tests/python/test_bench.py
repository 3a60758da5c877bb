"""`lakemirror bench` at smoke size: every contender reaches the verified final table, and the
freshness, memory and plot measurements produce their figures. Times are never asserted."""

import json

import pytest
from click.testing import CliRunner

from lakemirror.cli.main import cli
from lakemirror.engine import spark_unavailable


def bench(*args):
    return CliRunner().invoke(cli, ["bench", "--smoke", *args], catch_exceptions=False)


@pytest.mark.slow
def test_smoke_benchmark_verifies_every_contender_and_measures(tmp_path):
    result = bench("--json", "--memory-gb", "0.02", "--dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    contenders = {contender["name"]: contender for contender in report["contenders"]}
    assert list(contenders) == ["lakemirror", "delta-rs", "floor", "spark"]
    for name in ("lakemirror", "delta-rs", "floor"):
        assert contenders[name]["verified"] is True, contenders[name]["message"]
        assert contenders[name]["seconds"] > 0 and contenders[name]["peak_rss_mb"] > 0
        assert contenders[name]["rows_per_second"] == pytest.approx(
            report["change_rows"] / contenders[name]["seconds"])
    if spark_unavailable() is None:  # Delta's jars are here: Spark runs and is verified
        assert contenders["spark"]["verified"] is True, contenders["spark"]["message"]
    else:
        assert contenders["spark"]["verified"] is None
        assert contenders["spark"]["message"].startswith("skipped: ")
    assert report["change_rows"] == 5_000 + 3 * 1_000
    assert report["ratios"]["lakemirror/delta-rs"] == pytest.approx(
        contenders["lakemirror"]["seconds"] / contenders["delta-rs"]["seconds"])
    assert len(report["freshness"]["seconds"]) == 3
    assert report["freshness"]["changes_per_file"] == 1_000
    memory = report["memory"]
    assert memory["rows"] > 0 and memory["peak_rss_mb"] > memory["idle_rss_mb"] > 0


@pytest.mark.slow
def test_plot_draws_a_png_from_a_sweep(tmp_path):
    plot = tmp_path / "bench.png"
    result = bench("--contenders", "floor", "--no-freshness", "--plot", str(plot), "--json",
                   "--dir", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    sweeps = json.loads(result.output)["plot"]
    assert [size for size, _ in sweeps["table rows"]["floor"]] == [2500, 5000, 7500]
    assert [size for size, _ in sweeps["changes per file"]["floor"]] == [250, 500, 1000]
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_bad_options_are_usage_errors(tmp_path):
    for args, message in ((["--contenders", "duckdb"], "unknown contender(s) duckdb"),
                          (["--op-mix", "update=lots"], "--op-mix part 'update=lots'"),
                          (["--op-mix", "update=0.5,delete=0.1"], "op_mix"),
                          (["--rows", "10"], "live keys")):
        result = CliRunner().invoke(cli, ["bench", "--smoke", *args, "--dir", str(tmp_path)])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
