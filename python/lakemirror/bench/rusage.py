"""Wall time and peak RSS of a command, measured from a small launcher process.

A process started straight from the benchmark inherits the benchmark's own peak RSS (Linux
keeps the larger of the forking process's peak and the child's in `ru_maxrss` across exec), so
a contender's figure would be at least the benchmark's. The launcher, a bare Python of about
12 MB, starts the command and reports the command's own figures:
`python -m lakemirror.bench.rusage [--memory-limit-gb GB] RESULT.json COMMAND...`. Its peak
RSS is the larger of the command's own (its waited-for children included) and the summed
resident memory of the launcher's whole tree, polled (bench/memory_limit.py): a server the
command starts and never waits for, such as the embedded engine, counts. With a limit, the
launcher stops the whole tree above it and reports it out of memory.
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
    from lakemirror.bench.memory_limit import become_subreaper, run_limited

    become_subreaper()
    started = time.perf_counter()
    limited = run_limited(subprocess.Popen(command),
                          None if limit_gb is None else int(limit_gb * 1024**3))
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(limited.status)
    peak_mb = max(limited.usage.ru_maxrss / 1024, limited.peak_tree_bytes / 1024**2)
    result.write_text(json.dumps({"seconds": seconds, "peak_rss_mb": peak_mb,
                                  "exit_code": code, "out_of_memory": limited.out_of_memory}))
    sys.exit(0 if code == 0 else 1)


if __name__ == "__main__":
    main()
