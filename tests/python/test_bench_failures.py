"""`lakemirror bench` fails (exit code 1, each failure printed) when a figure fails or a result
is not verified, and works from the wheel, whose dbt package the bench's projects copy."""

import json
import os
import subprocess

import pytest

from lakemirror.bench.failures import bench_failures
from lakemirror.bench.wide import lakemirror_runner

from test_packaging import build_wheel, fresh_venv, free_port

VERIFIED = {"name": "lakemirror", "verified": True, "message": "verified",
            "out_of_memory": False}


def document(*contenders, **figures):
    return {"spec": {}, "change_rows": 1, "contenders": list(contenders), "best_deltars": None,
            "ratios": {}, "memory_limit_gb": None, "memory_limit_mechanism": None, **figures}


def test_a_verified_run_with_measured_figures_has_no_failure():
    assert bench_failures(document(
        VERIFIED, {"name": "spark", "verified": None, "message": "skipped: no Java",
                   "out_of_memory": False},
        {"name": "delta-rs", "verified": False, "message": "out of memory (limit 8 GB)",
         "out_of_memory": True},
        idle_run={"complete": True, "message": "complete", "error_rows": 0},
        wide_tables={"tables": [{"columns": 10, "verified": True, "message": ""}]},
        object_warehouse={"missing": "moto is not installed: not measured"})) == []


def test_each_kind_of_failure_is_named_with_its_message():
    failures = bench_failures(document(
        {**VERIFIED, "verified": False, "message": "dbo.bench1: 3 rows differ"},
        {"name": "lakemirror-warm", "verified": False, "message": "out of memory",
         "out_of_memory": True},
        {"name": "floor", "verified": False, "message": "exit code 1", "out_of_memory": False},
        staging={"error": "RuntimeError: the floor failed"},
        idle_run={"complete": False, "message": "dbo.bench1 missing from --json"},
        wide_tables={"tables": [{"columns": 10, "verified": True, "message": ""},
                                {"columns": 40, "verified": False,
                                 "message": "initial load: exit code 2: no project"}]},
        storage={"rebuild_verified": False, "message": "the rebuild differs"}))
    assert failures == ["lakemirror: dbo.bench1: 3 rows differ", "lakemirror-warm: out of memory",
                        "floor: exit code 1", "staging: RuntimeError: the floor failed",
                        "idle_run: dbo.bench1 missing from --json",
                        "wide_tables: initial load: exit code 2: no project",
                        "storage: the rebuild differs"]


def test_a_result_not_verified_inside_a_figures_tuples_is_a_failure():
    """A figure's `dataclasses.asdict` keeps its tuples: merge growth's sizes are one."""
    from lakemirror.bench.merge_growth import MergeGrowth, SizeRuns, TimedRun

    runs = (TimedRun(2.0, 300.0, {"merge": 1.0, "total": 2.0}),)
    wrong = SizeRuns(1_000, 10, (), (), 1.0, runs, False, "2 rows missing", True)
    assert bench_failures(document(VERIFIED, merge_growth=MergeGrowth(10, (wrong,)).as_dict())
                          ) == ["merge_growth: verified: false"]


def test_a_run_that_fails_before_its_json_reports_its_error_for_each_table(tmp_path):
    """The wide-table figure's first run names no table: its failure is still each table's
    status, with the run's exit code and stderr (it was `missing` with no error)."""
    (tmp_path / "zone").mkdir()
    run = lakemirror_runner(tmp_path / "zone", tmp_path / "warehouse", tmp_path / "no-project")
    statuses = run((), reported=("dbo.wide10", "dbo.wide40"))
    assert set(statuses) == {"dbo.wide10", "dbo.wide40"}
    for status in statuses.values():
        assert status["status"] == "failed"
        assert str(status["error"]).startswith("exit code 2: ")
        assert "no-project" in str(status["error"])


@pytest.mark.slow
def test_the_bench_runs_lakemirror_and_its_figures_from_the_wheel(tmp_path):
    """A user's install has no git clone: the bench's projects come from the wheel's dbt
    package. The cold and warm contenders, the idle run and the wide tables are verified."""
    venv = fresh_venv(tmp_path, build_wheel(tmp_path))
    env = {**os.environ, "LAKEMIRROR_HOME": str(tmp_path / "home"),
           "LAKEMIRROR_ENGINE_PORT": str(free_port())}
    for name in ("LAKEMIRROR_PROJECT_DIR", "DBT_PROFILES_DIR", "PYTHONPATH"):
        env.pop(name, None)
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [str(venv / "bin" / "lakemirror"), "bench", "--smoke", "--contenders",
         "lakemirror,lakemirror-warm,floor", "--no-freshness", "--no-staging", "--no-memory",
         "--no-storage", "--no-object-warehouse", "--json", "--dir", str(tmp_path / "bench")],
        cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["failures"] == []
    assert [contender["verified"] for contender in report["contenders"]] == [True, True, True]
    assert report["idle_run"]["complete"] is True
    assert [table["verified"] for table in report["wide_tables"]["tables"]] == [True, True]
