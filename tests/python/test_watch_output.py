"""`run --watch` prints a run's table only when it changed (a table's status, last file, rows
or error), each warning once until a run no longer gives it, and with --json one JSON document
per line for each run that changed."""

from __future__ import annotations

import itertools
import json
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

import lakemirror.watch
from lakemirror.cli.main import _watch
from lakemirror.status import NodeStatus, TableStatus

# Each run: (last file of dbo.t, the warning it gives, or None).
RUNS = [(1, "ignored 1 hidden entries"), (1, "ignored 1 hidden entries"),
        (2, "ignored 1 hidden entries"), (2, None), (2, "ignored 1 hidden entries"), (2, None)]


@dataclass(frozen=True)
class Settings:
    landing_zone: str = "zone"
    zone: str = "zone"
    warm: bool = False
    env: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(settle_seconds=0.0))


@dataclass
class ScriptedService:
    """Runs as RUNS says, then is interrupted as by a second Ctrl-C."""

    progress: Callable[[str], None]
    settings: Settings = field(default_factory=Settings)
    run_warnings: list[str] = field(default_factory=list)
    run_models: list[NodeStatus] = field(default_factory=list)
    runs: int = 0

    def run(self, tables=()):
        if self.runs == len(RUNS):
            raise KeyboardInterrupt
        sequence, warning = RUNS[self.runs]
        self.runs += 1
        self.run_warnings = [warning] if warning else []
        self.progress("ingesting dbo.t")
        if warning:
            self.progress(f"warning: {warning}")
        return [TableStatus("dbo", "t", "replicating", sequence, 2 if sequence == 2 else 3, None)]


def watch_output(monkeypatch, capsys, as_json):
    counter = itertools.count()
    monkeypatch.setattr(lakemirror.watch, "zone_signature", lambda *a, **k: next(counter))
    lines: list[str] = []
    service = ScriptedService(progress=lines.append)
    handler = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as stopped:
            _watch(service, 0.0, (), as_json)
    finally:
        signal.signal(signal.SIGINT, handler)
    assert stopped.value.code == 0 and service.runs == len(RUNS)
    return capsys.readouterr().out, lines


def test_the_table_is_printed_when_it_changed_and_a_warning_once_until_it_goes(monkeypatch,
                                                                                capsys):
    out, progress = watch_output(monkeypatch, capsys, as_json=False)
    assert out.count("dbo.t") == 2, out  # runs 1 and 3
    assert progress.count("warning: ignored 1 hidden entries") == 2, progress  # runs 1 and 5
    assert progress.count("ingesting dbo.t") == len(RUNS)


def test_json_prints_one_document_per_line_for_each_run_that_changed(monkeypatch, capsys):
    out, _ = watch_output(monkeypatch, capsys, as_json=True)
    documents = [json.loads(line) for line in out.splitlines()]
    assert [(d["tables"][0]["last_sequence"], d["warnings"]) for d in documents] == [
        (1, ["ignored 1 hidden entries"]), (2, ["ignored 1 hidden entries"]), (2, []),
        (2, ["ignored 1 hidden entries"]), (2, [])]


def test_a_failed_model_of_the_project_is_printed_with_the_run_it_failed_in(monkeypatch,
                                                                               capsys):
    class FailingModel(ScriptedService):
        def run(self, tables=()):
            statuses = super().run(tables)
            self.run_models = ([NodeStatus("report", "model", "error", "division by zero",
                                           "model.p.report")] if self.runs == 2 else [])
            return statuses

    counter = itertools.count()
    monkeypatch.setattr(lakemirror.watch, "zone_signature", lambda *a, **k: next(counter))
    service = FailingModel(progress=lambda message: None)
    handler = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit):
            _watch(service, 0.0, (), True)
    finally:
        signal.signal(signal.SIGINT, handler)
    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [[node["name"] for node in d["models"]] for d in documents] == [
        [], ["report"], [], [], [], []]  # run 2's failure, and the runs after it


def test_a_quiet_zone_is_still_looked_at_so_status_never_calls_the_watcher_stale(monkeypatch):
    monkeypatch.setattr(lakemirror.watch, "zone_signature", lambda *a, **k: "unchanged")
    service = ScriptedService(progress=lambda message: None)
    stop = threading.Event()
    runs: list[object] = []

    def on_run(statuses):
        runs.append(statuses)
        if len(runs) == 3:
            stop.set()

    lakemirror.watch.watch(service, 0.01, stop, on_run, idle_run_seconds=0.05)
    assert service.runs == 3  # the zone never changed: the first run, then two idle runs
