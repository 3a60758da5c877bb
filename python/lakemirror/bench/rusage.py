"""Wall time and peak RSS of a command, measured from a small launcher process.

A process started straight from the benchmark inherits the benchmark's own peak RSS (Linux
keeps the larger of the forking process's peak and the child's in `ru_maxrss` across exec), so
a contender's figure would be at least the benchmark's. The launcher, a bare Python of about
12 MB, starts the command and reports the command's own figures (its waited-for children
included): `python -m lakemirror.bench.rusage RESULT.json COMMAND...`.
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


def measure(command: list[str], result: Path, *, stdout: IO[str] | int | None = None,
            stderr: IO[str] | int | None = None, env: Mapping[str, str] | None = None) -> Usage:
    """Run `command` through the launcher (its output to `stdout`/`stderr`, with `env` or
    this process's environment); `result` is where the launcher writes the figures."""
    launcher = [sys.executable, "-m", "lakemirror.bench.rusage", str(result), *command]
    subprocess.run(launcher, stdout=stdout, stderr=stderr, env=env)
    return Usage(**json.loads(result.read_text()))


def main() -> None:
    result, command = Path(sys.argv[1]), sys.argv[2:]
    started = time.perf_counter()
    process = subprocess.Popen(command)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    result.write_text(json.dumps({"seconds": seconds, "peak_rss_mb": usage.ru_maxrss / 1024,
                                  "exit_code": code}))
    sys.exit(0 if code == 0 else 1)


if __name__ == "__main__":
    main()
