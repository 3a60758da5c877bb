"""The bench's phase clock: what each dbt invocation's time counts as."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lakemirror.bench import phases
from lakemirror.bench.phases import PhaseClock


def dbt_event(name: str) -> SimpleNamespace:
    return SimpleNamespace(info=SimpleNamespace(name=name, thread="main"))


def test_the_engines_start_within_dbts_parse_counts_as_the_engine_session(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine starts after dbt's invocation does (the invoker starts it), before dbt's
    parse ends: those seconds are the engine's, and dbt's parse is the rest."""
    now = [100.0]
    monkeypatch.setattr(phases.time, "perf_counter", lambda: now[0])
    clock = PhaseClock()
    clock.dbt_started()  # a run-operation: no parse line, its engine start counted once
    clock.add("engine_start", 0.25)
    clock.add("dbt", 0.5)
    clock.dbt_started()
    now[0] += 0.75
    clock.add("engine_start", 0.75)
    now[0] += 2.0
    clock.dbt_event(dbt_event("ConcurrencyLine"))
    clock.add("dbt", 3.0)  # the invocation, nodes included
    report = clock.report(imports=0.5, total=4.0)
    assert report["dbt_parse"] == pytest.approx(2.0)
    assert report["engine_session"] == pytest.approx(1.0)
    assert report["dbt_other"] == pytest.approx(0.5)  # 0.5 - 0.25, and 3 - 2 - 0.75
