"""The bench's phase clock: what each dbt invocation's time counts as, and phases as wall time
when dbt's threads run statements side by side (they add up to the run's time, not to the
statements' summed times)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lakemirror.bench.phases import PhaseClock


def dbt_event(name: str) -> SimpleNamespace:
    return SimpleNamespace(info=SimpleNamespace(name=name, thread="main"))


def test_the_engines_start_within_dbts_parse_counts_as_the_engine_session() -> None:
    """The engine starts after dbt's invocation does (the invoker starts it), before dbt's
    parse ends: those seconds are the engine's, and dbt's parse is the rest."""
    now = [100.0]
    clock = PhaseClock(now=lambda: now[0])
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

# (at, thread, event, SQL or elapsed seconds), the clock reading `at` when dbt sends the event.
EVENTS = [
    (1.0, "main", "SQLQuery", "select 1"),
    (1.0, "main", "SQLQueryStatus", 0.5),  # the first statement: engine_session
    (4.0, "Thread-1", "SQLQuery", "merge into dbo.a using ..."),
    (4.0, "Thread-2", "SQLQuery", "insert into _lakemirror_control.mirror_batches ..."),
    (9.0, "Thread-2", "SQLQueryStatus", 5.0),  # bookkeeping 4..9
    (9.0, "Thread-2", "SQLQuery", "merge into dbo.b using ..."),
    (10.0, "Thread-1", "SQLQueryStatus", 6.0),  # merge 4..10
    (12.0, "Thread-2", "SQLQueryStatus", 3.0),  # merge 9..12
]


def test_statements_side_by_side_count_once_in_wall_time() -> None:
    reading = [0.0]
    clock = PhaseClock(now=lambda: reading[0])
    clock.dbt_started()
    for at, thread, name, value in EVENTS:
        reading[0] = at
        data = SimpleNamespace(sql=value) if name == "SQLQuery" else SimpleNamespace(
            elapsed=value)
        clock.dbt_event(SimpleNamespace(info=SimpleNamespace(name=name, thread=thread),
                                        data=data))
    clock.add("dbt", 20.0)
    phases = clock.report(imports=1.0, total=20.0)
    assert phases["engine_session"] == pytest.approx(0.5)
    assert phases["merge"] == pytest.approx(8.0)  # 4..12 with a MERGE running, not 6 + 3
    assert phases["bookkeeping"] == pytest.approx(0.0)  # its 5 seconds ran beside a MERGE
    assert phases["dbt_other"] == pytest.approx(11.5)
