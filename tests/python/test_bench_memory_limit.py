"""`lakemirror bench --memory-limit GB`: the launcher stops a command whose process tree grows
beyond the limit (grandchildren in sessions of their own included) and reports it out of
memory; a command within the limit runs as without one; the bench goes on after a stop."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psutil
from click.testing import CliRunner

from lakemirror.bench.cli import bench
from lakemirror.bench.rusage import Usage, measure

FIGURES_OFF = ("--no-freshness", "--no-idle", "--no-memory", "--no-wide", "--no-storage",
               "--no-object-warehouse")
GROW = """
import os, pathlib, sys, time
pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))
ballast = [b"x" * (10 * 1024 * 1024) for _ in range(30)]  # 300 MB, written so resident
time.sleep(60)
pathlib.Path(sys.argv[2]).write_text("not stopped")
"""
SPAWN = """
import subprocess, sys
sys.exit(subprocess.run([sys.executable, "-c", sys.argv[1], *sys.argv[2:]],
                        start_new_session=True).returncode)
"""

DETACH = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]], start_new_session=True)
time.sleep(2)  # the launcher searches its tree every 0.5 s
"""


def run(tmp_path: Path, command: list[str], limit_gb: float | None) -> tuple[Usage, str]:
    with (tmp_path / "out.log").open("w") as out:
        usage = measure(command, tmp_path / "usage.json", stdout=out, memory_limit_gb=limit_gb)
    return usage, (tmp_path / "out.log").read_text()


def test_a_command_growing_beyond_the_limit_is_stopped_and_reported(tmp_path: Path) -> None:
    grown, finished = tmp_path / "pid", tmp_path / "finished"
    usage, _ = run(tmp_path, [sys.executable, "-c", GROW, str(grown), str(finished)], 0.1)
    assert usage.out_of_memory and usage.exit_code != 0
    assert usage.peak_rss_mb > 0.1 * 1024
    assert not finished.exists() and not psutil.pid_exists(int(grown.read_text()))


def test_a_grandchild_in_its_own_session_growing_beyond_it_is_stopped(tmp_path: Path) -> None:
    grown, finished = tmp_path / "pid", tmp_path / "finished"
    command = [sys.executable, "-c", SPAWN, GROW, str(grown), str(finished)]
    usage, _ = run(tmp_path, command, 0.1)
    assert usage.out_of_memory and usage.exit_code != 0
    assert not finished.exists() and not psutil.pid_exists(int(grown.read_text()))


def test_a_server_the_command_starts_and_never_waits_for_counts_in_its_peak(
        tmp_path: Path) -> None:
    """As the embedded engine does: without a limit too, the peak is the whole tree's."""
    grown, finished = tmp_path / "pid", tmp_path / "finished"
    usage, _ = run(tmp_path, [sys.executable, "-c", DETACH, GROW, str(grown), str(finished)],
                   None)
    try:
        assert usage.exit_code == 0 and not usage.out_of_memory
        assert usage.peak_rss_mb > 300
    finally:
        psutil.Process(int(grown.read_text())).kill()


def test_a_command_within_the_limit_runs_as_without_one(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "ballast = b'x' * 50 * 1024 * 1024; print(len(ballast))"]
    free, free_output = run(tmp_path, command, None)
    limited, limited_output = run(tmp_path, command, 1.0)
    assert not limited.out_of_memory and not free.out_of_memory
    assert limited.exit_code == free.exit_code == 0
    assert limited_output == free_output == f"{50 * 1024 * 1024}\n"
    assert abs(limited.peak_rss_mb - free.peak_rss_mb) < 5


def test_the_bench_reports_a_contender_out_of_memory_and_goes_on(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench, [
        "--smoke", "--contenders", "floor,delta-rs-batched", "--memory-limit", "0.02",
        *FIGURES_OFF, "--json", "--dir", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["memory_limit_gb"] == 0.02 and report["memory_limit_mechanism"] == "rss-poll"
    for contender in report["contenders"]:
        assert contender["out_of_memory"] and contender["memory_limit_gb"] == 0.02
        assert contender["verified"] is False and contender["seconds"] > 0
        assert contender["message"] == "out of memory (limit 0.02 GB)"
    assert [contender["name"] for contender in report["contenders"]] == [
        "floor", "delta-rs-batched"]


def test_a_contender_within_the_limit_is_verified_as_without_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench, [
        "--smoke", "--contenders", "floor", "--memory-limit", "4", *FIGURES_OFF,
        "--dir", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "memory limit: 4 GB per contender (rss-poll" in result.output
    floor = next(line for line in result.output.splitlines() if line.startswith("floor "))
    assert floor.endswith("  verified")
