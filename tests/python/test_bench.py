"""`lakemirror bench` at smoke size: every contender reaches the verified final table, and each
figure (idle run, staging against pyarrow, freshness, memory for Parquet and CSV, wide tables,
storage after many files, freshness and storage also copy-on-write, the warehouse on moto's S3
against disk, the plot) is measured and reported, with the phases of lakemirror's runs. Times
are never asserted."""

import json

import pytest
from click.testing import CliRunner

from lakemirror.bench.cli import bench as bench_command
from lakemirror.bench.phases import PHASES
from lakemirror.cli.main import cli
from lakemirror.engine import spark_unavailable

DELTARS = ("delta-rs", "delta-rs-batched")
MEASURED = ("lakemirror", "lakemirror-warm", *DELTARS, "floor")


FIGURES_OFF = ("--no-freshness", "--no-idle", "--no-staging", "--no-memory", "--no-wide",
               "--no-storage", "--no-object-warehouse")


def bench(*args):
    return CliRunner().invoke(bench_command, ["--smoke", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One smoke run of the whole benchmark, every figure on."""
    result = bench("--json", "--dir", str(tmp_path_factory.mktemp("bench")))
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["failures"] == []
    return report


def figure(report, name):
    """A measured figure of the report (a failed one carries its error instead)."""
    assert "error" not in report[name], report[name]["error"]
    return report[name]


def positive(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


@pytest.mark.slow
def test_every_contender_is_verified_and_compared_with_the_best_deltars(report):
    contenders = {contender["name"]: contender for contender in report["contenders"]}
    assert list(contenders) == [*MEASURED[:2], *DELTARS, "floor", "spark"]
    for name in MEASURED:
        assert contenders[name]["verified"] is True, contenders[name]["message"]
        assert positive(contenders[name]["seconds"]) and positive(contenders[name]["peak_rss_mb"])
        assert contenders[name]["rows_per_second"] == pytest.approx(
            8_000 / contenders[name]["seconds"])
    if spark_unavailable() is None:  # Delta's jars are here: Spark runs and is verified
        assert contenders["spark"]["verified"] is True, contenders["spark"]["message"]
    else:
        assert contenders["spark"]["verified"] is None
        assert contenders["spark"]["message"].startswith("skipped: ")
    assert report["change_rows"] == 5_000 + 3 * 1_000
    assert report["best_deltars"] in DELTARS  # which one, and the ratios: on a hand-made result
    assert list(report["ratios"]) == ["lakemirror/best delta-rs", "lakemirror/floor",
                                      "lakemirror-warm/best delta-rs", "lakemirror-warm/floor"]
    assert all(positive(ratio) for ratio in report["ratios"].values()), report["ratios"]


@pytest.mark.slow
def test_lakemirrors_runs_say_where_their_time_went(report):
    contenders = {contender["name"]: contender for contender in report["contenders"]}
    for name in MEASURED[:2]:
        phases = contenders[name]["phases"]
        assert list(phases) == list(PHASES)
        for phase in ("imports", "staging", "dbt_parse", "engine_session", "merge",
                      "bookkeeping", "total"):
            assert positive(phases[phase]), (name, phase)
        parts = sum(seconds for phase, seconds in phases.items()
                    if phase not in ("imports", "total"))
        assert parts == pytest.approx(phases["total"], rel=0.1)  # nothing large unaccounted
        assert phases["imports"] + phases["total"] <= contenders[name]["seconds"]
    assert all(contenders[name]["phases"] is None for name in (*DELTARS, "floor"))


@pytest.mark.slow
def test_staging_is_compared_with_pyarrow_reading_and_writing_the_same_files(report):
    staging = figure(report, "staging")
    assert staging["contender"] == "lakemirror" and staging["target"] == 1.5
    assert staging["rows"] == staging["floor_rows"] == report["change_rows"]
    lakemirror = next(contender for contender in report["contenders"]
                      if contender["name"] == "lakemirror")
    assert staging["staging_seconds"] == lakemirror["phases"]["staging"]
    assert all(positive(staging[field]) for field in (
        "staging_rows_per_second", "floor_seconds", "floor_rows_per_second", "ratio"))
    assert staging["ratio"] == pytest.approx(
        staging["floor_rows_per_second"] / staging["staging_rows_per_second"])


@pytest.mark.slow
def test_idle_run_is_timed_in_a_cold_process_with_a_complete_json(report):
    idle = figure(report, "idle_run")
    assert idle["contender"] == "lakemirror-warm"
    assert len(idle["seconds"]) == 1 and positive(idle["median"])
    assert idle["complete"] is True, idle["message"]


@pytest.mark.slow
def test_freshness_and_memory_for_parquet_and_csv(report):
    assert len(figure(report, "freshness")["seconds"]) == 3
    assert figure(report, "freshness")["changes_per_file"] == 1_000
    assert all(positive(seconds) for seconds in figure(report, "freshness")["seconds"])
    assert "deletionVectors" in figure(report, "freshness")["table_features"]  # the default
    copy_on_write = figure(report, "freshness_copy_on_write")
    assert len(copy_on_write["seconds"]) == 3
    assert all(positive(seconds) for seconds in copy_on_write["seconds"])
    assert copy_on_write["readers"] == ["delta-rs-pyarrow"]
    assert "deletionVectors" not in copy_on_write["table_features"]
    for name, file_format in (("memory", "parquet"), ("memory_csv", "csv")):
        memory = figure(report, name)
        assert memory["file_format"] == file_format
        assert memory["rows"] > 0 and positive(memory["file_gb"])
        assert memory["peak_rss_mb"] > memory["idle_rss_mb"] > 0
        assert positive(memory["above_idle_mb"])


@pytest.mark.slow
def test_wide_tables_are_timed_verified_and_compared(report):
    wide = figure(report, "wide_tables")
    assert (wide["rows"], wide["changes"]) == (1_000, 100)
    tables = {table["columns"]: table for table in wide["tables"]}
    assert list(tables) == [10, 40]
    for table in tables.values():
        assert table["status"] == "replicating" and table["verified"], table["message"]
        assert positive(table["seconds"])
    assert list(wide["ratios"]) == ["40/10"] and positive(wide["ratios"]["40/10"])


@pytest.mark.slow
@pytest.mark.parametrize("name, readers", [("storage", []),
                                           ("storage_copy_on_write", ["delta-rs-pyarrow"])])
def test_storage_after_many_files_and_the_rebuild_equals_the_reference(report, name, readers):
    storage = figure(report, name)
    assert storage["readers"] == readers
    assert ("deletionVectors" in storage["table_features"]) == (not readers)
    assert storage["files"] == 3 and storage["live_rows"] > 0 and positive(storage["live_bytes"])
    assert storage["rebuild_verified"] is True, storage["rebuild_message"]
    assert storage["rebuild_message"].startswith(f"{storage['live_rows']} rows match "
                                                 f"({storage['live_rows']} compared)")
    maintained = storage["maintenance"]
    assert maintained["staged_rows_folded"] > maintained["snapshot_rows"] > 0
    assert maintained["skipped"] == []
    assert storage["staging"]["rows"] < storage["staging_before"]["rows"]
    # vacuumed as once the retention window elapsed: staging keeps no file its version lacks
    assert storage["staging"]["on_disk"] == storage["staging"]["current"]
    for table in ("staging", "mirrored"):
        assert storage[table]["on_disk"] >= storage[table]["current"] > 0
        assert storage[table]["rows"] >= storage["live_rows"]
    assert list(storage["ratios"]) == ["staging on disk/live", "staging current/live",
                                       "mirrored on disk/live", "mirrored current/live"]
    assert all(positive(ratio) for ratio in storage["ratios"].values()), storage["ratios"]


def test_the_report_compares_with_the_faster_verified_deltars_and_the_floor():
    """A hand-made run: the faster verified delta-rs contender is the best; one that failed
    verification is never compared."""
    from lakemirror.bench.report import bench_document
    from lakemirror.bench.runner import BenchResult, ContenderResult
    from lakemirror.bench.spec import BenchSpec

    contenders = (ContenderResult("lakemirror", 4.0, verified=True),
                  ContenderResult("lakemirror-warm", 2.0, verified=True),
                  ContenderResult("delta-rs", 3.2, verified=True),
                  ContenderResult("delta-rs-batched", 1.6, verified=True),
                  ContenderResult("floor", 0.8, verified=True),
                  ContenderResult("spark", message="skipped: no jars"))
    report = bench_document(BenchResult(BenchSpec.smoke(), 8_000, contenders), {})
    assert report["best_deltars"] == "delta-rs-batched"
    assert report["ratios"] == {"lakemirror/best delta-rs": pytest.approx(2.5),
                                "lakemirror/floor": pytest.approx(5.0),
                                "lakemirror-warm/best delta-rs": pytest.approx(1.25),
                                "lakemirror-warm/floor": pytest.approx(2.5)}
    unverified = BenchResult(BenchSpec.smoke(), 8_000, (
        *contenders[:3], ContenderResult("delta-rs-batched", 1.6, verified=False),
        ContenderResult("floor", 0.8, verified=False)))
    report = bench_document(unverified, {})
    assert report["best_deltars"] == "delta-rs"
    assert report["ratios"] == {"lakemirror/best delta-rs": pytest.approx(1.25),
                                "lakemirror/floor": None,
                                "lakemirror-warm/best delta-rs": pytest.approx(0.625),
                                "lakemirror-warm/floor": None}


def test_the_figures_ratios_on_hand_made_measurements():
    from lakemirror.bench.memory import IngestMemory
    from lakemirror.bench.object_warehouse import ObjectWarehouse
    from lakemirror.bench.staging_figure import StagingFigure
    from lakemirror.bench.storage import Storage, TableBytes
    from lakemirror.bench.wide import WideTable, WideTables, as_dict

    assert StagingFigure("lakemirror", 1_000, staging_seconds=3.0, floor_seconds=2.0,
                         floor_rows=1_000).ratio == 1.5
    assert IngestMemory(1.0, 10, idle_rss_mb=150.0, peak_rss_mb=400.0).above_idle_mb == 250.0
    assert ObjectWarehouse(1, 3, disk_seconds=1.5, s3_seconds=6.0, requests={}, verified=True,
                           message="").ratio == 4.0
    wide = WideTables(1_000, 100, (WideTable(10, 2.0, "replicating", True, ""),
                                   WideTable(40, 5.0, "replicating", True, ""),
                                   WideTable(100, 9.0, "failed", False, "")))
    assert as_dict(wide)["ratios"] == {"40/10": 2.5, "100/10": None}
    storage = Storage(files=3, table_rows=10, changes_per_file=5, live_bytes=1_000, live_rows=10,
                      staging_before=TableBytes(9_000, 8_000, 40),
                      staging=TableBytes(3_000, 2_500, 12),
                      mirrored_before=TableBytes(6_000, 1_500, 10),
                      mirrored=TableBytes(4_000, 1_200, 10), maintenance={},
                      rebuild_verified=True, rebuild_message="")
    assert storage.ratios() == {"staging on disk/live": 3.0, "staging current/live": 2.5,
                                "mirrored on disk/live": 4.0, "mirrored current/live": 1.2}


def test_each_figure_can_be_turned_off(tmp_path):
    result = bench("--contenders", "floor", *FIGURES_OFF, "--json", "--dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert [contender["name"] for contender in report["contenders"]] == ["floor"]
    assert report["best_deltars"] is None and report["ratios"]["lakemirror/floor"] is None
    assert not {"idle_run", "staging", "freshness", "freshness_copy_on_write", "memory", "memory_csv",
                "wide_tables", "storage", "storage_copy_on_write", "object_warehouse"
                } & set(report)


def test_the_warehouse_on_s3_is_timed_against_disk_with_its_requests(report):
    measured = figure(report, "object_warehouse")
    assert positive(measured["disk_seconds"]) and positive(measured["s3_seconds"])
    assert positive(measured["ratio"])
    assert positive(measured["requests"]["PUT"]) and positive(measured["requests"]["GET"])
    assert measured["verified"], measured["message"]


def test_without_moto_the_s3_figure_says_it_is_not_measured(tmp_path, monkeypatch):
    from lakemirror.bench import object_warehouse

    monkeypatch.setattr(object_warehouse, "moto_program", lambda: None)
    on = [flag for flag in FIGURES_OFF if flag != "--no-object-warehouse"]
    result = bench("--contenders", "floor", *on, "--dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "warehouse on S3: not measured: moto_server is not installed" in result.output
    report = json.loads(bench("--contenders", "floor", *on, "--json", "--dir",
                              str(tmp_path)).output)
    assert report["object_warehouse"] == {"missing": object_warehouse.MISSING}


def test_a_failed_figure_is_reported_and_the_others_still_run(tmp_path, monkeypatch):
    from lakemirror.bench import command

    def broken(*args):
        raise OSError("disk full")
    monkeypatch.setattr(command, "FIGURES", (("storage", broken),
                                             ("memory", lambda *args: ({"peak": 1}, "peak 1"))))
    result = bench("--contenders", "floor", "--json", "--dir", str(tmp_path))
    assert result.exit_code == 1, result.output  # and the failure is printed, on stderr
    report = json.loads(result.stdout)
    assert report["storage"] == {"error": "OSError: disk full"}
    assert report["memory"] == {"peak": 1}
    assert report["failures"] == ["storage: OSError: disk full"]
    assert result.stderr.splitlines() == ["bench: 1 failed:", "  storage: OSError: disk full"]


@pytest.mark.slow
def test_plot_draws_a_png_from_a_sweep(tmp_path):
    plot = tmp_path / "bench.png"
    result = bench("--contenders", "floor", *FIGURES_OFF, "--plot", str(plot), "--json",
                   "--dir", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    sweeps = json.loads(result.output)["plot"]
    assert [size for size, _ in sweeps["table rows"]["floor"]] == [2500, 5000, 7500]
    assert [size for size, _ in sweeps["changes per file"]["floor"]] == [250, 500, 1000]
    assert plot.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("command", [cli, bench_command], ids=["lakemirror", "module"])
def test_bad_options_are_usage_errors(tmp_path, command):
    prefix = ["bench"] if command is cli else []
    for args, message in ((["--contenders", "duckdb"], "unknown contender(s) duckdb"),
                          (["--op-mix", "update=lots"], "--op-mix part 'update=lots'"),
                          (["--op-mix", "update=0.5,delete=0.1"], "op_mix"),
                          (["--rows", "10"], "live keys")):
        result = CliRunner().invoke(command, [*prefix, "--smoke", *args, "--dir", str(tmp_path)])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
    result = CliRunner().invoke(bench_command, ["--wide-columns", "300,5"])
    assert result.exit_code == 2 and "at least 11" in result.output, result.output


def test_a_landing_zone_url_is_listed_read_and_run_idle(tmp_path, monkeypatch, s3_server):
    import obstore

    from lakemirror.environment import STORAGE_OPTIONS as OPTIONS_VARIABLE

    monkeypatch.setenv(OPTIONS_VARIABLE, json.dumps(dict(s3_server.options)))
    prefix = s3_server.fresh_prefix("bench")
    # The other figures off: the report fixture measures them.
    result = bench("--contenders", "floor", "--no-freshness", "--no-staging", "--no-memory",
                   "--no-wide", "--no-storage", "--no-object-warehouse", "--idle-runs", "1",
                   "--landing-zone", s3_server.url(prefix), "--json", "--dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    zone = figure(json.loads(result.output), "landing_zone")
    published = [path for path in (tmp_path / "contenders/zone/LandingZone").rglob("*")
                 if path.is_file()]
    changes = [path for path in published if not path.name.startswith("_")]
    assert zone["url"].startswith(s3_server.url(prefix) + "/bench-")
    assert (zone["tables"], zone["objects"], zone["files_read"]) == (1, len(published),
                                                                     len(changes))
    assert zone["read_mb"] == pytest.approx(sum(path.stat().st_size for path in changes) / 1e6)
    assert zone["complete"], zone["message"]
    assert all(positive(zone[name]) for name in (
        "listing_seconds", "listing_objects_per_second", "read_mb_per_second", "mirror_seconds"))
    assert len(zone["idle_seconds"]) == 1 and positive(zone["idle_seconds"][0])
    assert len(zone["idle_requests"]) == 1 and positive(zone["idle_requests"][0])
    assert list(obstore.list(s3_server.store(prefix))) in ([], [[]])  # the prefix is deleted
