"""Idle run: `lakemirror run --json` in a cold process when nothing is new for any table,
after a contender brought the mirror up to date; its `--json` must still be complete."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from lakemirror.status import TableStatus


@dataclass(frozen=True)
class IdleRun:
    """Wall seconds of each idle run, and whether the last one's `--json` was complete."""

    contender: str
    seconds: tuple[float, ...]
    complete: bool
    message: str

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else 0.0

    def text(self) -> str:
        runs = ", ".join(f"{seconds:.2f}" for seconds in self.seconds)
        return (f"idle run (`lakemirror run --json`, cold process, nothing new, after "
                f"{self.contender}): median {self.median:.2f} s ({runs}); {self.message}")


def lakemirror_command() -> list[str]:
    """The `lakemirror` console script of this environment."""
    script = Path(sys.executable).parent / "lakemirror"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from lakemirror.cli.main import cli; cli()"]


def measure_idle_run(contender: str, workdir: Path, expected: Mapping[str, tuple[int, int]],
                     samples: int, progress: Callable[[str], None]) -> IdleRun:
    """Run `lakemirror run --json` `samples` times on the zone, warehouse and project the
    contender in `workdir` left; `expected` gives each table's (last file, rows)."""
    command = [*lakemirror_command(), "run", "--json",
               "--landing-zone", str(workdir / "LandingZone"),
               "--warehouse", str(workdir / "out" / "warehouse"),
               "--project-dir", str(workdir / "out" / "project")]
    seconds: list[float] = []
    message = "not run"
    for sample in range(samples):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        seconds.append(time.perf_counter() - started)
        progress(f"idle run {sample + 1}: {seconds[-1]:.2f} s")
        message = json_problem(done.returncode, done.stdout, done.stderr, expected)
        if message:
            return IdleRun(contender, tuple(seconds), False, message)
    return IdleRun(contender, tuple(seconds), True,
                   f"--json complete: {len(expected)} table(s) replicating")


def json_problem(exit_code: int, stdout: str, stderr: str,
                 expected: Mapping[str, tuple[int, int]]) -> str:
    """What is wrong with an idle run's output ('' when nothing): its exit code, every
    TableStatus field of every table, each table replicating at its last file and row count."""
    if exit_code != 0:
        return f"exit code {exit_code}: {stderr.strip()[-500:]}"
    try:
        tables = {f"{entry['schema']}.{entry['table']}": entry
                  for entry in json.loads(stdout)["tables"]}
    except (ValueError, KeyError, TypeError) as error:
        return f"--json is not a status report ({type(error).__name__}: {error})"
    if set(tables) != set(expected):
        return f"--json lists {sorted(tables)}, expected {sorted(expected)}"
    names = {field.name for field in fields(TableStatus)}
    for name, entry in tables.items():
        wanted = {"status": "replicating", "last_sequence": expected[name][0],
                  "rows": expected[name][1]}
        if set(entry) != names:
            return f"{name}: --json fields {sorted(entry)}, expected {sorted(names)}"
        got = {key: entry[key] for key in wanted}
        if got != wanted:
            return f"{name}: --json says {got}, expected {wanted}"
    return ""
