"""Wall time and peak RSS of a command, measured from a small launcher process.

A process started straight from the benchmark inherits the benchmark's own peak RSS (Linux
keeps the larger of the forking process's peak and the child's in `ru_maxrss` across exec), so
a contender's figure would be at least the benchmark's. The launcher, a bare Python of about
12 MB, starts the command and reports the command's own figures (its waited-for children
included): `python -m lakemirror.bench.rusage [--memory-limit-gb GB] RESULT.json COMMAND...`.
With a limit, the launcher stops the command's whole tree above it (bench/memory_limit.py) and
reports it out of memory, with the larger of its own peak and the tree's summed peak.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True)
class Usage:
    seconds: float
    peak_rss_mb: float
    exit_code: int
    out_of_memory: bool = False
    peak_tree_rss_mb: float | None = None  # under a limit: the tree's summed peak, polled


def measure(command: list[str], result: Path, *, stdout: IO[str] | int | None = None,
            stderr: IO[str] | int | None = None, env: Mapping[str, str] | None = None,
            memory_limit_gb: float | None = None) -> Usage:
    """Run `command` through the launcher (its output to `stdout`/`stderr`, with `env` or
    this process's environment, stopped above `memory_limit_gb`); `result` is where the
    launcher writes the figures."""
    limit = [] if memory_limit_gb is None else ["--memory-limit-gb", str(memory_limit_gb)]
    launcher = [sys.executable, "-m", "lakemirror.bench.rusage", *limit, str(result), *command]
    subprocess.run(launcher, stdout=stdout, stderr=stderr, env=env)
    return Usage(**json.loads(result.read_text()))


def main() -> None:
    arguments, limit_gb = sys.argv[1:], None
    if arguments[0] == "--memory-limit-gb":
        limit_gb, arguments = float(arguments[1]), arguments[2:]
    result, command = Path(arguments[0]), arguments[1:]
    if limit_gb is None:
        started = time.perf_counter()
        _, status, usage = os.wait4(subprocess.Popen(command).pid, 0)
        out_of_memory, peak_tree_bytes = False, 0
    else:
        from lakemirror.bench.memory_limit import become_subreaper, run_limited

        become_subreaper()
        started = time.perf_counter()
        limited = run_limited(subprocess.Popen(command), int(limit_gb * 1024**3))
        status, usage = limited.status, limited.usage
        out_of_memory, peak_tree_bytes = limited.out_of_memory, limited.peak_tree_bytes
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    peak_mb = max(usage.ru_maxrss / 1024, peak_tree_bytes / 1024**2 if out_of_memory else 0)
    result.write_text(json.dumps({"seconds": seconds, "peak_rss_mb": peak_mb,
                                  "exit_code": code, "out_of_memory": out_of_memory,
                                  "peak_tree_rss_mb": None if limit_gb is None
                                  else peak_tree_bytes / 1024**2}))
    sys.exit(0 if code == 0 else 1)


if __name__ == "__main__":
    main()
