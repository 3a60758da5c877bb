"""What the bench command hands its runner for a command line (the runner replaced)."""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner

from lakemirror.bench import command
from lakemirror.bench.cli import bench as bench_command


def given_options(monkeypatch: Any, arguments: list[str]) -> dict[str, Any]:
    """The options `lakemirror bench ARGUMENTS` passes to `run_bench_command`."""
    given: dict[str, Any] = {}
    monkeypatch.setattr(command, "run_bench_command", lambda **options: given.update(options)
                        or command.BenchReport("done", ()))
    result = CliRunner().invoke(bench_command, arguments)
    assert result.exit_code == 0, result.output
    return given
